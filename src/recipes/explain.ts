// `explain`: how each pass of a (valid) recipe will run — its phase in the pass DAG, the hash
// keys or band options it joins on (several bands: the run picks one on the data), and the
// conjuncts checked on each pair, in the order they run (cheapest first).

import { scoredPairs } from '../engine/match/pass.js'
import { orderPasses } from '../engine/plan/passes.js'
import { comparedColumns } from '../engine/reconcile.js'
import { type Band, firstClosedBand, type PassPlan, planPass } from '../engine/plan/plan.js'
import { aggregateExprs, groupSum, groupTolerance, printGroupSum } from '../language/aggregate.js'
import { decimalText } from '../language/decimal.js'
import { type Expr, parsePredicate } from '../language/predicate.js'
import { printExpr } from '../language/print.js'
import { lookupsIn } from './lookups.js'
import {
  conditionOf,
  isProbabilistic,
  type Pattern,
  type Preference,
  type Recipe,
  type RecipeAggregate,
  type RecipeModel,
  type RecipePass,
} from './schema.js'
import { blockingJoin } from '../engine/match/probabilistic/blocking.js'
import { comparisonKind, comparisonLabels } from '../engine/match/probabilistic/comparisons.js'
import { DEFAULT_THRESHOLD } from '../engine/match/probabilistic/pass.js'
import type { Schemas } from '../language/types.js'

export interface PassExplain {
  name: string
  pattern: Pattern
  /** Depth in the pass DAG: passes of one phase only depend on earlier phases. */
  phase: number
  after: string[]
  join: 'hash' | 'band' | 'probabilistic'
  hash_keys: { left: string; right: string }[]
  /** The first closed band option (the one used when there is one option). */
  band: BandExplain | null
  /** Every band option; with several, the run joins on the one with the fewest estimated pairs. */
  bands: BandExplain[]
  residuals: string[]
  /** Conjuncts checked on each pair of the join, in the order they run: cheap first. */
  checks: string[]
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
  /** The recipe's lookup tables this pass reads, each indexed once per run. */
  lookups: { name: string; source: string; key: string[]; as_of: string | null }[]
  /** 1:1 passes: how ties are resolved, and what that reads (null: ties are held as ambiguous). */
  prefer: { value: Preference; by: string } | null
  probabilistic?: ProbabilisticExplain
}

/** A probabilistic pass: how candidates are found and weighed, and the weights when known. */
export interface ProbabilisticExplain {
  blocking: { rule: string; join: 'hash' | 'band' | 'token' }[]
  comparisons: { name: string; kind: string; left: string; right: string; levels: string[]; tf: boolean }[]
  threshold: number
  /** The model's weights: the recipe's own, else those the given run learned; null when not known yet. */
  model: (RecipeModel & { source: 'recipe' | 'run' }) | null
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

/** `models`: what an earlier run learned, by pass name (shown for passes the recipe gives no model). */
export function explainRecipe(
  recipe: Recipe,
  schemas: Schemas,
  models: Record<string, RecipeModel> = {},
): ExplainReply {
  const order = orderPasses(recipe.passes)
  const phaseOf = new Map<string, number>()
  order.phases.forEach((names, n) => names.forEach((name) => phaseOf.set(name, n + 1)))
  const shapes = { l: { columns: schemas.l, data: [], length: 0 }, r: { columns: schemas.r, data: [], length: 0 } }
  const compared = comparedColumns(recipe, shapes)
  const types = (side: 'l' | 'r', c: string) => schemas[side].find((x) => x.name === c)?.type
  const passes = recipe.passes.map((pass): PassExplain => {
    const base = {
      name: pass.name,
      pattern: pass.pattern,
      phase: phaseOf.get(pass.name)!,
      after: order.dependencies.get(pass.name)!,
    }
    if (isProbabilistic(pass)) return { ...base, ...probabilisticExplain(pass, types, models[pass.name], recipe) }
    const text = conditionOf(pass)
    const when = parsePredicate(text)
    const plan = planPass(when, text, types)
    // what 1:1 assignment ranks candidates by: the pass's own pairs, else the recipe's
    const scored = scoredPairs(plan, compared)
    const similar = scored.similarity
    return {
      ...base,
      join: plan.keys.length ? 'hash' : 'band',
      hash_keys: plan.keys.map((k) => ({ left: printExpr(k.left), right: printExpr(k.right) })),
      band: plan.keys.length ? null : bandOf(firstClosedBand(plan)),
      bands: plan.keys.length ? [] : plan.bands.map((b) => bandOf(b)!),
      residuals: plan.residuals.map((c) => c.text),
      checks: checkOrder(plan),
      aggregate: pass.aggregate ? aggregateOf(pass.aggregate) : null,
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
      lookups: passLookups(recipe, [when, ...(pass.aggregate ? aggregateExprs(pass.aggregate) : [])]),
    }
  })
  return { passes, text: passes.map(passText).join('\n\n') }
}

function passLookups(recipe: Recipe, exprs: Expr[]): PassExplain['lookups'] {
  const names: string[] = []
  for (const e of exprs) lookupsIn(e, names)
  return names.flatMap((name) => {
    const def = recipe.lookups?.[name]
    return def ? [{ name, source: def.source, key: def.key, as_of: def.as_of ?? null }] : []
  })
}

function probabilisticExplain(
  pass: RecipePass,
  types: (side: 'l' | 'r', c: string) => string | undefined,
  learned: RecipeModel | undefined,
  recipe: Recipe,
): Omit<PassExplain, 'name' | 'pattern' | 'phase' | 'after'> {
  const conjuncts = pass.when ? planPass(parsePredicate(pass.when), pass.when, types).conjuncts.map((c) => c.text) : []
  const model = pass.model
    ? { ...withWeights(pass.model), source: 'recipe' as const }
    : learned
      ? { ...learned, source: 'run' as const }
      : null
  return {
    join: 'probabilistic',
    hash_keys: [],
    band: null,
    bands: [],
    residuals: conjuncts,
    checks: conjuncts,
    aggregate: null,
    prefer: null,
    scoring: { amount: null, date: null, similarity: null },
    lookups: passLookups(
      recipe,
      [
        ...(pass.when ? [pass.when] : []),
        ...(pass.block ?? []),
        ...(pass.compare ?? []).flatMap((c) => c[comparisonKind(c)!] ?? []),
      ].map((text) => parsePredicate(text)),
    ),
    probabilistic: {
      blocking: (pass.block ?? []).map((rule) => ({ rule, join: blockingJoin(rule, types) ?? 'band' })),
      comparisons: (pass.compare ?? []).map((c) => {
        const kind = comparisonKind(c)!
        const [left, right] = c[kind]!
        return {
          name: c.name,
          kind,
          left,
          right,
          levels: comparisonLabels(c),
          tf: kind === 'text' ? c.tf !== false : c.tf === true,
        }
      }),
      threshold: pass.threshold ?? DEFAULT_THRESHOLD,
      model,
    },
  }
}

/** A model with each level's weight, log2(m / u), spelled out. */
function withWeights(model: RecipeModel): RecipeModel {
  return {
    lambda: model.lambda,
    comparisons: model.comparisons.map((c) => ({
      ...c,
      weights: c.m.map((m, l) => Math.round(Math.log2(m / c.u[l]) * 1000) / 1000),
    })),
  }
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

/** What a preference reads, in the order it compares. */
function preferBy(prefer: Preference, scored: ReturnType<typeof scoredPairs>, recipe: Recipe): string {
  const keys = `the left key (${recipe.left.key.map((k) => `l.${k}`).join(', ')}), then the right key (${recipe.right.key.map((k) => `r.${k}`).join(', ')})`
  if (prefer === 'first_key') return keys
  if (prefer === 'earliest')
    return `the earliest l.${scored.date?.l ?? '?'}, then the earliest r.${scored.date?.r ?? '?'}, then ${keys}`
  return `the smallest |l.${scored.amount?.l ?? '?'} - r.${scored.amount?.r ?? '?'}|, then ${keys}`
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
  if (p.probabilistic) return lines.concat(probabilisticText(p.probabilistic, p.residuals)).join('\n')
  if (p.join === 'hash') lines.push(`  hash join on ${p.hash_keys.map((k) => `${k.left} = ${k.right}`).join(', ')}`)
  else if (p.bands.length === 1) lines.push(`  band join: ${bandText(p.bands[0])}  (sorted, then searched per record)`)
  else if (p.bands.length > 1) {
    lines.push('  band join on one of (the fewest estimated pairs, chosen on the data when the pass runs):')
    for (const b of p.bands) lines.push(`    ${bandText(b)}`)
  }
  lines.push(`  residual: ${p.residuals.length ? p.residuals.join(' AND ') : 'none'}`)
  if (p.checks.length > 1) lines.push(`  checked in order: ${p.checks.join('; ')}`)
  const a = p.aggregate
  if (a) {
    const within = a.below === a.above ? `± ${a.above}` : `up to ${a.above} above and ${a.below} below`
    lines.push(
      `  groups: ${a.sum} = ${a.equals} ${within}, at most ${a.max_group} records (an exact fit first, then the smallest group, then the closest)`,
    )
  }
  for (const l of p.lookups)
    lines.push(
      `  lookup ${l.name}: ${l.source} by ${l.key.join(', ')}${l.as_of ? `, latest ${l.as_of} on or before` : ''} (hash index, built once per run)`,
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

function probabilisticText(p: ProbabilisticExplain, conditions: string[]): string[] {
  const lines = ['  probabilistic (Fellegi–Sunter): candidates are the pairs any blocking rule holds for']
  p.blocking.forEach((b, n) => lines.push(`  block ${n + 1} (${b.join} join): ${b.rule}`))
  if (conditions.length) lines.push(`  every match also meets: ${conditions.join(' AND ')}`)
  for (const c of p.comparisons) {
    const model = p.model?.comparisons.find((x) => x.name === c.name)
    const levels = c.levels.map((l, k) => (model?.weights ? `${l} (${signed(model.weights[k])})` : l))
    lines.push(`  compare ${c.name} (${c.kind}${c.tf ? ', tf' : ''}) ${c.left} ~ ${c.right}: ${levels.join(' | ')}`)
  }
  const prior = p.model ? `, prior ${signed(Math.log2(p.model.lambda / (1 - p.model.lambda)))}` : ''
  lines.push(`  match when probability >= ${p.threshold}${prior}`)
  lines.push(
    p.model
      ? `  weights: log2(m / u) per level, from the ${p.model.source === 'recipe' ? "recipe's model" : 'run'}`
      : '  weights: learned when the pass runs (EM over the candidates; a run reports its model)',
  )
  return lines
}

const signed = (w: number) => `${w >= 0 ? '+' : ''}${(Math.round(w * 100) / 100).toFixed(2)}`
