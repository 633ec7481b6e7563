// Recipe validation, without running it: structure, the pass graph, and every pass's predicate
// against the two sources' schemas. Returns every issue found (not only the first), each with
// the pass, a code, a message and, for predicate problems, the position in `when`.

import { Value } from 'typebox/value'
import { resolveConditions } from '../engine/load/filter.js'
import { orderPasses, PassGraphError } from '../engine/plan/passes.js'
import { planPass } from '../engine/plan/plan.js'
import type { ColumnInfo } from '../engine/data/types.js'
import { ConcordError } from '../errors.js'
import { paramIssues } from './params.js'
import { type Position, PredicateError, parsePredicate } from '../language/predicate.js'
import { type Recipe, recipeSchemas } from './schema.js'
import { type Schemas, TypeChecker } from '../language/types.js'

export interface ValidationIssue {
  pass: string | null
  code: string
  message: string
  position?: Position
  suggestion?: string
}

export interface ValidationReport {
  valid: boolean
  issues: ValidationIssue[]
  suggestions: string[]
}

const context = Object.fromEntries(recipeSchemas.map((s) => [(s as unknown as { $id: string }).$id, s]))

/** Structural check (the TypeBox schema); the FilterCondition schema is resolved by the caller's context. */
export function structuralIssues(recipe: unknown, extraContext: Record<string, unknown> = {}): ValidationIssue[] {
  const ctx = { ...extraContext, ...context } as never
  if (Value.Check(ctx, context.Recipe as never, recipe)) return []
  return [...Value.Errors(ctx, context.Recipe as never, recipe)].slice(0, 10).map((e) => ({
    pass: null,
    code: 'invalid_recipe',
    message: `${e.instancePath || 'recipe'} ${e.message}`,
  }))
}

export function validateRecipe(recipe: Recipe, schemas: Schemas): ValidationReport {
  const issues: ValidationIssue[] = []
  const suggestions = new Set<string>()
  const add = (i: ValidationIssue) => {
    issues.push(i)
    if (i.suggestion) suggestions.add(i.suggestion)
  }

  for (const [side, name] of [
    ['l', 'left'],
    ['r', 'right'],
  ] as const) {
    const cols = schemas[side]
    const def = recipe[name]
    for (const k of def.key) {
      if (!cols.some((c) => c.name === k))
        add({
          pass: null,
          code: 'unknown_column',
          message: `${name} key column "${k}" is not in source "${def.source}"`,
        })
    }
    try {
      resolveConditions(cols, def.scope ?? [])
    } catch (err) {
      if (err instanceof ConcordError)
        add({ pass: null, code: err.code, message: `${name} scope: ${err.message}`, suggestion: err.suggestion })
      else throw err
    }
  }

  for (const i of paramIssues(recipe, schemas)) add({ pass: null, ...i })

  try {
    orderPasses(recipe.passes)
  } catch (err) {
    if (err instanceof PassGraphError) add({ pass: err.pass, code: err.code, message: err.message })
    else throw err
  }

  for (const pass of recipe.passes) {
    const checker = new TypeChecker(schemas)
    let expr: ReturnType<typeof parsePredicate>
    try {
      expr = parsePredicate(pass.when)
    } catch (err) {
      if (!(err instanceof PredicateError)) throw err
      add({ pass: pass.name, code: err.code, message: err.message, position: err.pos, suggestion: err.suggestion })
      continue
    }
    const type = checker.check(expr)
    for (const i of checker.issues)
      add({ pass: pass.name, code: i.code, message: i.message, position: i.pos, suggestion: i.suggestion })
    if (checker.issues.length) continue
    if (type.kind !== 'boolean') {
      add({
        pass: pass.name,
        code: 'type_mismatch',
        message: `"when" must be a condition, not a ${type.kind} value`,
        position: expr.pos,
      })
      continue
    }
    const plan = planPass(expr, pass.when, (side, c) => schemas[side].find((x) => x.name === c)?.type)
    if (plan.keys.length === 0 && plan.bands.length === 0) {
      add({
        pass: pass.name,
        code: 'no_usable_join',
        message: `pass "${pass.name}" has no equality and no range between an l and an r column, so every pair would be compared`,
        suggestion:
          "add an equality such as l.reference = r.ref, or a range such as r.date BETWEEN l.date - INTERVAL '3 days' AND l.date",
      })
    }
    if (pass.pattern !== '1:1') aggregateIssues(pass, schemas).forEach(add)
    else if (pass.aggregate)
      add({
        pass: pass.name,
        code: 'unexpected_aggregate',
        message: 'a 1:1 pass takes no aggregate',
        suggestion: 'use pattern 1:N, N:1 or N:M for group sums',
      })
    if (pass.pattern === 'N:M' && plan.keys.length === 0) {
      add({
        pass: pass.name,
        code: 'no_usable_join',
        message: 'an N:M pass groups records by equality keys; it has none',
        suggestion: 'group by keys such as l.customer = r.customer',
      })
    }
  }
  return { valid: issues.length === 0, issues, suggestions: [...suggestions] }
}

function aggregateIssues(pass: Recipe['passes'][number], schemas: Schemas): ValidationIssue[] {
  const out: ValidationIssue[] = []
  const agg = pass.aggregate
  if (!agg) {
    return [
      {
        pass: pass.name,
        code: 'missing_aggregate',
        message: `a ${pass.pattern} pass needs an aggregate`,
        suggestion: '"aggregate": { "sum": "r.amount", "equals": "l.amount", "tolerance": 0.01, "max_group": 5 }',
      },
    ]
  }
  const column = (text: string, what: string): ColumnInfo | undefined => {
    const m = /^\s*([lr])\.([A-Za-z_][A-Za-z0-9_]*)\s*$/.exec(text)
    if (!m) {
      out.push({
        pass: pass.name,
        code: 'invalid_aggregate',
        message: `aggregate.${what} must be a column such as r.amount`,
      })
      return undefined
    }
    const col = schemas[m[1] as 'l' | 'r'].find((c) => c.name === m[2])
    if (!col)
      out.push({ pass: pass.name, code: 'unknown_column', message: `aggregate.${what}: no column ${text.trim()}` })
    else if (col.type !== 'decimal' && col.type !== 'integer')
      out.push({
        pass: pass.name,
        code: 'type_mismatch',
        message: `aggregate.${what} must be a decimal or integer column, ${text.trim()} is ${col.type}`,
      })
    return col
  }
  column(agg.sum, 'sum')
  column(agg.equals, 'equals')
  const sumSide = agg.sum.trim()[0]
  const eqSide = agg.equals.trim()[0]
  if (sumSide === eqSide)
    out.push({
      pass: pass.name,
      code: 'invalid_aggregate',
      message: 'aggregate.sum and aggregate.equals must be on opposite sides',
    })
  if (pass.pattern === '1:N' && sumSide !== 'r')
    out.push({
      pass: pass.name,
      code: 'invalid_aggregate',
      message: 'a 1:N pass sums right records: aggregate.sum is an r. column',
    })
  if (pass.pattern === 'N:1' && sumSide !== 'l')
    out.push({
      pass: pass.name,
      code: 'invalid_aggregate',
      message: 'an N:1 pass sums left records: aggregate.sum is an l. column',
    })
  return out
}
