// The evidence of a run, kept in columns: a million matches are a handful of typed arrays, not a
// million objects. Records are row numbers into the run's input tables; JSON records in the
// shape of DESIGN §2 are made on demand, one page at a time.

import type { Pattern } from '../recipes/schema.js'
import { jsonValue } from './builder.js'
import type { Table } from './table.js'
import { formatDecimal } from './values.js'

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
}

/**
 * Collects matches into growable typed arrays. Written out field by field (no generic growable
 * helper) so each store stays monomorphic: this runs once per match, a million times per run.
 */
export class MatchBuilder {
  private cap = 1024
  private n = 0
  private pass = new Int32Array(this.cap)
  private score = new Float64Array(this.cap)
  private ambiguous = new Uint8Array(this.cap)
  private amount = new Float64Array(this.cap)
  private days = new Float64Array(this.cap)
  private leftStart = new Int32Array(this.cap + 1)
  private rightStart = new Int32Array(this.cap + 1)
  private leftRows = new Int32Array(this.cap)
  private rightRows = new Int32Array(this.cap)
  private nl = 0
  private nr = 0

  get count(): number {
    return this.n
  }

  /** One left record with one right record (the common case: no arrays allocated). */
  pair(pass: number, i: number, j: number, score: number, ambiguous: boolean, amount: number, days: number): void {
    this.head(pass, score, ambiguous, amount, days)
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
  ): void {
    this.head(pass, score, ambiguous, amount, days)
    while (this.nl + left.length > this.leftRows.length) this.leftRows = grow(this.leftRows)
    while (this.nr + right.length > this.rightRows.length) this.rightRows = grow(this.rightRows)
    for (let k = 0; k < left.length; k++) this.leftRows[this.nl++] = left[k]
    for (let k = 0; k < right.length; k++) this.rightRows[this.nr++] = right[k]
  }

  private head(pass: number, score: number, ambiguous: boolean, amount: number, days: number): void {
    if (this.n === this.cap) {
      this.cap *= 2
      this.pass = grow(this.pass)
      this.score = grow(this.score)
      this.ambiguous = grow(this.ambiguous)
      this.amount = grow(this.amount)
      this.days = grow(this.days)
      this.leftStart = grow(this.leftStart)
      this.rightStart = grow(this.rightStart)
    }
    const k = this.n++
    this.pass[k] = pass
    this.score[k] = score
    this.ambiguous[k] = ambiguous ? 1 : 0
    this.amount[k] = amount
    this.days[k] = days
    this.leftStart[k] = this.nl
    this.rightStart[k] = this.nr
  }

  finish(): MatchSet {
    const n = this.n
    this.leftStart[n] = this.nl
    this.rightStart[n] = this.nr
    return {
      count: n,
      pass: this.pass.slice(0, n),
      score: this.score.slice(0, n),
      ambiguous: this.ambiguous.slice(0, n),
      amountDelta: this.amount.slice(0, n),
      daysDelta: this.days.slice(0, n),
      leftStart: this.leftStart.slice(0, n + 1),
      leftRows: this.leftRows.slice(0, this.nl),
      rightStart: this.rightStart.slice(0, n + 1),
      rightRows: this.rightRows.slice(0, this.nr),
    }
  }
}

function grow<T extends Int32Array | Float64Array | Uint8Array>(a: T): T {
  const bigger = new (a.constructor as new (n: number) => T)(a.length * 2)
  bigger.set(a)
  return bigger
}

export function emptyMatches(): MatchSet {
  return new MatchBuilder().finish()
}

export function emptyUnmatched(): UnmatchedSet {
  return {
    rows: new Int32Array(0),
    candidate: new Int32Array(0),
    pass: new Int32Array(0),
    conjunct: new Int32Array(0),
    candidateTaken: new Uint8Array(0),
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
}

export interface UnmatchedRecord {
  record_key: string
  closest_candidate: string | null
  failed: { pass: string; conjunct: string } | null
  reason: string
}

/** What a serializer needs to know about the passes that ran. */
export interface PassInfo {
  name: string
  pattern: Pattern
  conjuncts: string[]
  /** The join conjuncts (keys or band), for "no candidate" reasons. */
  join: string
  amountScale: number
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
  const other = side === 'left' ? 'right' : 'left'
  const key = ownKey(u.rows[k])
  if (u.candidate[k] < 0) {
    const first = passes[0]
    return {
      record_key: key,
      closest_candidate: null,
      failed: first ? { pass: first.name, conjunct: first.join } : null,
      reason: passes.length
        ? `no ${other} record shares its join in any pass (${passes.map((p) => `${p.name}: ${p.join}`).join('; ')})`
        : 'no pass ran',
    }
  }
  const pass = passes[u.pass[k]]
  const candidate = otherKey(u.candidate[k])
  const taken = u.candidateTaken[k] ? ' (it was matched elsewhere)' : ''
  if (u.conjunct[k] < 0) {
    return {
      record_key: key,
      closest_candidate: candidate,
      failed: { pass: pass.name, conjunct: '' },
      reason:
        pass.pattern === '1:1'
          ? `${candidate}${taken} satisfies pass ${pass.name} but was outscored or tied`
          : `${candidate}${taken} satisfies pass ${pass.name} but no group sums to the amount within tolerance`,
    }
  }
  const conjunct = pass.conjuncts[u.conjunct[k]]
  return {
    record_key: key,
    closest_candidate: candidate,
    failed: { pass: pass.name, conjunct },
    reason: `closest candidate ${candidate}${taken} failed ${conjunct} in pass ${pass.name}`,
  }
}
