// The band join of a pass without equality keys (the hash join is in hashpass.ts), and the
// compiled conjunct checks both joins use. Only rows listed (still free) take part.

import type { ExprType } from '../../language/types.js'
import type { ExprCompiler } from '../plan/compile.js'
import type { ConjunctChecks } from './hashpass.js'
import type { PassPlan } from '../plan/plan.js'

/**
 * Growable list of (left row, right row) pairs. `expected`: the pairs a pass will likely find
 * (about one per left record); allocated up front because unwritten pages cost nothing while
 * each doubling writes every pair again into fresh memory (see MatchBuilder).
 */
export class PairList {
  left: Int32Array
  right: Int32Array
  length = 0
  constructor(expected = 1024) {
    this.left = new Int32Array(Math.max(1024, expected))
    this.right = new Int32Array(Math.max(1024, expected))
  }
  push(i: number, j: number): void {
    if (this.length === this.left.length) {
      const l = new Int32Array(this.length * 2)
      l.set(this.left)
      this.left = l
      const r = new Int32Array(this.length * 2)
      r.set(this.right)
      this.right = r
    }
    this.left[this.length] = i
    this.right[this.length++] = j
  }
}

export function bandCandidates(
  plan: PassPlan,
  compiler: ExprCompiler,
  leftRows: Int32Array,
  rightRows: Int32Array,
  residual: (i: number, j: number) => boolean,
  onCandidate: (i: number, j: number) => void,
): void {
  const band = plan.band!
  const bandSide = band.side
  const [sortedRows, probeRows] = bandSide === 'r' ? [rightRows, leftRows] : [leftRows, rightRows]
  const colExpr = { kind: 'column', side: bandSide, name: band.column, pos: { start: 0, end: 0 } } as const
  // The band column and bounds in one comparable type (e.g. decimals at a common scale).
  let common: ExprType = compiler.typeOf(colExpr)
  for (const b of [band.lo, band.hi]) if (b) common = compiler.operands(colExpr, b)[2]
  const sortedRow = bandSide === 'r' ? 'j' : 'i'
  const probeRow = bandSide === 'r' ? 'i' : 'j'
  const value = compiler.build<(row: number) => number | null>(sortedRow, compiler.compile(colExpr, common).code)
  const lo = band.lo
    ? compiler.build<(row: number) => number | null>(probeRow, compiler.compile(band.lo, common).code)
    : null
  const hi = band.hi
    ? compiler.build<(row: number) => number | null>(probeRow, compiler.compile(band.hi, common).code)
    : null

  const keys = new Float64Array(sortedRows.length)
  const ids = new Int32Array(sortedRows.length)
  let count = 0
  for (let n = 0; n < sortedRows.length; n++) {
    const v = value(sortedRows[n])
    if (v === null) continue
    keys[count] = v
    ids[count++] = sortedRows[n]
  }
  const order = new Int32Array(count)
  for (let n = 0; n < count; n++) order[n] = n
  order.sort((a, b) => keys[a] - keys[b] || ids[a] - ids[b])
  const sortedKeys = new Float64Array(count)
  const sortedIds = new Int32Array(count)
  for (let n = 0; n < count; n++) {
    sortedKeys[n] = keys[order[n]]
    sortedIds[n] = ids[order[n]]
  }
  for (let m = 0; m < probeRows.length; m++) {
    const p = probeRows[m]
    const low = lo ? lo(p) : Number.NEGATIVE_INFINITY
    const high = hi ? hi(p) : Number.POSITIVE_INFINITY
    if (low === null || high === null) continue
    for (let n = lowerBound(sortedKeys, low); n < count && sortedKeys[n] <= high; n++) {
      const s = sortedIds[n]
      if (bandSide === 'r' ? residual(p, s) : residual(s, p)) {
        if (bandSide === 'r') onCandidate(p, s)
        else onCandidate(s, p)
      }
    }
  }
}

function lowerBound(a: Float64Array, v: number): number {
  let lo = 0
  let hi = a.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (a[mid] < v) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** Bits available for individual conjuncts; any beyond share the last bit. */
const CONJUNCT_BITS = 30

/**
 * One compiled function telling which of a pass's conjuncts a pair fails, as a bitmask. The key
 * equalities of a hash pass hold for every pair its join produces, so they are not checked.
 */
export function conjunctChecks(plan: PassPlan, compiler: ExprCompiler): ConjunctChecks {
  const keyConjuncts = new Set(plan.keys.map((k) => k.conjunct))
  const checked = plan.conjuncts.filter((c) => !keyConjuncts.has(c.index))
  const total = plan.conjuncts.length
  if (checked.length === 0) return { failed: () => 0, checked: [], total }
  const test = (c: (typeof checked)[number]) => `${compiler.compile(c.expr).code} === true`
  const own = checked.slice(0, CONJUNCT_BITS)
  const rest = checked.slice(CONJUNCT_BITS)
  const terms = own.map((c, b) => `(${test(c)} ? 0 : ${2 ** b})`)
  if (rest.length) terms.push(`(${rest.map(test).join(' && ')} ? 0 : ${2 ** CONJUNCT_BITS})`)
  return {
    failed: compiler.build<(i: number, j: number) => number>('i, j', terms.join(' | ')),
    checked: [...own, ...rest.slice(0, 1)].map((c) => c.index),
    total,
  }
}
