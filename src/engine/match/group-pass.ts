// Aggregate passes (1:N, N:1, N:M) once their candidates are known: the recipe's equation compiled
// over the pass's tables (per-record amounts of the summed side, `equals` of the other), then groups
// found by the bounded subset-sum search (aggregate.ts) or, for N:M, as connected components of the
// candidate graph whose sums agree.

import { parseAggregate } from '../../language/aggregate-check.js'
import type { Side } from '../../language/predicate.js'
import type { RecipePass } from '../../recipes/schema.js'
import { CompileError, type ExprCompiler } from '../plan/compile.js'
import { matchGroups, noBounds, type SearchBounds } from './aggregate.js'
import { GroupEquation } from './equation.js'
import type { PairList } from './join.js'
import type { PreparedPass } from './pass.js'

/** An aggregate pass's amounts as integer units, its equation and its limits. */
export interface PreparedAggregate {
  sumSide: Side
  /** The summed side's per-record amount (SUM's argument), in units at its own scale. */
  each: (row: number) => number | null
  /** The other side's `equals`, in units at its own scale. */
  equals: (row: number) => number | null
  equation: GroupEquation
  maxGroup: number
}

export function prepareAggregate(pass: RecipePass, c: ExprCompiler): PreparedAggregate {
  const agg = pass.aggregate
  if (!agg)
    throw new Error(`pass "${pass.name}" (${pass.pattern}) needs an aggregate: { sum, equals, tolerance, max_group }`)
  const parsed = parseAggregate(agg, pass.pattern)
  const each = c.compile(parsed.sum.each)
  const equals = c.compile(parsed.equals)
  for (const [what, x] of [
    ['SUM(...)', each],
    ['aggregate.equals', equals],
  ] as const) {
    if (x.type.kind !== 'decimal' && x.type.kind !== 'integer')
      throw new CompileError(`${what} must be an exact amount (decimal or integer), not a ${x.type.kind}`)
  }
  const row = (s: Side) => (s === 'l' ? 'i' : 'j')
  return {
    sumSide: parsed.sum.side,
    each: c.build(row(parsed.sum.side), each.code),
    equals: c.build(row(parsed.equalsSide), equals.code),
    equation: new GroupEquation(parsed.sum, each.type.scale ?? 0, equals.type.scale ?? 0, parsed.tolerance),
    maxGroup: agg.max_group ?? 5,
  }
}

type GroupSink = (l: number[], r: number[], score: number, ambiguous: boolean, amount: number, days: number) => void

export function aggregatePass(
  p: PreparedPass,
  pairs: PairList,
  leftFree: Uint8Array,
  rightFree: Uint8Array,
  emit: GroupSink,
): SearchBounds {
  const bounds = noBounds()
  const agg = p.aggregate!
  const { equation } = agg
  const tolerance = equation.toleranceUnits
  const closeness = (delta: number) => 0.5 + 0.5 * (1 - Math.min(1, Math.abs(delta) / Math.max(1, tolerance * 2)))
  // deltas are left minus right: the group's value minus `equals` when the sum is on the left
  const leftMinusRight = (delta: number) => (agg.sumSide === 'l' ? delta : -delta)

  if (p.pass.pattern === 'N:M') {
    const sumAmount = agg.each
    // max_group bounds each side of an N:M group only when the recipe declares it
    const limit = p.pass.aggregate?.max_group ?? Infinity
    for (const g of keyGroups(pairs, leftFree.length, rightFree.length)) {
      if (g.left.length > limit || g.right.length > limit) {
        bounds.groups_over_max++
        continue
      }
      const [summed, other] = agg.sumSide === 'l' ? [g.left, g.right] : [g.right, g.left]
      // `equals` of an N:M group is the sum of its records' values
      const sum = total(summed, sumAmount)
      const equals = total(other, agg.equals)
      if (sum === null || equals === null) continue
      const w = equation.window(equals)
      if (sum < w.lo || sum > w.hi) continue
      for (const i of g.left) leftFree[i] = 0
      for (const j of g.right) rightFree[j] = 0
      const delta = equation.delta(equals, sum)
      emit(g.left, g.right, closeness(delta), false, leftMinusRight(delta), Number.NaN)
    }
    return bounds
  }

  // 1:N: one left against many right (sum on r); N:1: one right against many left (sum on l)
  const oneSide: Side = p.pass.pattern === '1:N' ? 'l' : 'r'
  const candidates = new Map<number, number[]>()
  for (let n = 0; n < pairs.length; n++) {
    const one = oneSide === 'l' ? pairs.left[n] : pairs.right[n]
    const many = oneSide === 'l' ? pairs.right[n] : pairs.left[n]
    const list = candidates.get(one)
    if (list) list.push(many)
    else candidates.set(one, [many])
  }
  const oneFree = oneSide === 'l' ? leftFree : rightFree
  const manyFree = oneSide === 'l' ? rightFree : leftFree
  const likeness = p.scorer.likeness
  const rank = oneSide === 'l' ? likeness : (one: number, many: number) => likeness(many, one)
  const windowOf = (one: number) => {
    const equals = agg.equals(one)
    return equals === null ? null : equation.window(equals)
  }
  for (const g of matchGroups(candidates, windowOf, agg.each, agg.maxGroup, manyFree, rank, bounds)) {
    oneFree[g.one] = 0
    const many = [...g.many, ...(g.alternatives ?? [])].sort((a, b) => a - b)
    const l = oneSide === 'l' ? [g.one] : many
    const r = oneSide === 'l' ? many : [g.one]
    const delta = equation.delta(agg.equals(g.one)!, g.sum)
    emit(l, r, closeness(delta), g.ambiguous, leftMinusRight(delta), p.scorer.days(l[0], r[0]))
  }
  return bounds
}

/** The sum of `amount` over `rows`, in units; null when one is NULL (a group of unknown sum never matches). */
function total(rows: number[], amount: (row: number) => number | null): number | null {
  let sum = 0
  for (const k of rows) {
    const v = amount(k)
    if (v === null) return null
    sum += v
  }
  return sum
}

/** N:M groups: connected components of the candidate graph (records sharing the pass's keys). */
function keyGroups(pairs: PairList, leftLength: number, rightLength: number): { left: number[]; right: number[] }[] {
  // nodes: left rows 0..L-1, right rows L..L+R-1
  const parent = new Int32Array(leftLength + rightLength).fill(-1)
  const find = (x: number): number => {
    let root = x
    while (parent[root] !== root) root = parent[root]
    while (parent[x] !== root) {
      const up = parent[x]
      parent[x] = root
      x = up
    }
    return root
  }
  for (let n = 0; n < pairs.length; n++) {
    const a = pairs.left[n]
    const b = leftLength + pairs.right[n]
    if (parent[a] < 0) parent[a] = a
    if (parent[b] < 0) parent[b] = b
    const ra = find(a)
    const rb = find(b)
    if (ra !== rb) parent[ra] = rb
  }
  const groups = new Map<number, { left: number[]; right: number[] }>()
  for (let x = 0; x < parent.length; x++) {
    if (parent[x] < 0) continue
    const root = find(x)
    let g = groups.get(root)
    if (!g) {
      g = { left: [], right: [] }
      groups.set(root, g)
    }
    if (x < leftLength) g.left.push(x)
    else g.right.push(x - leftLength)
  }
  return [...groups.values()]
}
