// The band join of a pass without equality keys (the hash join is in hashpass.ts): one band
// option's column sorted, each record of the other side searching its bounds. Only rows listed
// (still free) take part. Which option a pass uses is chosen on the data (band-choice.ts).

import { largeArray } from '../data/alloc.js'
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
    this.left = largeArray(Int32Array, Math.max(1024, expected))
    this.right = largeArray(Int32Array, Math.max(1024, expected))
    this.values = values ? largeArray(Float64Array, this.left.length) : null
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
  const keys = largeArray(Float64Array, rows.length)
  const ids = largeArray(Int32Array, rows.length)
  let count = 0
  for (let n = 0; n < rows.length; n++) {
    const v = b.value(rows[n])
    if (v === null) continue
    keys[count] = v
    ids[count++] = rows[n]
  }
  const order = largeArray(Int32Array, count)
  for (let n = 0; n < count; n++) order[n] = n
  order.sort((x, y) => keys[x] - keys[y] || ids[x] - ids[y])
  const sortedKeys = largeArray(Float64Array, count)
  const sortedIds = largeArray(Int32Array, count)
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
 * the number of pairs within the band (what band-choice.ts estimates), visited or not.
 *
 * `within`: other bands on the same sorted side (an amount band beside a date window). Their
 * columns are laid out in the band's sorted order, so a pair outside one is skipped by a compare
 * in the scan loop, not by a call per pair: a 21-day window holds thousands of records at a
 * million rows, the amount band within it a few dozen. Only for callers to whom a pair outside
 * them is no pair at all (their conjuncts are checked on every pair visited; bounds err wide).
 */
export function bandPairs(
  b: CompiledBand,
  leftRows: Int32Array,
  rightRows: Int32Array,
  visit: (i: number, j: number) => boolean,
  within: CompiledBand[] = [],
): number {
  const sortedRight = b.band.side === 'r'
  const { keys, ids } = sortedBand(b, sortedRight ? rightRows : leftRows)
  const probeRows = sortedRight ? leftRows : rightRows
  const count = keys.length
  // the other bands' columns in this band's order (NULL: NaN, outside every range)
  const filters = within.map((f) => {
    const values = largeArray(Float64Array, count)
    for (let n = 0; n < count; n++) values[n] = f.value(ids[n]) ?? Number.NaN
    return { band: f, values }
  })
  // without filters, the pairs visited (a visit may end a probe's search); with, those in the band
  let visited = 0
  let inBand = 0
  for (let m = 0; m < probeRows.length; m++) {
    const p = probeRows[m]
    const bounds = probeBounds(b, p)
    if (bounds === null) continue
    const high = bounds[1]
    const start = lowerBound(keys, bounds[0])
    let end = start
    while (end < count && keys[end] <= high) end++
    if (filters.length === 0) {
      for (let n = start; n < end; n++) {
        visited++
        if (!(sortedRight ? visit(p, ids[n]) : visit(ids[n], p))) break
      }
      continue
    }
    inBand += end - start
    if (filters.length === 1) {
      const f = probeBounds(filters[0].band, p)
      if (f !== null) scanWithin(filters[0].values, f[0], f[1], start, end, ids, p, sortedRight, visit)
      continue
    }
    const ranges = filters.map((f) => probeBounds(f.band, p))
    if (ranges.some((r) => r === null)) continue
    for (let n = start; n < end; n++) {
      if (filters.some((f, x) => !(f.values[n] >= ranges[x]![0] && f.values[n] <= ranges[x]![1]))) continue
      if (!(sortedRight ? visit(p, ids[n]) : visit(ids[n], p))) break
    }
  }
  return filters.length ? inBand : visited
}

/** The scan of one probe's range with one other band: a compare per pair in a tight loop. */
function scanWithin(
  values: Float64Array,
  low: number,
  high: number,
  start: number,
  end: number,
  ids: Int32Array,
  p: number,
  sortedRight: boolean,
  visit: (i: number, j: number) => boolean,
): void {
  for (let n = start; n < end; n++) {
    const v = values[n]
    if (!(v >= low && v <= high)) continue
    if (!(sortedRight ? visit(p, ids[n]) : visit(ids[n], p))) break
  }
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
