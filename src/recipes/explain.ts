// `explain`: how each pass of a (valid) recipe will run — its phase in the pass DAG, the hash
// keys or band options it joins on (several bands: the run picks one on the data), and the
// conjuncts checked on each pair, in the order they run (cheapest first).

import { scoredPairs } from '../engine/match/pass.js'
import { orderPasses } from '../engine/plan/passes.js'
import { comparedColumns } from '../engine/reconcile.js'
import { type Band, firstClosedBand, type PassPlan, planPass } from '../engine/plan/plan.js'
import { parsePredicate } from '../language/predicate.js'
import { printExpr } from '../language/print.js'
import type { Pattern, Recipe } from './schema.js'
import type { Schemas } from '../language/types.js'

export interface PassExplain {
  name: string
  pattern: Pattern
  /** Depth in the pass DAG: passes of one phase only depend on earlier phases. */
  phase: number
  after: string[]
  join: 'hash' | 'band'
  hash_keys: { left: string; right: string }[]
  /** The first closed band option (the one used when there is one option). */
  band: BandExplain | null
  /** Every band option; with several, the run joins on the one with the fewest estimated pairs. */
  bands: BandExplain[]
  residuals: string[]
  /** Conjuncts checked on each pair of the join, in the order they run: cheap first. */
  checks: string[]
  aggregate: { sum: string; equals: string; tolerance: string; max_group: number } | null
  scoring: { amount: string | null; date: string | null; similarity: string | null }
}

export interface BandExplain {
  column: string
  lower: string | null
  upper: string | null
  lower_inclusive: boolean
  upper_inclusive: boolean
  from: string[]
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
      band: plan.keys.length ? null : bandOf(firstClosedBand(plan)),
      bands: plan.keys.length ? [] : plan.bands.map((b) => bandOf(b)!),
      residuals: plan.residuals.map((c) => c.text),
      checks: checkOrder(plan),
      aggregate: pass.aggregate
        ? {
            sum: pass.aggregate.sum,
            equals: pass.aggregate.equals,
            tolerance: String(pass.aggregate.tolerance ?? 0),
            max_group: pass.aggregate.max_group ?? 5,
          }
        : null,
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

/** The conjuncts a join checks (not its keys), cheapest first, then as written (checks.ts). */
function checkOrder(plan: PassPlan): string[] {
  const keys = new Set(plan.keys.map((k) => k.conjunct))
  return plan.conjuncts
    .filter((c) => !keys.has(c.index))
    .sort((a, b) => a.cost - b.cost || a.index - b.index)
    .map((c) => c.text)
}

function bandOf(b: Band | undefined): BandExplain | null {
  if (!b) return null
  return {
    column: `${b.side}.${b.column}`,
    lower: b.lo ? printExpr(b.lo) : null,
    upper: b.hi ? printExpr(b.hi) : null,
    lower_inclusive: !b.loStrict,
    upper_inclusive: !b.hiStrict,
    from: b.texts,
  }
}

function bandText(b: BandExplain): string {
  const lo = b.lower === null ? '-∞' : `${b.lower_inclusive ? '[' : '('}${b.lower}`
  const hi = b.upper === null ? '+∞' : `${b.upper}${b.upper_inclusive ? ']' : ')'}`
  return `${b.column} in ${lo}, ${hi}`
}

function passText(p: PassExplain): string {
  const lines = [
    `pass ${p.name} (${p.pattern}), phase ${p.phase}${p.after.length ? `, after ${p.after.join(', ')}` : ''}`,
  ]
  if (p.join === 'hash') lines.push(`  hash join on ${p.hash_keys.map((k) => `${k.left} = ${k.right}`).join(', ')}`)
  else if (p.bands.length === 1) lines.push(`  band join: ${bandText(p.bands[0])}  (sorted, then searched per record)`)
  else if (p.bands.length > 1) {
    lines.push('  band join on one of (the fewest estimated pairs, chosen on the data when the pass runs):')
    for (const b of p.bands) lines.push(`    ${bandText(b)}`)
  }
  lines.push(`  residual: ${p.residuals.length ? p.residuals.join(' AND ') : 'none'}`)
  if (p.checks.length > 1) lines.push(`  checked in order: ${p.checks.join('; ')}`)
  if (p.aggregate)
    lines.push(
      `  groups: sum(${p.aggregate.sum}) = ${p.aggregate.equals} ± ${p.aggregate.tolerance}, at most ${p.aggregate.max_group} records`,
    )
  const scoring = [p.scoring.amount, p.scoring.date, p.scoring.similarity].filter(Boolean)
  if (scoring.length) lines.push(`  score from: ${scoring.join('; ')}`)
  return lines.join('\n')
}
