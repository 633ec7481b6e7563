// `explain`: how each pass of a (valid) recipe will run — its phase in the pass DAG, the hash
// keys or band it joins on, and the residual conjuncts checked on each candidate pair.

import { scoredPairs } from '../engine/match/pass.js'
import { orderPasses } from '../engine/plan/passes.js'
import { comparedColumns } from '../engine/reconcile.js'
import { type PassPlan, planPass } from '../engine/plan/plan.js'
import { groupSum, groupTolerance, printGroupSum } from '../language/aggregate.js'
import { decimalText } from '../language/decimal.js'
import { parsePredicate } from '../language/predicate.js'
import { printExpr } from '../language/print.js'
import type { Pattern, Recipe, RecipeAggregate } from './schema.js'
import type { Schemas } from '../language/types.js'

export interface PassExplain {
  name: string
  pattern: Pattern
  /** Depth in the pass DAG: passes of one phase only depend on earlier phases. */
  phase: number
  after: string[]
  join: 'hash' | 'band'
  hash_keys: { left: string; right: string }[]
  band: {
    column: string
    lower: string | null
    upper: string | null
    lower_inclusive: boolean
    upper_inclusive: boolean
    from: string[]
  } | null
  residuals: string[]
  aggregate: {
    sum: string
    equals: string
    /** The tolerance as one number when symmetric, else "below …, above …". */
    tolerance: string
    /** How far the sum may fall below `equals`, and rise above it. */
    below: string
    above: string
    max_group: number
  } | null
  scoring: { amount: string | null; date: string | null; similarity: string | null }
}

export interface ExplainReply {
  passes: PassExplain[]
  text: string
}

export function explainRecipe(recipe: Recipe, schemas: Schemas): ExplainReply {
  const order = orderPasses(recipe.passes)
  const phaseOf = new Map<string, number>()
  order.phases.forEach((names, n) => names.forEach((name) => phaseOf.set(name, n + 1)))
  const shapes = { l: { columns: schemas.l, data: [], length: 0 }, r: { columns: schemas.r, data: [], length: 0 } }
  const compared = comparedColumns(recipe, shapes)
  const passes = recipe.passes.map((pass): PassExplain => {
    const plan = planPass(
      parsePredicate(pass.when),
      pass.when,
      (side, c) => schemas[side].find((x) => x.name === c)?.type,
    )
    // what 1:1 assignment ranks candidates by: the pass's own pairs, else the recipe's
    const scored = scoredPairs(plan, compared)
    const similar = scored.similarity
    return {
      name: pass.name,
      pattern: pass.pattern,
      phase: phaseOf.get(pass.name)!,
      after: order.dependencies.get(pass.name)!,
      join: plan.keys.length ? 'hash' : 'band',
      hash_keys: plan.keys.map((k) => ({ left: printExpr(k.left), right: printExpr(k.right) })),
      band: bandOf(plan),
      residuals: plan.residuals.map((c) => c.text),
      aggregate: pass.aggregate ? aggregateOf(pass.aggregate) : null,
      scoring: {
        amount: scored.amount ? `l.${scored.amount.l} - r.${scored.amount.r}` : null,
        date: scored.date ? `r.${scored.date.r} - l.${scored.date.l} (days)` : null,
        similarity: similar
          ? similar.left && similar.right
            ? `similarity(${printExpr(similar.left)}, ${printExpr(similar.right)})`
            : `similarity(l.${similar.l}, r.${similar.r})`
          : null,
      },
    }
  })
  return { passes, text: passes.map(passText).join('\n\n') }
}

function aggregateOf(agg: RecipeAggregate): NonNullable<PassExplain['aggregate']> {
  const t = groupTolerance(agg.tolerance)
  const below = decimalText(t.below)
  const above = decimalText(t.above)
  let sum = agg.sum
  try {
    sum = printGroupSum(groupSum(agg.sum))
  } catch {
    // explain runs on validated recipes; a broken sum is shown as written
  }
  return {
    sum,
    equals: agg.equals,
    tolerance: below === above ? below : `below ${below}, above ${above}`,
    below,
    above,
    max_group: agg.max_group ?? 5,
  }
}

function bandOf(plan: PassPlan): PassExplain['band'] {
  if (plan.keys.length || !plan.band) return null
  const b = plan.band
  return {
    column: `${b.side}.${b.column}`,
    lower: b.lo ? printExpr(b.lo) : null,
    upper: b.hi ? printExpr(b.hi) : null,
    lower_inclusive: !b.loStrict,
    upper_inclusive: !b.hiStrict,
    from: b.texts,
  }
}

function passText(p: PassExplain): string {
  const lines = [
    `pass ${p.name} (${p.pattern}), phase ${p.phase}${p.after.length ? `, after ${p.after.join(', ')}` : ''}`,
  ]
  if (p.join === 'hash') lines.push(`  hash join on ${p.hash_keys.map((k) => `${k.left} = ${k.right}`).join(', ')}`)
  else if (p.band) {
    const lo = p.band.lower === null ? '-∞' : `${p.band.lower_inclusive ? '[' : '('}${p.band.lower}`
    const hi = p.band.upper === null ? '+∞' : `${p.band.upper}${p.band.upper_inclusive ? ']' : ')'}`
    lines.push(`  band join: ${p.band.column} in ${lo}, ${hi}  (sorted, then searched per record)`)
  }
  lines.push(`  residual: ${p.residuals.length ? p.residuals.join(' AND ') : 'none'}`)
  const a = p.aggregate
  if (a) {
    const within = a.below === a.above ? `± ${a.above}` : `up to ${a.above} above and ${a.below} below`
    lines.push(
      `  groups: ${a.sum} = ${a.equals} ${within}, at most ${a.max_group} records (an exact fit first, then the smallest group, then the closest)`,
    )
  }
  const scoring = [p.scoring.amount, p.scoring.date, p.scoring.similarity].filter(Boolean)
  if (scoring.length) lines.push(`  score from: ${scoring.join('; ')}`)
  return lines.join('\n')
}
