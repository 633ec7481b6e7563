// `explain`: how each pass of a (valid) recipe will run — its phase in the pass DAG, the hash
// keys or band it joins on, and the residual conjuncts checked on each candidate pair.

import { scoredPairs } from '../engine/match/pass.js'
import { orderPasses } from '../engine/plan/passes.js'
import { comparedColumns } from '../engine/reconcile.js'
import { type PassPlan, planPass } from '../engine/plan/plan.js'
import { parsePredicate } from '../language/predicate.js'
import { printExpr } from '../language/print.js'
import type { Pattern, Preference, Recipe } from './schema.js'
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
  aggregate: { sum: string; equals: string; tolerance: string; max_group: number } | null
  scoring: { amount: string | null; date: string | null; similarity: string | null }
  /** 1:1 passes: how ties are resolved, and what that reads (null: ties are held as ambiguous). */
  prefer: { value: Preference; by: string } | null
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
      aggregate: pass.aggregate
        ? {
            sum: pass.aggregate.sum,
            equals: pass.aggregate.equals,
            tolerance: String(pass.aggregate.tolerance ?? 0),
            max_group: pass.aggregate.max_group ?? 5,
          }
        : null,
      prefer: pass.prefer ? { value: pass.prefer, by: preferBy(pass.prefer, scored, recipe) } : null,
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

/** What a preference reads, in the order it compares. */
function preferBy(prefer: Preference, scored: ReturnType<typeof scoredPairs>, recipe: Recipe): string {
  const keys = `the left key (${recipe.left.key.map((k) => `l.${k}`).join(', ')}), then the right key (${recipe.right.key.map((k) => `r.${k}`).join(', ')})`
  if (prefer === 'first_key') return keys
  if (prefer === 'earliest')
    return `the earliest l.${scored.date?.l ?? '?'}, then the earliest r.${scored.date?.r ?? '?'}, then ${keys}`
  return `the smallest |l.${scored.amount?.l ?? '?'} - r.${scored.amount?.r ?? '?'}|, then ${keys}`
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
  if (p.aggregate)
    lines.push(
      `  groups: sum(${p.aggregate.sum}) = ${p.aggregate.equals} ± ${p.aggregate.tolerance}, at most ${p.aggregate.max_group} records`,
    )
  const scoring = [p.scoring.amount, p.scoring.date, p.scoring.similarity].filter(Boolean)
  if (scoring.length) lines.push(`  score from: ${scoring.join('; ')}`)
  if (p.pattern === '1:1')
    lines.push(
      p.prefer
        ? `  assign: the most matches, then the best total score; ties go by prefer ${p.prefer.value}: ${p.prefer.by}`
        : '  assign: the most matches, then the best total score; ties are held as ambiguous',
    )
  return lines.join('\n')
}
