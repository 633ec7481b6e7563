// The band join of a pass without equality keys (the hash join is in hashpass.ts): one band
// option's column sorted, each record of the other side searching its bounds. Only rows listed
// (still free) take part. Which option a pass uses is chosen on the data (band-choice.ts).

import type { ExprType } from '../../language/types.js'
import type { ExprCompiler } from '../plan/compile.js'
import type { Band } from '../plan/plan.js'

/**
 * Growable list of (left row, right row) pairs. `expected`: the pairs a pass will likely find
 * (about one per left record); allocated up front because unwritten pages cost nothing while
 * each doubling writes every pair again into fresh memory (see MatchBuilder). With `values`, a
 * number is kept with each pair (the similarity its check computed), for `valueOf`.
 */
export class PairList {
  left: Int32Array
  right: Int32Array
  values: Float64Array | null
  length = 0
  constructor(expected = 1024, values = false) {
    this.left = new Int32Array(Math.max(1024, expected))
    this.right = new Int32Array(Math.max(1024, expected))
    this.values = values ? new Float64Array(this.left.length) : null
  }
  push(i: number, j: number): void {
    if (this.length === this.left.length) this.grow()
    this.left[this.length] = i
    this.right[this.length++] = j
  }
  pushValue(i: number, j: number, value: number): void {
    if (this.length === this.left.length) this.grow()
    this.values![this.length] = value
    this.left[this.length] = i
    this.right[this.length++] = j
  }
  private grow(): void {
    const l = new Int32Array(this.length * 2)
    l.set(this.left)
    this.left = l
    const r = new Int32Array(this.length * 2)
    r.set(this.right)
    this.right = r
    if (this.values) {
      const v = new Float64Array(this.length * 2)
      v.set(this.values)
      this.values = v
    }
  }

  /**
   * The value kept with a pair, looked up by its rows (NaN for a pair not in the list): an
   * open-addressing table over the pairs, built once, so assignment can keep asking by rows.
   */
  valueOf(): (i: number, j: number) => number {
    const values = this.values
    if (values === null || this.length === 0) return () => Number.NaN
    let size = 16
    while (size < this.length * 2) size *= 2
    const mask = size - 1
    const slots = new Int32Array(size).fill(-1)
    const slotOf = (i: number, j: number) => (Math.imul(i, 0x9e3779b1) ^ Math.imul(j, 0x85ebca6b)) & mask
    for (let n = 0; n < this.length; n++) {
      let s = slotOf(this.left[n], this.right[n])
      while (slots[s] >= 0) s = (s + 1) & mask
      slots[s] = n
    }
    const { left, right } = this
    return (i, j) => {
      for (let s = slotOf(i, j); ; s = (s + 1) & mask) {
        const n = slots[s]
        if (n < 0) return Number.NaN
        if (left[n] === i && right[n] === j) return values[n]
      }
    }
  }
}

/** A band option compiled over a pass's tables: the sorted column and the probe's bounds, in one type. */
export interface CompiledBand {
  band: Band
  /** `side.column`, as explain and the pass report name it. */
  name: string
  value: (row: number) => number | null
  lo: ((row: number) => number | null) | null
  hi: ((row: number) => number | null) | null
  /**
   * Float bounds are widened by a few parts in 2^40: the band computes `center ± t` where the
   * predicate computes `|a - b| <= t`, and float rounding of the two may differ. A band only
   * prunes, so it errs wide; exact types (decimal units, integers, dates) need no margin.
   */
  float: boolean
}

export function compileBand(band: Band, compiler: ExprCompiler): CompiledBand {
  const colExpr = { kind: 'column', side: band.side, name: band.column, pos: { start: 0, end: 0 } } as const
  // the band column and bounds in one comparable type (e.g. decimals at a common scale)
  let common: ExprType = compiler.typeOf(colExpr)
  for (const b of [band.lo, band.hi]) if (b) common = compiler.operands(colExpr, b)[2]
  const sortedRow = band.side === 'r' ? 'j' : 'i'
  const probeRow = band.side === 'r' ? 'i' : 'j'
  const bound = (e: Band['lo']) =>
    e ? compiler.build<(row: number) => number | null>(probeRow, compiler.compile(e, common).code) : null
  return {
    band,
    name: `${band.side}.${band.column}`,
    value: compiler.build<(row: number) => number | null>(sortedRow, compiler.compile(colExpr, common).code),
    lo: bound(band.lo),
    hi: bound(band.hi),
    float: common.kind === 'float',
  }
}

const MARGIN = 2 ** -40

/** The band side's rows with a value, sorted by it (then by row, so the order is deterministic). */
export function sortedBand(b: CompiledBand, rows: Int32Array): { keys: Float64Array; ids: Int32Array } {
  const keys = new Float64Array(rows.length)
  const ids = new Int32Array(rows.length)
  let count = 0
  for (let n = 0; n < rows.length; n++) {
    const v = b.value(rows[n])
    if (v === null) continue
    keys[count] = v
    ids[count++] = rows[n]
  }
  const order = new Int32Array(count)
  for (let n = 0; n < count; n++) order[n] = n
  order.sort((x, y) => keys[x] - keys[y] || ids[x] - ids[y])
  const sortedKeys = new Float64Array(count)
  const sortedIds = new Int32Array(count)
  for (let n = 0; n < count; n++) {
    sortedKeys[n] = keys[order[n]]
    sortedIds[n] = ids[order[n]]
  }
  return { keys: sortedKeys, ids: sortedIds }
}

/** A probe row's bounds, [-∞, +∞] where open, or null when a bound is NULL (no pair can hold). */
export function probeBounds(b: CompiledBand, row: number): [number, number] | null {
  let low = b.lo ? b.lo(row) : Number.NEGATIVE_INFINITY
  let high = b.hi ? b.hi(row) : Number.POSITIVE_INFINITY
  if (low === null || high === null) return null
  if (b.float) {
    const margin = (Math.abs(low) + Math.abs(high) + 1) * MARGIN
    if (Number.isFinite(low)) low -= margin
    if (Number.isFinite(high)) high += margin
  }
  return [low, high]
}

/**
 * Visits every (left, right) pair of the listed rows within the band: `visit` is called with the
 * pair in left, right order and returns false to end the current probe record's search. Returns
 * the number of pairs visited.
 */
export function bandPairs(
  b: CompiledBand,
  leftRows: Int32Array,
  rightRows: Int32Array,
  visit: (i: number, j: number) => boolean,
): number {
  const sortedRight = b.band.side === 'r'
  const { keys, ids } = sortedBand(b, sortedRight ? rightRows : leftRows)
  const probeRows = sortedRight ? leftRows : rightRows
  const count = keys.length
  let visited = 0
  for (let m = 0; m < probeRows.length; m++) {
    const p = probeRows[m]
    const bounds = probeBounds(b, p)
    if (bounds === null) continue
    const high = bounds[1]
    let n = lowerBound(keys, bounds[0])
    if (sortedRight) {
      for (; n < count && keys[n] <= high; n++) {
        visited++
        if (!visit(p, ids[n])) break
      }
    } else {
      for (; n < count && keys[n] <= high; n++) {
        visited++
        if (!visit(ids[n], p)) break
      }
    }
  }
  return visited
}

export function lowerBound(a: Float64Array, v: number): number {
  let lo = 0
  let hi = a.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (a[mid] < v) lo = mid + 1
    else hi = mid
  }
  return lo
}

export function upperBound(a: Float64Array, v: number): number {
  let lo = 0
  let hi = a.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (a[mid] <= v) lo = mid + 1
    else hi = mid
  }
  return lo
}
