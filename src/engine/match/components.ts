// The connected components of a 1:1 pass's contested pairs (records with another candidate, and
// theirs), found once for the pass, each loaded in turn into the workspace of its assignment.

import type { Workspace } from './workspace.js'

/**
 * Connected components of the contested pairs, built once for all: pairs ordered by component
 * (a counting sort), so a component is loaded by copying a slice.
 */
export class ContestedComponents {
  readonly count: number
  private readonly pairStart: Int32Array
  private readonly pairs: Int32Array
  private readonly leftDense: Int32Array
  private readonly rightDense: Int32Array
  private readonly localLeft: Int32Array
  private readonly localRight: Int32Array
  private readonly contested: number[]

  constructor(
    private readonly pairsLeft: Int32Array,
    private readonly pairsRight: Int32Array,
    contested: number[],
    leftLength: number,
    rightLength: number,
  ) {
    // dense ids of the contested records (id + 1; 0 = none): fresh zeroed memory, written only
    // where a contested record is, so a pass with few contested pairs touches few pages
    const leftId = new Int32Array(leftLength)
    const rightId = new Int32Array(rightLength)
    let nl = 0
    let nr = 0
    for (const n of contested) {
      if (leftId[pairsLeft[n]] === 0) leftId[pairsLeft[n]] = ++nl
      if (rightId[pairsRight[n]] === 0) rightId[pairsRight[n]] = ++nr
    }
    const parent = new Int32Array(nl + nr)
    for (let x = 0; x < parent.length; x++) parent[x] = x
    const find = (x: number): number => {
      while (parent[x] !== x) x = parent[x] = parent[parent[x]]
      return x
    }
    const c = contested.length
    this.leftDense = new Int32Array(c)
    this.rightDense = new Int32Array(c)
    for (let k = 0; k < c; k++) {
      const l = (this.leftDense[k] = leftId[pairsLeft[contested[k]]] - 1)
      const r = (this.rightDense[k] = rightId[pairsRight[contested[k]]] - 1)
      const a = find(l)
      const b = find(nl + r)
      if (a !== b) parent[a] = b
    }
    // component numbers in order of first appearance
    const number = new Int32Array(nl + nr).fill(-1)
    let components = 0
    const componentOf = new Int32Array(c)
    for (let k = 0; k < c; k++) {
      const root = find(this.leftDense[k])
      if (number[root] < 0) number[root] = components++
      componentOf[k] = number[root]
    }
    this.pairs = countingSort(componentOf, components, null)
    this.pairStart = new Int32Array(components + 1)
    for (let k = 0; k < c; k++) this.pairStart[componentOf[k] + 1]++
    for (let k = 0; k < components; k++) this.pairStart[k + 1] += this.pairStart[k]
    this.count = components
    this.contested = contested
    this.localLeft = new Int32Array(nl).fill(-1)
    this.localRight = new Int32Array(nr).fill(-1)
  }

  /**
   * Copies component k into the workspace, its records numbered from 0 in order of appearance and
   * its pairs grouped by record of the smaller side, which becomes the workspace's left side
   * (`flipped` when that is the right side): the exact search runs once per record of that side.
   */
  load(k: number, w: Workspace): void {
    const { pairs, leftDense, rightDense, localLeft, localRight } = this
    const from = this.pairStart[k]
    const to = this.pairStart[k + 1]
    let nl = 0
    let nr = 0
    for (let x = from; x < to; x++) {
      const p = pairs[x]
      if (localLeft[leftDense[p]] < 0) localLeft[leftDense[p]] = nl++
      if (localRight[rightDense[p]] < 0) localRight[rightDense[p]] = nr++
    }
    const flipped = nl > nr
    const rows = flipped ? nr : nl
    w.reserve(rows, flipped ? nl : nr, to - from)
    w.flipped = flipped
    const { start, cursor } = w
    start.fill(0, 0, rows + 1)
    for (let x = from; x < to; x++) {
      const p = pairs[x]
      start[(flipped ? localRight[rightDense[p]] : localLeft[leftDense[p]]) + 1]++
    }
    for (let i = 0; i < rows; i++) start[i + 1] += start[i]
    cursor.set(start.subarray(0, rows))
    for (let x = from; x < to; x++) {
      const p = pairs[x]
      const n = this.contested[p]
      const l = localLeft[leftDense[p]]
      const r = localRight[rightDense[p]]
      const [row, col] = flipped ? [r, l] : [l, r]
      const e = cursor[row]++
      w.edgeLeft[e] = row
      w.edgeRight[e] = col
      w.leftRow[row] = flipped ? this.pairsRight[n] : this.pairsLeft[n]
      w.rightRow[col] = flipped ? this.pairsLeft[n] : this.pairsRight[n]
    }
    for (let x = from; x < to; x++) {
      localLeft[leftDense[pairs[x]]] = -1
      localRight[rightDense[pairs[x]]] = -1
    }
  }
}

/** Indices 0..n-1 (or `input`'s order) stably sorted by `key` (values in 0..buckets-1). */
function countingSort(key: Int32Array, buckets: number, input: Int32Array | null): Int32Array {
  const n = key.length
  const start = new Int32Array(buckets + 1)
  for (let k = 0; k < n; k++) start[key[k] + 1]++
  for (let b = 0; b < buckets; b++) start[b + 1] += start[b]
  const out = new Int32Array(n)
  for (let x = 0; x < n; x++) {
    const k = input === null ? x : input[x]
    out[start[key[k]]++] = k
  }
  return out
}
