// Whether a manual match's amounts agree "within the recipe's tolerance", decided by the recipe's
// own amount checks rather than a number read out of them: the sums of the chosen left and right
// records (the left one less the adjustment, when there is one) are put in place of the compared
// amount columns, and a pass vouches for the match when every amount conjunct it has holds on
// them — compiled and evaluated by the engine, so `ABS(l.amount - r.paid) <= 0.01`, `<= l.amount
// * 0.02` and `r.paid BETWEEN l.amount * 0.99 AND l.amount * 1.01` all mean exactly what they
// mean in a run. An aggregate pass vouches when |left − right| is within its `tolerance` (its
// equation's fees and rates are the adjustment's to book). A recipe with no amount check at all
// asks for equal sums. An amount conjunct that reads more than the two amounts (a lookup, a
// currency) cannot be evaluated on sums, and its pass does not vouch.

import { comparedColumns } from '../engine/reconcile.js'
import type { Table } from '../engine/data/table.js'
import type { ColumnInfo } from '../engine/data/types.js'
import { ExprCompiler } from '../engine/plan/compile.js'
import { addDecimal, decimalText, type ExactDecimal, exactDecimal, rescale, ZERO } from '../language/decimal.js'
import { isProbabilistic, type Recipe } from '../recipes/schema.js'
import { recipeConjuncts, schemaTypes } from './conjuncts.js'
import { parsePredicate } from '../language/predicate.js'
import { planPass } from '../engine/plan/plan.js'

export interface Agreement {
  agrees: boolean
  /** The pass whose amount checks accepted the sums (null: equal sums, no amount check, or none accepted). */
  pass: string | null
  checks: string[]
}

const empty = (columns: ColumnInfo[]): Table => ({ columns, data: [], length: 0 })

export function amountAgreement(
  recipe: Recipe,
  schemas: { l: ColumnInfo[]; r: ColumnInfo[] },
  left: ExactDecimal,
  right: ExactDecimal,
): Agreement {
  const compared = comparedColumns(recipe, { l: empty(schemas.l), r: empty(schemas.r) })
  const amount = compared.amount
  const diff = addDecimal(left, right, -1n)
  const conjuncts = recipeConjuncts(recipe, schemaTypes(schemas))
  let anyCheck = false
  for (const [p, pass] of recipe.passes.entries()) {
    if (isProbabilistic(pass)) continue
    if (pass.aggregate?.tolerance !== undefined) {
      anyCheck = true
      // a one-sided tolerance ({ below, above }) bounds |left − right| by its larger side here
      const t = pass.aggregate.tolerance
      const bounds = (typeof t === 'object' ? [t.below ?? 0, t.above ?? 0] : [t]).map((x) => exactDecimal(String(x)))
      const tol = bounds.reduce<ExactDecimal>((a, b) => (b && addDecimal(b, a, -1n).units > 0n ? b : a), ZERO)
      const scale = Math.max(diff.scale, tol.scale)
      const d = rescale(diff, scale)
      if ((d < 0n ? -d : d) <= rescale(tol, scale))
        return {
          agrees: true,
          pass: pass.name,
          checks: [`|left − right| <= ${decimalText(tol)} (aggregate tolerance)`],
        }
    }
    const conj = conjuncts[p]
    if (!conj || !amount || pass.when === undefined) continue
    const indexes = conj.kinds.flatMap((k, c) => (k === 'amount' ? [c] : []))
    if (!indexes.length) continue
    anyCheck = true
    const holds = evaluate(pass.when, indexes, amount, left, right)
    if (holds) return { agrees: true, pass: pass.name, checks: holds }
  }
  if (!anyCheck) return { agrees: diff.units === 0n, pass: null, checks: diff.units === 0n ? ['left = right'] : [] }
  return { agrees: false, pass: null, checks: [] }
}

/** The amount conjuncts' texts when each holds on the sums, else null. */
function evaluate(
  when: string,
  indexes: number[],
  amount: { l: string; r: string },
  left: ExactDecimal,
  right: ExactDecimal,
): string[] | null {
  const column = (name: string, d: ExactDecimal): { info: ColumnInfo; table: Table } => ({
    info: { name, type: 'decimal', nullable: false, scale: d.scale },
    table: {
      columns: [{ name, type: 'decimal', nullable: false, scale: d.scale }],
      data: [{ type: 'decimal', length: 1, valid: null, values: Float64Array.of(Number(d.units)), scale: d.scale }],
      length: 1,
    },
  })
  const l = column(amount.l, left)
  const r = column(amount.r, right)
  // beyond 2^53 units the engine's columns are not exact: no vouching then
  if (Number.isSafeInteger(Number(left.units)) === false || Number.isSafeInteger(Number(right.units)) === false)
    return null
  try {
    const plan = planPass(parsePredicate(when), when, (side, c) =>
      (side === 'l' ? c === amount.l : c === amount.r) ? 'decimal' : undefined,
    )
    const compiler = new ExprCompiler({ l: [l.info], r: [r.info] }, { l: l.table, r: r.table })
    const texts: string[] = []
    for (const c of indexes) {
      const conjunct = plan.conjuncts[c]
      const test = compiler.build<(i: number, j: number) => unknown>('i, j', compiler.compile(conjunct.expr).code)
      if (test(0, 0) !== true) return null
      texts.push(conjunct.text)
    }
    return texts
  } catch {
    // it reads something other than the two amounts
    return null
  }
}
