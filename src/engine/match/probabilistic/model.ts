// The Fellegi–Sunter model of a probabilistic pass and how Concord learns it.
//
// Each comparison puts a pair in one of its levels; m[l] is how often true matches fall in level
// l, u[l] how often non-matches do. A pair's evidence is, per comparison, log2(m / u) of its level
// (a missing value adds nothing): its Bayes factor is 2^evidence. λ is the probability that two
// records taken at random match, so log2(λ / (1 - λ)) is where every match weight starts.
//
// The match probability takes the one-to-one constraint into account (a mean-field reading of
// Bayesian bipartite matching, Sadinle 2017): a left record has a partner with probability
// π = λ × (right records), and then it is one of its candidates in proportion to their Bayes
// factors, so P(j is i's partner) = π·B(i,j) / (n_R·(1 - π) + π·Σ_j' B(i,j')); the same from the
// right record's side, and the pair's probability is the smaller of the two (candidates tied at
// a record's best factor count as one: see matchProbabilities). A lone candidate
// whose records have no rival scores higher than its weight alone says (most records do have a
// partner), one with a close rival lower. On the transfers set this lifted recall at probability
// 0.5 from 0.93 to 0.97 at the same precision (0.999): the pairwise weight alone ignores what the
// other candidates of both records show. The difference is the waterfall's "context".
//
// Learning, unsupervised and seeded:
// - u from random pairs of the free records (all pairs when there are few): almost every random
//   pair is a non-match, so how often random pairs fall in a level is u.
// - m and λ by expectation–maximisation over the blocked candidate pairs, with the one-to-one
//   constraint in the expectation step: the pairs taken as matches are those a greedy one-to-one
//   assignment takes among the pairs more likely matches than not (best evidence first, each
//   record once, confirmed pairs before all). Without the constraint the estimate follows whatever splits
//   the candidates most — the same payer's other monthly transfers, which agree on name and amount,
//   were taken as matches (λ five times too large) — and with a union of blocking rules it took
//   "found by the token rule" for "match". m is re-estimated from the pairs taken (plus one
//   pseudo-count per level, so no level is impossible), λ as their number over all pairs.
//   The steps repeat until the same pairs are taken twice (or the iteration limit).

import type { RecipeModel } from '../../../recipes/schema.js'
import type { PairList } from '../join.js'
import { type Comparison, NO_EVIDENCE } from './comparisons.js'
import { prng } from '../../data/prng.js'

export interface Model {
  lambda: number
  /** Per comparison, per level (best first, "else" last). */
  m: Float64Array[]
  u: Float64Array[]
}

export interface Training {
  /** Whether EM ran (false when the recipe gave the model). */
  trained: boolean
  iterations: number
  converged: boolean
  /** Random pairs that estimated u. */
  u_pairs: number
  /** Pairs taken as matches in the last expectation step. */
  matches: number
}

/**
 * The levels of every candidate pair, one array per comparison, and each pair's pattern (its
 * tuple of levels, numbered densely): the model weighs a few hundred patterns, not millions of
 * pairs, and the expectation step computes a Bayes factor per pattern.
 */
export interface PairLevels {
  /** levels[c][k]: comparison c's level of pair k (NO_EVIDENCE for a missing value). */
  levels: Uint8Array[]
  /** pattern[k]: pair k's pattern. */
  pattern: Int32Array
  /** patternLevels[c][p]: comparison c's level in pattern p. */
  patternLevels: Uint8Array[]
}

export function pairLevels(comparisons: Comparison[], pairs: PairList): PairLevels {
  const levels = comparisons.map((c) => {
    const out = new Uint8Array(pairs.length)
    const level = c.level
    for (let k = 0; k < pairs.length; k++) out[k] = level(pairs.left[k], pairs.right[k])
    return out
  })
  // a pattern's code: its levels in mixed radix (a missing value is one more digit); exact below
  // 2^53 for up to twelve comparisons of eleven levels
  const radix = comparisons.map((c) => c.labels.length + 1)
  const ids = new Map<number, number>()
  const pattern = new Int32Array(pairs.length)
  const patternLevels: number[][] = comparisons.map(() => [])
  for (let k = 0; k < pairs.length; k++) {
    let code = 0
    for (let c = 0; c < levels.length; c++) {
      const l = levels[c][k]
      code = code * radix[c] + (l === NO_EVIDENCE ? radix[c] - 1 : l)
    }
    let id = ids.get(code)
    if (id === undefined) {
      id = ids.size
      ids.set(code, id)
      for (let c = 0; c < levels.length; c++) patternLevels[c].push(levels[c][k])
    }
    pattern[k] = id
  }
  return { levels, pattern, patternLevels: patternLevels.map((l) => Uint8Array.from(l)) }
}

/**
 * u per comparison from random pairs of free records: every pair when there are at most
 * `sample` of them, else `sample` pairs drawn with the seed. One pseudo-count per level.
 */
export function estimateU(
  comparisons: Comparison[],
  leftRows: Int32Array,
  rightRows: Int32Array,
  sample: number,
  seed: number,
): { u: Float64Array[]; pairs: number } {
  const counts = comparisons.map((c) => new Float64Array(c.labels.length))
  const all = leftRows.length * rightRows.length
  const tally = (i: number, j: number) => {
    for (let c = 0; c < comparisons.length; c++) {
      const l = comparisons[c].level(i, j)
      if (l !== NO_EVIDENCE) counts[c][l]++
    }
  }
  let pairs = 0
  if (all <= sample) {
    for (const i of leftRows) for (const j of rightRows) tally(i, j)
    pairs = all
  } else {
    const next = prng(seed)
    for (; pairs < sample; pairs++) {
      tally(leftRows[Math.floor(next() * leftRows.length)], rightRows[Math.floor(next() * rightRows.length)])
    }
  }
  return { u: counts.map(normalize), pairs }
}

function normalize(counts: Float64Array): Float64Array {
  let total = 0
  for (const c of counts) total += c + 1
  return counts.map((c) => (c + 1) / total)
}

/** log2(m / u) per comparison and level. */
export function levelWeights(model: Model): Float64Array[] {
  return model.m.map((m, c) => m.map((x, l) => Math.log2(x / model.u[c][l])))
}

export const priorWeight = (lambda: number) => Math.log2(lambda / (1 - lambda))

/** The evidence (the comparisons' weights, no prior) of each pattern. */
function patternEvidence(model: Model, pl: PairLevels): Float64Array {
  const weights = levelWeights(model)
  const out = new Float64Array(pl.patternLevels[0]?.length ?? 0)
  pl.patternLevels.forEach((lv, c) => {
    for (let p = 0; p < out.length; p++) if (lv[p] !== NO_EVIDENCE) out[p] += weights[c][lv[p]]
  })
  return out
}

/**
 * The evidence of every candidate pair under the model (the comparisons' weights, no prior); with
 * `adjust`, the term-frequency adjustment of exact comparisons (an agreement on a value held by
 * few records weighs log2(m / share of records holding it) instead of log2(m / u)). `byPattern`
 * is set when every pair's evidence is its pattern's (nothing adjusted).
 */
export function pairEvidence(
  model: Model,
  pl: PairLevels,
  pairs: PairList,
  comparisons: Comparison[],
  adjust: boolean,
): { evidence: Float64Array; byPattern?: Float64Array } {
  const byPattern = patternEvidence(model, pl)
  const evidence = new Float64Array(pairs.length)
  for (let k = 0; k < evidence.length; k++) evidence[k] = byPattern[pl.pattern[k]]
  const adjusted = adjust ? comparisons.flatMap((c, n) => (c.valueShare ? [n] : [])) : []
  if (!adjusted.length) return { evidence, byPattern }
  const weights = levelWeights(model)
  for (const c of adjusted) {
    const share = comparisons[c].valueShare!
    const lv = pl.levels[c]
    const m0 = model.m[c][0]
    for (let k = 0; k < evidence.length; k++)
      if (lv[k] === 0) evidence[k] += Math.log2(m0 / share(pairs.left[k])) - weights[c][0]
  }
  return { evidence }
}

/** The free records of each side (how many) and the tables' lengths (row numbers). */
export interface FreeCounts {
  left: number
  right: number
  leftLength: number
  rightLength: number
}

/**
 * Each candidate's match probability under the one-to-one reading (see the top of this file),
 * from its evidence and the evidence of every other candidate of its two records.
 */
export function matchProbabilities(
  evidence: { evidence: Float64Array; byPattern?: Float64Array },
  pl: PairLevels,
  pairs: PairList,
  lambda: number,
  free: FreeCounts,
): Float64Array {
  const piLeft = Math.min(0.999, Math.max(1e-9, lambda * free.right))
  const piRight = Math.min(0.999, Math.max(1e-9, lambda * free.left))
  const noneLeft = free.right * (1 - piLeft)
  const noneRight = free.left * (1 - piRight)
  // a pair whose Bayes factor is 2^-24 of the "no partner" term on both sides has probability
  // ~0 and moves no sum: most candidates, whose factor is then never computed
  const floor = Math.min(Math.log2(noneLeft / piLeft), Math.log2(noneRight / piRight)) - 24
  // evidence is at most a few hundred bits: 2^evidence stays finite; once per pattern when the
  // pairs' evidence is their pattern's
  const { evidence: e, byPattern } = evidence
  const patternFactor = byPattern?.map((x) => (x < floor ? 0 : 2 ** x))
  const factor = new Float64Array(e.length)
  const sumLeft = new Float64Array(free.leftLength)
  const sumRight = new Float64Array(free.rightLength)
  for (let k = 0; k < e.length; k++) {
    const b = patternFactor ? patternFactor[pl.pattern[k]] : e[k] < floor ? 0 : 2 ** e[k]
    if (b === 0) continue
    factor[k] = b
    sumLeft[pairs.left[k]] += b
    sumRight[pairs.right[k]] += b
  }
  // candidates tied at a record's best factor are one class: the model cannot tell them apart,
  // so the record's partner is one of them with their summed probability and which one is the
  // assignment's to settle (a tie, `ambiguous`, or `prefer`) — exact duplicates would otherwise
  // split the probability, fall under the threshold and go unmatched
  const bestLeft = new Float64Array(free.leftLength)
  const bestRight = new Float64Array(free.rightLength)
  const tiedLeft = new Uint32Array(free.leftLength)
  const tiedRight = new Uint32Array(free.rightLength)
  for (let k = 0; k < e.length; k++) {
    const b = factor[k]
    if (b === 0) continue
    const i = pairs.left[k]
    const j = pairs.right[k]
    if (b > bestLeft[i]) {
      bestLeft[i] = b
      tiedLeft[i] = 1
    } else if (b === bestLeft[i]) tiedLeft[i]++
    if (b > bestRight[j]) {
      bestRight[j] = b
      tiedRight[j] = 1
    } else if (b === bestRight[j]) tiedRight[j]++
  }
  const out = new Float64Array(e.length)
  for (let k = 0; k < e.length; k++) {
    const b = factor[k]
    if (b === 0) continue
    const i = pairs.left[k]
    const j = pairs.right[k]
    const classLeft = b === bestLeft[i] ? b * tiedLeft[i] : b
    const classRight = b === bestRight[j] ? b * tiedRight[j] : b
    const fromLeft = (piLeft * classLeft) / (noneLeft + piLeft * sumLeft[i])
    const fromRight = (piRight * classRight) / (noneRight + piRight * sumRight[j])
    out[k] = Math.min(fromLeft, fromRight)
  }
  return out
}

/**
 * Pairs taken one to one, best evidence first, among those more likely matches than not;
 * `anchors` (indices of confirmed pairs) first of all. 1 = taken.
 */
function takeOneToOne(
  evidence: Float64Array,
  probability: Float64Array,
  pairs: PairList,
  anchors: number[],
  leftLength: number,
  rightLength: number,
): Uint8Array {
  const taken = new Uint8Array(evidence.length)
  const leftUsed = new Uint8Array(leftLength)
  const rightUsed = new Uint8Array(rightLength)
  const take = (k: number) => {
    const i = pairs.left[k]
    const j = pairs.right[k]
    if (leftUsed[i] || rightUsed[j]) return
    leftUsed[i] = 1
    rightUsed[j] = 1
    taken[k] = 1
  }
  for (const k of anchors) take(k)
  let n = 0
  for (let k = 0; k < probability.length; k++) if (probability[k] >= 0.5) n++
  const order = new Int32Array(n)
  for (let k = 0, at = 0; k < probability.length; k++) if (probability[k] >= 0.5) order[at++] = k
  order.sort((a, b) => evidence[b] - evidence[a] || a - b)
  for (const k of order) take(k)
  return taken
}

export function initialModel(comparisons: Comparison[], u: Float64Array[], leftFree: number, rightFree: number): Model {
  const m = comparisons.map((c) => {
    const levels = c.labels.length
    const x = new Float64Array(levels)
    let total = 0
    for (let l = 0; l < levels; l++) total += x[l] = 0.5 ** l
    return x.map((v) => v / total)
  })
  const all = Math.max(1, leftFree * rightFree)
  return { lambda: Math.min(0.5, Math.max(1, Math.min(leftFree, rightFree)) / (2 * all)), m, u }
}

/** Expectation–maximisation of m and λ with u fixed (see the top of this file). */
export function trainModel(
  start: Model,
  pl: PairLevels,
  pairs: PairList,
  comparisons: Comparison[],
  free: FreeCounts,
  anchors: number[],
  maxIterations: number,
): { model: Model; iterations: number; converged: boolean; matches: number } {
  let model = start
  let previous: Uint8Array | null = null
  let matches = 0
  const all = Math.max(1, free.left * free.right)
  for (let it = 1; it <= maxIterations; it++) {
    const evidence = pairEvidence(model, pl, pairs, comparisons, false)
    const probability = matchProbabilities(evidence, pl, pairs, model.lambda, free)
    const taken = takeOneToOne(evidence.evidence, probability, pairs, anchors, free.leftLength, free.rightLength)
    matches = 0
    for (let k = 0; k < taken.length; k++) matches += taken[k]
    if (previous !== null && sameTaken(previous, taken)) return { model, iterations: it, converged: true, matches }
    previous = taken
    // the levels of the pairs taken, counted by pattern
    const perPattern = new Float64Array(pl.patternLevels[0]?.length ?? 0)
    for (let k = 0; k < taken.length; k++) if (taken[k] === 1) perPattern[pl.pattern[k]]++
    const m = comparisons.map((c, n) => {
      const counts = new Float64Array(c.labels.length)
      const lv = pl.patternLevels[n]
      for (let p = 0; p < perPattern.length; p++) if (lv[p] !== NO_EVIDENCE) counts[lv[p]] += perPattern[p]
      return normalize(counts)
    })
    model = { lambda: Math.min(0.5, Math.max(1, matches) / all), m, u: model.u }
  }
  return { model, iterations: maxIterations, converged: false, matches }
}

function sameTaken(a: Uint8Array, b: Uint8Array): boolean {
  for (let k = 0; k < a.length; k++) if (a[k] !== b[k]) return false
  return true
}

/**
 * The model as a recipe or a run report states it (RecipeModel). Probabilities keep every digit,
 * so a run given this model reproduces the matches and scores of the run that learned it.
 */
export function modelJson(model: Model, comparisons: Comparison[]): RecipeModel {
  const weights = levelWeights(model)
  return {
    lambda: model.lambda,
    comparisons: comparisons.map((c, n) => ({
      name: c.name,
      levels: c.labels,
      m: [...model.m[n]],
      u: [...model.u[n]],
      weights: [...weights[n]].map((w) => Math.round(w * 1000) / 1000),
    })),
  }
}

/** A model given in the recipe, checked against the pass's comparisons. */
export function modelFrom(json: RecipeModel, comparisons: Comparison[]): Model {
  const m: Float64Array[] = []
  const u: Float64Array[] = []
  for (const c of comparisons) {
    const given = json.comparisons.find((x) => x.name === c.name)
    if (!given) throw new Error(`the model has no comparison "${c.name}"`)
    if (given.m.length !== c.labels.length || given.u.length !== c.labels.length)
      throw new Error(
        `the model's "${c.name}" has ${given.m.length} m and ${given.u.length} u values; the comparison has ${c.labels.length} levels (${c.labels.join(', ')})`,
      )
    m.push(Float64Array.from(given.m, (x) => Math.max(x, 1e-12)))
    u.push(Float64Array.from(given.u, (x) => Math.max(x, 1e-12)))
  }
  return { lambda: json.lambda, m, u }
}
