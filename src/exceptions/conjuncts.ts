// What each conjunct of a recipe's passes checks, read from the parsed predicate and the columns'
// types (not from column names): a conjunct reading a number on each side with a decimal among
// them compares amounts; one reading a date or timestamp on each side, and no amounts, bounds a
// date window; anything else (keys, references, text) is some other check. An unmatched record's
// reason follows from the kind of the first conjunct its closest candidate failed.

import type { Expr, Side } from '../language/predicate.js'
import { parsePredicate } from '../language/predicate.js'
import type { ColumnInfo } from '../engine/data/types.js'
import { planPass, referencedColumns } from '../engine/plan/plan.js'
import { isProbabilistic, type Recipe } from '../recipes/schema.js'

export type ConjunctKind = 'amount' | 'date' | 'other'

export type ColumnTypes = (side: Side, column: string) => ColumnInfo['type'] | undefined

const numeric = (t?: string) => t === 'decimal' || t === 'integer' || t === 'float'
const temporal = (t?: string) => t === 'date' || t === 'timestamp'

/** The kind of check a conjunct is, by the types of the columns it reads on each side. */
export function conjunctKind(expr: Expr, types: ColumnTypes): ConjunctKind {
  const cols = referencedColumns([expr])
  const typed = (side: Side) => [...cols[side]].map((c) => types(side, c))
  const l = typed('l')
  const r = typed('r')
  const amounts = l.some(numeric) && r.some(numeric) && [...l, ...r].some((t) => t === 'decimal')
  const dates = l.some(temporal) && r.some(temporal)
  if (amounts && !dates) return 'amount'
  if (dates && !amounts) return 'date'
  return 'other'
}

export interface PassConjuncts {
  /** The pass's conjuncts as the planner split them (the evidence's conjunct numbers index these). */
  exprs: Expr[]
  kinds: ConjunctKind[]
}

/**
 * Per pass of the recipe (by index), its conjuncts and their kinds; null for a probabilistic pass
 * (its evidence names a weight, not a conjunct) or one that does not plan.
 */
export function recipeConjuncts(recipe: Recipe, types: ColumnTypes): (PassConjuncts | null)[] {
  return recipe.passes.map((pass) => {
    if (isProbabilistic(pass) || pass.when === undefined) return null
    try {
      const plan = planPass(parsePredicate(pass.when), pass.when, types)
      const exprs = plan.conjuncts.map((c) => c.expr)
      return { exprs, kinds: exprs.map((e) => conjunctKind(e, types)) }
    } catch {
      return null
    }
  })
}

/** Column types of two schemas, for the functions above. */
export function schemaTypes(schemas: { l: ColumnInfo[]; r: ColumnInfo[] }): ColumnTypes {
  return (side, column) => schemas[side].find((c) => c.name === column)?.type
}
