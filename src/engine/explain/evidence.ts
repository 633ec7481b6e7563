// The evidence of a run, kept in columns: a million matches are a handful of typed arrays, not a
// million objects. Records are row numbers into the run's input tables; JSON records in the
// shape of DESIGN §2 are made on demand, one page at a time.

import { largeArray } from '../data/alloc.js'
import type { Pattern, Preference } from '../../recipes/schema.js'
import { jsonValue } from '../data/builder.js'
import { stringAt } from '../data/column.js'
import { sharedArray } from '../data/shared.js'
import type { Table } from '../data/table.js'
import { formatDecimal } from '../data/values.js'

/** Matches in columns. Match k's records are leftRows[leftStart[k] .. leftStart[k+1]) (same for right). */
export interface MatchSet {
  count: number
  /** Index of the pass (in the recipe) that made the match. */
  pass: Int32Array
  score: Float64Array
  ambiguous: Uint8Array
  /** Left amount minus right amount, in units at the pass's amount scale; NaN = none. */
  amountDelta: Float64Array
  /** Right date minus left date, in days; NaN = none. */
  daysDelta: Float64Array
  leftStart: Int32Array
  leftRows: Int32Array
  rightStart: Int32Array
  rightRows: Int32Array
  /** Matches of probabilistic passes: each comparison's level and weight (the waterfall). */
  waterfall?: Waterfall
}

/**
 * Per match, 0 (no weights: not a probabilistic match) or 1 + the entry where its comparisons'
 * levels and weights start: entries start[e] .. start[e + 1] of `level` and `weight`.
 */
export interface Waterfall {
  entry: Int32Array
  start: Int32Array
  level: Uint8Array
  weight: Float64Array
}

/** Collects the waterfalls of probabilistic matches as they are made. */
class WaterfallLog {
  start: number[] = [0]
  level: number[] = []
  weight: number[] = []
  add(levels: ArrayLike<number>, weights: ArrayLike<number>): number {
    for (let c = 0; c < levels.length; c++) {
      this.level.push(levels[c])
      this.weight.push(weights[c])
    }
    this.start.push(this.level.length)
    return this.start.length - 1
  }
}

/** Unmatched records of one side, in row order, each with its nearest miss when there is one. */
export interface UnmatchedSet {
  rows: Int32Array
  /** The closest record on the other side, or -1. */
  candidate: Int32Array
  /** Pass of the nearest miss, or -1 when no pass found a candidate. */
  pass: Int32Array
  /** The conjunct of that pass the candidate failed; -1 when it satisfied them all (outscored, tied, or taken). */
  conjunct: Int32Array
  /** 1 when the candidate was matched by something else. */
  candidateTaken: Uint8Array
  /** The record of this side that `prefer` chose over this one for the candidate (a tie), or -1. */
  tiedWith: Int32Array
}

/**
 * Collects matches into typed arrays. Written out field by field (no generic growable helper) so
 * each store stays monomorphic: this runs once per match, a million times per run.
 *
 * Sized once from the tables: a record is in at most one match, so there are at most
 * min(left, right) matches, `left` left records and `right` right records. Pages of a fresh
 * typed array that are never written cost address space, not memory, while every page that is
 * written costs a page fault (about 12 µs each on the 2-core benchmark VM): doubling from small
 * arrays would touch each byte about twice, once in a copy that is thrown away.
 */
export class MatchBuilder {
  private n = 0
  private pass: Int32Array
  private score: Float64Array
  private ambiguous: Uint8Array
  private amount: Float64Array
  private days: Float64Array
  private leftStart: Int32Array
  private rightStart: Int32Array
  private leftRows: Int32Array
  private rightRows: Int32Array
  private nl = 0
  private nr = 0
  /** Per match: 0, or 1 + its waterfall entry (only probabilistic passes write it). */
  private detail: Int32Array
  private waterfalls: WaterfallLog | null = null

  constructor(leftLength = 0, rightLength = 0) {
    const cap = Math.max(1024, Math.min(leftLength, rightLength))
    // in shared memory, as the loaded columns are: the result-set writer's helper thread reads
    // the match set without a copy (posting it copied ~45 MB for a million matches)
    this.pass = sharedArray(Int32Array, cap)
    this.score = sharedArray(Float64Array, cap)
    this.ambiguous = sharedArray(Uint8Array, cap)
    this.amount = sharedArray(Float64Array, cap)
    this.days = sharedArray(Float64Array, cap)
    this.leftStart = sharedArray(Int32Array, cap + 1)
    this.rightStart = sharedArray(Int32Array, cap + 1)
    this.leftRows = sharedArray(Int32Array, Math.max(1024, leftLength))
    this.rightRows = sharedArray(Int32Array, Math.max(1024, rightLength))
    // zeros mean "none": never written for ordinary matches, so its pages cost nothing
    this.detail = new Int32Array(cap)
  }

  get count(): number {
    return this.n
  }

  /** Keeps a probabilistic match's comparison levels and weights; pass the result to pair/group. */
  waterfall(levels: ArrayLike<number>, weights: ArrayLike<number>): number {
    this.waterfalls ??= new WaterfallLog()
    return this.waterfalls.add(levels, weights)
  }

  /** One left record with one right record (the common case: no arrays allocated). */
  pair(
    pass: number,
    i: number,
    j: number,
    score: number,
    ambiguous: boolean,
    amount: number,
    days: number,
    waterfall = 0,
  ): void {
    this.head(pass, score, ambiguous, amount, days, waterfall)
    if (this.nl === this.leftRows.length) this.leftRows = grow(this.leftRows)
    if (this.nr === this.rightRows.length) this.rightRows = grow(this.rightRows)
    this.leftRows[this.nl++] = i
    this.rightRows[this.nr++] = j
  }

  group(
    pass: number,
    left: ArrayLike<number>,
    right: ArrayLike<number>,
    score: number,
    ambiguous: boolean,
    amount: number,
    days: number,
    waterfall = 0,
  ): void {
    this.head(pass, score, ambiguous, amount, days, waterfall)
    while (this.nl + left.length > this.leftRows.length) this.leftRows = grow(this.leftRows)
    while (this.nr + right.length > this.rightRows.length) this.rightRows = grow(this.rightRows)
    for (let k = 0; k < left.length; k++) this.leftRows[this.nl++] = left[k]
    for (let k = 0; k < right.length; k++) this.rightRows[this.nr++] = right[k]
  }

  private head(pass: number, score: number, ambiguous: boolean, amount: number, days: number, waterfall: number): void {
    if (this.n === this.pass.length) {
      // only when the builder was not sized from its tables (or a record is in two matches)
      this.pass = grow(this.pass)
      this.score = grow(this.score)
      this.ambiguous = grow(this.ambiguous)
      this.amount = grow(this.amount)
      this.days = grow(this.days)
      this.leftStart = grow(this.leftStart)
      this.rightStart = grow(this.rightStart)
      this.detail = grow(this.detail)
    }
    const k = this.n++
    if (waterfall !== 0) this.detail[k] = waterfall
    this.pass[k] = pass
    this.score[k] = score
    this.ambiguous[k] = ambiguous ? 1 : 0
    this.amount[k] = amount
    this.days[k] = days
    this.leftStart[k] = this.nl
    this.rightStart[k] = this.nr
  }

  /**
   * The matches, pass by pass (in the order the passes ran) and within a pass by their first left
   * record: the order pages and exports show, and one that reads the left side's columns in
   * sequence rather than in the hash order a partitioned join produces them. A record is in at
   * most one match, so the first left rows are distinct and a counting pass orders them. The
   * builder is spent afterwards: the result may share its arrays.
   */
  finish(passOrder: number[], leftLength: number): MatchSet {
    const n = this.n
    this.leftStart[n] = this.nl
    this.rightStart[n] = this.nr
    const { order, passesInOrder } = this.order(passOrder, leftLength)
    if (this.nl === n && this.nr === n) return this.gatherInOrder(order, passesInOrder)
    const leftStart = sharedArray(Int32Array, n + 1)
    const rightStart = sharedArray(Int32Array, n + 1)
    const leftRows = sharedArray(Int32Array, this.nl)
    const rightRows = sharedArray(Int32Array, this.nr)
    for (let i = 0; i < n; i++) {
      const k = order[i]
      let l = leftStart[i]
      for (let x = this.leftStart[k]; x < this.leftStart[k + 1]; x++) leftRows[l++] = this.leftRows[x]
      leftStart[i + 1] = l
      let r = rightStart[i]
      for (let x = this.rightStart[k]; x < this.rightStart[k + 1]; x++) rightRows[r++] = this.rightRows[x]
      rightStart[i + 1] = r
    }
    const pass = sharedArray(Int32Array, n)
    const score = sharedArray(Float64Array, n)
    const ambiguous = sharedArray(Uint8Array, n)
    const amountDelta = sharedArray(Float64Array, n)
    const daysDelta = sharedArray(Float64Array, n)
    for (let i = 0; i < n; i++) {
      const k = order[i]
      pass[i] = this.pass[k]
      score[i] = this.score[k]
      ambiguous[i] = this.ambiguous[k]
      amountDelta[i] = this.amount[k]
      daysDelta[i] = this.days[k]
    }
    const set: MatchSet = {
      count: n,
      pass,
      score,
      ambiguous,
      amountDelta,
      daysDelta,
      leftStart,
      leftRows,
      rightStart,
      rightRows,
    }
    return this.withWaterfalls(set, order)
  }

  /** The waterfall entries in the matches' final order, when any match has one. */
  private withWaterfalls(set: MatchSet, order: Int32Array): MatchSet {
    const log = this.waterfalls
    if (log === null) return set
    const entry = largeArray(Int32Array, set.count)
    for (let i = 0; i < set.count; i++) entry[i] = this.detail[order[i]]
    set.waterfall = {
      entry,
      start: Int32Array.from(log.start),
      level: Uint8Array.from(log.level),
      weight: Float64Array.from(log.weight),
    }
    return set
  }

  /**
   * order[i] = the match that goes to place i (see finish); `passesInOrder`: every match already
   * sits among its own pass's places, so the order leaves `pass` as it is.
   */
  private order(passOrder: number[], leftLength: number): { order: Int32Array; passesInOrder: boolean } {
    const n = this.n
    const byFirstLeft = largeArray(Int32Array, leftLength).fill(-1)
    const leftStarts = this.leftStart
    const leftRowsIn = this.leftRows
    for (let k = 0; k < n; k++) byFirstLeft[leftRowsIn[leftStarts[k]]] = k
    // the rank of each pass in the order passes ran, then a stable bucket per pass
    const rank = new Int32Array(Math.max(0, ...passOrder) + 1)
    passOrder.forEach((p, r) => (rank[p] = r))
    const bucketStart = new Int32Array(passOrder.length + 1)
    for (let k = 0; k < n; k++) bucketStart[rank[this.pass[k]] + 1]++
    for (let r = 0; r < passOrder.length; r++) bucketStart[r + 1] += bucketStart[r]
    // each match's place will be within its pass's bucket: is it there already?
    let passesInOrder = true
    for (let k = 0; k < n && passesInOrder; k++) {
      const r = rank[this.pass[k]]
      passesInOrder = k >= bucketStart[r] && k < bucketStart[r + 1]
    }
    const order = largeArray(Int32Array, n)
    for (let row = 0; row < leftLength; row++) {
      const k = byFirstLeft[row]
      if (k >= 0) order[bucketStart[rank[this.pass[k]]]++] = k
    }
    return { order, passesInOrder }
  }

  /**
   * Every match is one record a side (1:1 passes without ties): the starts are 0, 1, 2, … as
   * they are, and only the other arrays are put in order. Each is gathered (out[i] =
   * src[order[i]]): its reads are independent, so the processor overlaps their cache misses,
   * where following the permutation's cycles in place made every read wait for the one before
   * (three times slower on a million matches). One spare array per element type is enough: the
   * array just gathered from is the next one's destination. Arrays the order cannot change are
   * left alone: `pass` when the passes emitted their matches one after the other (as they run; a
   * match then stays among its pass's places), `ambiguous` when it is all zeros.
   */
  private gatherInOrder(order: Int32Array, passesInOrder: boolean): MatchSet {
    const n = this.n
    // one loop per array type (as in partition.ts): a loop that met several typed-array classes
    // would go megamorphic
    let spareF64: Float64Array = sharedArray(Float64Array, n)
    const f64 = (src: Float64Array): Float64Array => {
      const out = spareF64
      for (let i = 0; i < n; i++) out[i] = src[order[i]]
      spareF64 = src
      return out.subarray(0, n)
    }
    let spareI32: Int32Array = sharedArray(Int32Array, n)
    const i32 = (src: Int32Array): Int32Array => {
      const out = spareI32
      for (let i = 0; i < n; i++) out[i] = src[order[i]]
      spareI32 = src
      return out.subarray(0, n)
    }
    const u8 = (src: Uint8Array): Uint8Array => {
      const out = sharedArray(Uint8Array, n)
      for (let i = 0; i < n; i++) out[i] = src[order[i]]
      return out
    }
    const ambiguous = this.ambiguous.subarray(0, n)
    const set: MatchSet = {
      count: n,
      score: f64(this.score),
      amountDelta: f64(this.amount),
      daysDelta: f64(this.days),
      leftRows: i32(this.leftRows),
      rightRows: i32(this.rightRows),
      pass: passesInOrder ? this.pass.subarray(0, n) : i32(this.pass),
      ambiguous: ambiguous.includes(1) ? u8(ambiguous) : ambiguous,
      leftStart: this.leftStart.subarray(0, n + 1),
      rightStart: this.rightStart.subarray(0, n + 1),
    }
    return this.withWaterfalls(set, order)
  }
}

function grow<T extends Int32Array | Float64Array | Uint8Array>(a: T): T {
  const bigger = sharedArray(a.constructor as unknown as Parameters<typeof sharedArray<T>>[0], a.length * 2)
  bigger.set(a)
  return bigger
}

export function emptyMatches(): MatchSet {
  return new MatchBuilder().finish([], 0)
}

export function emptyUnmatched(): UnmatchedSet {
  return {
    rows: new Int32Array(0),
    candidate: new Int32Array(0),
    pass: new Int32Array(0),
    conjunct: new Int32Array(0),
    candidateTaken: new Uint8Array(0),
    tiedWith: new Int32Array(0),
  }
}

// ---- JSON records --------------------------------------------------------------------------

export interface MatchRecord {
  match_id: string
  pass: string
  pattern: Pattern
  left_keys: string[]
  right_keys: string[]
  score: number
  deltas: { amount: string | null; days: number | null }
  ambiguous: boolean
  /** Probabilistic matches: what each comparison added to the match weight (the waterfall). */
  weights?: MatchWeights
}

export interface MatchWeights {
  /** log2 of the prior odds that two records match, where every match weight starts. */
  prior: number
  /** prior + comparisons + context: the match probability is 1 / (1 + 2^-match_weight). */
  match_weight: number
  comparisons: { name: string; level: string; weight: number }[]
  /**
   * What the two records' other candidates add under the one-to-one reading: positive when
   * neither has a rival (most records do have a partner), negative when one has a close rival.
   */
  context: number
}

export interface UnmatchedRecord {
  record_key: string
  closest_candidate: string | null
  failed: { pass: string; conjunct: string } | null
  reason: string
  /** The record `prefer` chose over this one for its closest candidate (a resolved tie), or null. */
  tied_with: string | null
}

/** What a serializer needs to know about the passes that ran. */
export interface PassInfo {
  name: string
  pattern: Pattern
  conjuncts: string[]
  /** The join conjuncts (keys or band), for "no candidate" reasons. */
  join: string
  amountScale: number
  /** Aggregate passes: how often the group search met its bounds (see aggregate.ts). */
  search?: { candidates_capped: number; visits_exhausted: number; groups_over_max: number }
  /** Probabilistic passes: what a waterfall's levels mean. */
  probabilistic?: { prior: number; threshold: number; comparisons: { name: string; levels: string[] }[] }
  /** 1:1 passes: how ties are resolved instead of held as ambiguous. */
  prefer?: Preference
}

/** A match's waterfall as JSON, from its levels and weights and its pass's comparisons. */
export function matchWeights(
  pass: PassInfo,
  levels: ArrayLike<number>,
  weights: ArrayLike<number>,
): MatchWeights | undefined {
  const p = pass.probabilistic
  if (!p) return undefined
  const round = (x: number) => Math.round(x * 1000) / 1000
  let total = p.prior
  const comparisons = p.comparisons.map((c, n) => {
    total += weights[n]
    return { name: c.name, level: c.levels[levels[n]] ?? 'no value', weight: round(weights[n]) }
  })
  // the entry after the comparisons, when there is one, is the one-to-one context
  const context = weights.length > p.comparisons.length ? weights[p.comparisons.length] : 0
  total += context
  return { prior: round(p.prior), match_weight: round(total), comparisons, context: round(context) }
}

/** What an unmatched record's reason adds when its pass's group search was cut short. */
function boundsNote(pass: PassInfo): string {
  const s = pass.search
  if (!s) return ''
  const parts: string[] = []
  if (s.candidates_capped) parts.push(`${s.candidates_capped} with candidates beyond the search's cap`)
  if (s.visits_exhausted) parts.push(`${s.visits_exhausted} stopped at its visit limit`)
  if (s.groups_over_max) parts.push(`${s.groups_over_max} groups over max_group`)
  return parts.length
    ? `; the pass's group search met its bounds (${parts.join(', ')}), so a group may have been missed`
    : ''
}

/** Record key of a row: its key columns' values, joined with | when there are several. */
export function recordKeyReader(table: Table, key: string[]): (row: number) => string {
  const idx = key.map((k) => {
    const n = table.columns.findIndex((c) => c.name === k)
    if (n < 0) throw new Error(`key column "${k}" is not in the source`)
    return n
  })
  if (idx.length === 1) {
    const col = table.data[idx[0]]
    // the common key, one text column: its bytes decoded directly (read once per record by
    // exceptions and indexes)
    if (col.type === 'string') return (row) => (col.valid !== null && col.valid[row] === 0 ? '' : stringAt(col, row))
    return (row) => String(jsonValue(col, row) ?? '')
  }
  return (row) => idx.map((n) => String(jsonValue(table.data[n], row) ?? '')).join('|')
}

export function matchId(k: number): string {
  return `m${String(k + 1).padStart(7, '0')}`
}

export function matchRecord(
  m: MatchSet,
  k: number,
  passes: PassInfo[],
  leftKey: (row: number) => string,
  rightKey: (row: number) => string,
): MatchRecord {
  const pass = passes[m.pass[k]]
  const left: string[] = []
  for (let n = m.leftStart[k]; n < m.leftStart[k + 1]; n++) left.push(leftKey(m.leftRows[n]))
  const right: string[] = []
  for (let n = m.rightStart[k]; n < m.rightStart[k + 1]; n++) right.push(rightKey(m.rightRows[n]))
  const amount = m.amountDelta[k]
  const days = m.daysDelta[k]
  return {
    match_id: matchId(k),
    pass: pass.name,
    pattern: pass.pattern,
    left_keys: left,
    right_keys: right,
    score: m.score[k],
    deltas: {
      amount: Number.isNaN(amount)
        ? null
        : pass.amountScale < 0
          ? String(amount)
          : formatDecimal(amount, pass.amountScale),
      days: Number.isNaN(days) ? null : days,
    },
    ambiguous: m.ambiguous[k] === 1,
    ...waterfallOf(m, k, pass),
  }
}

function waterfallOf(m: MatchSet, k: number, pass: PassInfo): { weights?: MatchWeights } {
  const w = m.waterfall
  const e = w ? w.entry[k] : 0
  if (!w || e === 0) return {}
  const from = w.start[e - 1]
  const to = w.start[e]
  const weights = matchWeights(pass, w.level.subarray(from, to), w.weight.subarray(from, to))
  return weights ? { weights } : {}
}

/** A record's nearest miss: the pass, the conjunct its candidate failed (null: it passed them all). */
export interface NearestMiss {
  pass: PassInfo | null
  conjunct: string | null
  candidate: string | null
  taken: boolean
  /** The record `prefer` chose over this one for the candidate. */
  tiedWith?: string | null
}

/** Why a record is unmatched, from its nearest miss: the fields an unmatched record carries. */
export function describeUnmatched(
  miss: NearestMiss,
  side: 'left' | 'right',
  passes: PassInfo[],
): { failed: UnmatchedRecord['failed']; reason: string } {
  const other = side === 'left' ? 'right' : 'left'
  const pass = miss.pass
  if (miss.candidate === null || pass === null) {
    const first = passes[0]
    return {
      failed: first ? { pass: first.name, conjunct: first.join } : null,
      reason: passes.length
        ? `no ${other} record shares its join in any pass (${passes.map((p) => `${p.name}: ${p.join}`).join('; ')})`
        : 'no pass ran',
    }
  }
  const taken = miss.taken ? ' (it was matched elsewhere)' : ''
  if (miss.tiedWith) {
    return {
      failed: { pass: pass.name, conjunct: '' },
      reason: `tied with ${miss.tiedWith} for ${miss.candidate} in pass ${pass.name}; prefer ${pass.prefer ?? ''} chose ${miss.tiedWith}`,
    }
  }
  if (miss.conjunct === null) {
    return {
      failed: { pass: pass.name, conjunct: '' },
      reason:
        pass.pattern === '1:1'
          ? `${miss.candidate}${taken} satisfies pass ${pass.name} but was outscored or tied`
          : `${miss.candidate}${taken} satisfies pass ${pass.name} but no group sums to the amount within tolerance${boundsNote(pass)}`,
    }
  }
  return {
    failed: { pass: pass.name, conjunct: miss.conjunct },
    reason: `closest candidate ${miss.candidate}${taken} failed ${miss.conjunct} in pass ${pass.name}`,
  }
}

export function unmatchedRecord(
  u: UnmatchedSet,
  k: number,
  side: 'left' | 'right',
  passes: PassInfo[],
  ownKey: (row: number) => string,
  otherKey: (row: number) => string,
): UnmatchedRecord {
  const candidate = u.candidate[k] < 0 ? null : otherKey(u.candidate[k])
  const pass = u.pass[k] < 0 ? null : passes[u.pass[k]]
  const conjunct = pass && u.conjunct[k] >= 0 ? pass.conjuncts[u.conjunct[k]] : null
  const tiedWith = u.tiedWith[k] < 0 ? null : ownKey(u.tiedWith[k])
  const miss = { pass, conjunct, candidate, taken: u.candidateTaken[k] === 1, tiedWith }
  return {
    record_key: ownKey(u.rows[k]),
    closest_candidate: candidate,
    ...describeUnmatched(miss, side, passes),
    tied_with: tiedWith,
  }
}
