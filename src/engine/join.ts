// Candidate pairs for a pass: a hash join on the plan's keys, or a band join on its range, then
// the residual conjuncts, compiled once, checked on each candidate. Only rows still available
// (not matched by an earlier pass) take part.

import type { ExprType } from '../recipes/types.js'
import type { ExprCompiler } from './compile.js'
import { hashJoin, type JoinKeys } from './keys.js'
import type { PassPlan } from './plan.js'

/** Growable list of (left row, right row) pairs. */
export class PairList {
  left = new Int32Array(1024)
  right = new Int32Array(1024)
  length = 0
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

/** Candidates from the plan's equality keys: a hash join, then the residual on each pair. */
export function hashCandidates(
  keys: JoinKeys,
  leftRows: Int32Array,
  rightRows: Int32Array,
  residual: (i: number, j: number) => boolean,
  onCandidate: (i: number, j: number) => void,
): void {
  hashJoin(keys, leftRows, rightRows, (i, j) => {
    if (residual(i, j)) onCandidate(i, j)
  })
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

/** All residual conjuncts as one compiled test: each must be TRUE (NULL rejects, as in SQL). */
export function residualTest(plan: PassPlan, compiler: ExprCompiler): (i: number, j: number) => boolean {
  if (plan.residuals.length === 0) return () => true
  const body = plan.residuals.map((c) => `${compiler.compile(c.expr).code} === true`).join(' && ')
  return compiler.build<(i: number, j: number) => boolean>('i, j', body)
}

/** One compiled test per conjunct, to say which conjunct rejected a near miss. */
export function conjunctTests(plan: PassPlan, compiler: ExprCompiler): ((i: number, j: number) => boolean)[] {
  return plan.conjuncts.map((c) =>
    compiler.build<(i: number, j: number) => boolean>('i, j', `${compiler.compile(c.expr).code} === true`),
  )
}
