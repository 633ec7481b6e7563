// Warnings about one pass, judged on the samples and the confirmed pairs: the shape its pattern
// assumes, the confirmed pairs it rejects and why, how many sample pairs it admits, and how much
// confirmed evidence its ranges rest on. recipe-warnings.ts decides which passes are judged and
// which confirmed pairs no pass takes.

import { referencedColumns } from '../engine/plan/plan.js'
import type { Expr } from '../language/predicate.js'
import { isProbabilistic, type RecipePass } from '../recipes/schema.js'
import { type ConfirmedGroup, type PairPosition, pairText, patternTakes } from './confirmed-groups.js'
import { admits, type PassOnSamples } from './pass-on-samples.js'
import type { RecipeWarning } from './recipe-warnings.js'
import { plural } from './observations.js'
import type { RowT } from './schemas.js'
import { toleranceOf } from './tolerances.js'

/** A rule admitting more than this many times the pairs it could rightly match matches at random. */
export const TOO_MANY_FACTOR = 3
/** ... and more pairs than this: a handful of extra pairs in a tiny sample proves nothing. */
export const TOO_MANY_MIN = 10
/** A tolerance or a window seen on fewer confirmed pairs (groups) than this is a guess. */
export const MIN_EVIDENCE = 3

/**
 * A 1:1 pass matches each record at most once. Confirmed pairs sharing a record show a group;
 * the pass is wrong for it when no pass of the recipe can match the group whole, or when it would
 * take one of the group's pairs on its own (running first, or instead of the group pass).
 */
export function shapeWarnings(p: PassOnSamples, groups: ConfirmedGroup[], passes: RecipePass[]): RecipeWarning[] {
  const broken = groups.filter(
    (g) =>
      g.shape !== '1:1' &&
      (!passes.some((q) => patternTakes(q.pattern, g.shape)) || g.pairs.some((q) => admits(p, q.left, q.right))),
  )
  if (!broken.length) return []
  const shapes = [...new Set(broken.map((g) => g.shape))]
  const example = broken[0]
  return [
    {
      pass: p.pass.name,
      code: 'shape_not_1_1',
      message:
        `confirmed pairs share records (${plural(broken.length, 'group')} shaped ${shapes.join(', ')}: e.g. left ${example.lefts.join(', ')} with right ${example.rights.join(', ')}), ` +
        `but pass "${p.pass.name}" is 1:1 and would match each record once, taking one pair of a group and leaving the rest: ` +
        `use pattern ${shapes[0] === 'N:M' ? 'N:M' : shapes[0]} with an aggregate (a group sum)`,
      pairs: broken.flatMap((g) => g.pairs),
    },
  ]
}

/** Confirmed pairs no pass takes, per reason this pass rejects them: the conjunct, the blocking, the group sum. */
export function exclusions(
  p: PassOnSamples,
  untaken: PairPosition[],
  groupOf: Map<PairPosition, ConfirmedGroup>,
  samples: { left: RowT[]; right: RowT[] },
): RecipeWarning[] {
  // keyed by what rejects ("<conjunct>" rejects, no blocking rule finds): one warning each
  const byReason = new Map<string, { pairs: PairPosition[]; shown: string[] }>()
  const note = (reason: string, pair: PairPosition, detail: string) => {
    const entry = byReason.get(reason) ?? { pairs: [], shown: [] }
    entry.pairs.push(pair)
    if (entry.shown.length < 3) entry.shown.push(`${pairText(pair)}${detail ? `: ${detail}` : ''}`)
    byReason.set(reason, entry)
  }
  const values = (reads: { l: Set<string>; r: Set<string> }, pair: PairPosition) =>
    [
      ...[...reads.l].map((c) => `l.${c} ${JSON.stringify(samples.left[pair.left][c] ?? null)}`),
      ...[...reads.r].map((c) => `r.${c} ${JSON.stringify(samples.right[pair.right][c] ?? null)}`),
    ].join(', ')
  for (const pair of untaken) {
    let rejected = false
    for (const c of p.conjuncts) {
      if (c.holds(pair.left, pair.right)) continue
      rejected = true
      note(`"${c.text}" rejects`, pair, values(referencedColumns([c.expr]), pair))
    }
    if (p.blocks.length && !p.blocks.some((b) => b.holds(pair.left, pair.right))) {
      rejected = true
      note('no blocking rule finds', pair, values(referencedColumns(p.blocks.map((b) => b.expr)), pair))
    }
    if (!rejected && p.aggregate) {
      const g = groupOf.get(pair)!
      const fit = p.aggregate.fit(g.lefts, g.rights)
      if (fit && !fit.fits)
        note(`the group sum ${p.aggregate.text} rejects`, pair, `its confirmed group is off by ${fit.delta}`)
    }
  }
  return [...byReason].map(([reason, { pairs, shown }]) => ({
    pass: p.pass.name,
    code: 'excludes_confirmed_pair' as const,
    message: `${reason} ${plural(pairs.length, 'confirmed pair')} that no pass matches: ${shown.join('; ')}${pairs.length > shown.length ? '; …' : ''}`,
    pairs,
  }))
}

/**
 * Pairs of sample rows the pass's condition admits, against the most it could rightly match: one
 * per record of the smaller side for 1:1, one per summed record for 1:N and N:1. N:M groups are
 * whole components by design, and probabilistic blocking over-generates on purpose (the match
 * weight decides): neither is counted.
 */
export function tooManyPairs(p: PassOnSamples, lengths: { l: number; r: number }): RecipeWarning | undefined {
  const pattern = p.pass.pattern
  if (pattern === 'N:M' || isProbabilistic(p.pass)) return undefined
  const bound = pattern === '1:1' ? Math.min(lengths.l, lengths.r) : pattern === '1:N' ? lengths.r : lengths.l
  let pairs = 0
  for (let i = 0; i < lengths.l; i++) for (let j = 0; j < lengths.r; j++) if (admits(p, i, j)) pairs++
  if (pairs <= TOO_MANY_FACTOR * bound || pairs <= TOO_MANY_MIN) return undefined
  return {
    pass: p.pass.name,
    code: 'too_many_pairs',
    message:
      `pass "${p.pass.name}" admits ${pairs} of the ${lengths.l * lengths.r} pairs of sample rows, more than ${TOO_MANY_FACTOR}× the ${bound} a ${pattern} pass could match ` +
      `on ${lengths.l} left and ${lengths.r} right rows: its condition hardly tells records apart; add an equality or narrow a range`,
  }
}

/** A tolerance or window (a range between l and r) seen on 1 or 2 confirmed pairs (groups for a group sum). */
export function thinEvidence(
  p: PassOnSamples,
  support: PairPosition[],
  groupOf: Map<PairPosition, ConfirmedGroup>,
): RecipeWarning | undefined {
  const n = p.aggregate ? new Set(support.map((pair) => groupOf.get(pair))).size : support.length
  if (n === 0 || n >= MIN_EVIDENCE) return undefined
  const ranges = p.conjuncts.filter((c) => isRange(c.expr)).map((c) => `"${c.text}"`)
  const agg = p.aggregate
  if (agg && (agg.tolerance.below.units !== 0n || agg.tolerance.above.units !== 0n)) ranges.push('the group tolerance')
  if (!ranges.length) return undefined
  const what = p.aggregate ? plural(n, 'confirmed group') : plural(n, 'confirmed pair')
  return {
    pass: p.pass.name,
    code: 'thin_evidence',
    message: `${ranges.join(', ')} ${ranges.length === 1 ? 'rests' : 'rest'} on ${what}: fewer than ${MIN_EVIDENCE} cannot show how wide ${ranges.length === 1 ? 'it' : 'they'} must be`,
    pairs: support,
  }
}

/** A tolerance, or a comparison other than equality between an l and an r value (a date window). */
function isRange(e: Expr): boolean {
  const reads = referencedColumns([e])
  if (!reads.l.size || !reads.r.size) return false
  if (toleranceOf(e)) return true
  return e.kind === 'between' || (e.kind === 'compare' && e.op !== '=' && e.op !== '<>')
}
