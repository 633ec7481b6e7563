// A component of contested candidates (assign.ts) and the arrays its exact assignment works in.
// Most contested components are tiny (a duplicate and its twin), so a component is loaded into a
// Workspace whose arrays are reused from one component to the next: allocating a dozen typed
// arrays per component cost more than solving it.

/** One connected component in a Workspace's arrays (valid up to nl, nr and edges entries). */
export interface Component {
  nl: number
  nr: number
  edges: number
  /** Pairs of left record i: start[i] .. start[i+1). */
  start: Int32Array
  edgeLeft: Int32Array
  edgeRight: Int32Array
  /** The score to maximize as an integer (quantizeWeight). */
  weight: Float64Array
  /** The pass's positions of the component's records. */
  leftRow: Int32Array
  rightRow: Int32Array
}

/**
 * A component and its solution, in arrays that grow to the largest component and are then
 * reused. Nodes: left records 0..nl-1, right records nl..nl+nr-1, each left record's
 * "unmatched" column nl+nr+i, and the sink 2nl+nr (nodeCount).
 */
export class Workspace implements Component {
  nl = 0
  nr = 0
  edges = 0
  start = new Int32Array(16)
  edgeLeft = new Int32Array(16)
  edgeRight = new Int32Array(16)
  weight = new Float64Array(16)
  leftRow = new Int32Array(16)
  rightRow = new Int32Array(16)
  /** The component's left records are the pass's right ones (its smaller side; assign.ts). */
  flipped = false
  cursor = new Int32Array(16)
  /** The solution: the pair matching left record i / right record j, or -1. */
  mateLeft = new Int32Array(16)
  mateRight = new Int32Array(16)
  /** Cost of each pair: the component's largest weight minus its weight (>= 0). */
  cost = new Float64Array(16)
  /** Node potentials, lexicographic pairs: (matches part, weight part). */
  potentialA = new Float64Array(16)
  potentialB = new Float64Array(16)
  // the searches'
  /** Infinity but where a search is under way. */
  distA = new Float64Array(16).fill(Infinity)
  distB = new Float64Array(16).fill(Infinity)
  settled = new Uint8Array(16)
  predRow = new Int32Array(16)
  predPair = new Int32Array(16)
  visited = new Int32Array(16)
  readonly heap = new PairHeap(16)
  // ties.ts's: the zero-cost arcs and their strongly connected components
  arcStart = new Int32Array(16)
  arcFill = new Int32Array(16)
  arcFrom = new Int32Array(16)
  arcTo = new Int32Array(16)
  arcPair = new Int32Array(16)
  sccIndex = new Int32Array(16)
  sccLow = new Int32Array(16)
  scc = new Int32Array(16)
  sccOnStack = new Uint8Array(16)
  sccStack = new Int32Array(16)
  callNode = new Int32Array(16)
  callArc = new Int32Array(16)
  optimal = new Uint8Array(16)

  get nodeCount(): number {
    return 2 * this.nl + this.nr + 1
  }

  /** Makes room for a component of this size; its contents are then written by the caller. */
  reserve(nl: number, nr: number, edges: number): void {
    this.nl = nl
    this.nr = nr
    this.edges = edges
    const nodes = 2 * nl + nr + 1
    const arcs = edges + 2 * nl + nr
    if (this.start.length <= nl) {
      this.start = new Int32Array(grown(nl + 1))
      this.cursor = new Int32Array(grown(nl + 1))
    }
    if (this.leftRow.length < nl) {
      this.leftRow = new Int32Array(grown(nl))
      this.mateLeft = new Int32Array(grown(nl))
    }
    if (this.rightRow.length < nr) {
      this.rightRow = new Int32Array(grown(nr))
      this.mateRight = new Int32Array(grown(nr))
    }
    if (this.edgeLeft.length < edges) {
      const n = grown(edges)
      this.edgeLeft = new Int32Array(n)
      this.edgeRight = new Int32Array(n)
      this.weight = new Float64Array(n)
      this.cost = new Float64Array(n)
      this.optimal = new Uint8Array(n)
    }
    if (this.potentialA.length < nodes + 1) {
      const n = grown(nodes + 1)
      this.potentialA = new Float64Array(n)
      this.potentialB = new Float64Array(n)
      this.distA = new Float64Array(n).fill(Infinity)
      this.distB = new Float64Array(n).fill(Infinity)
      this.settled = new Uint8Array(n)
      this.predRow = new Int32Array(n)
      this.predPair = new Int32Array(n)
      this.visited = new Int32Array(n)
      this.arcStart = new Int32Array(n)
      this.arcFill = new Int32Array(n)
      this.sccIndex = new Int32Array(n)
      this.sccLow = new Int32Array(n)
      this.scc = new Int32Array(n)
      this.sccOnStack = new Uint8Array(n)
      this.sccStack = new Int32Array(n)
      this.callNode = new Int32Array(n)
      this.callArc = new Int32Array(n)
    }
    if (this.arcFrom.length < arcs) {
      const n = grown(arcs)
      this.arcFrom = new Int32Array(n)
      this.arcTo = new Int32Array(n)
      this.arcPair = new Int32Array(n)
    }
  }
}

const grown = (n: number) => Math.max(16, 2 ** Math.ceil(Math.log2(n)))

/** A binary min-heap of nodes keyed by lexicographic pairs, with lazy deletion. */
export class PairHeap {
  private keysA: Float64Array
  private keysB: Float64Array
  private vals: Int32Array
  size = 0

  constructor(capacity: number) {
    this.keysA = new Float64Array(capacity)
    this.keysB = new Float64Array(capacity)
    this.vals = new Int32Array(capacity)
  }

  clear(): void {
    this.size = 0
  }

  private less(k: number, a: number, b: number): boolean {
    return this.keysA[k] < a || (this.keysA[k] === a && this.keysB[k] < b)
  }

  push(a: number, b: number, val: number): void {
    if (this.size === this.vals.length) {
      const grow = <T extends Float64Array | Int32Array>(x: T): T => {
        const bigger = new (x.constructor as new (n: number) => T)(x.length * 2)
        bigger.set(x)
        return bigger
      }
      this.keysA = grow(this.keysA)
      this.keysB = grow(this.keysB)
      this.vals = grow(this.vals)
    }
    let k = this.size++
    while (k > 0) {
      const up = (k - 1) >> 1
      if (!(a < this.keysA[up] || (a === this.keysA[up] && b < this.keysB[up]))) break
      this.keysA[k] = this.keysA[up]
      this.keysB[k] = this.keysB[up]
      this.vals[k] = this.vals[up]
      k = up
    }
    this.keysA[k] = a
    this.keysB[k] = b
    this.vals[k] = val
  }

  pop(): number {
    const top = this.vals[0]
    const n = --this.size
    const a = this.keysA[n]
    const b = this.keysB[n]
    const val = this.vals[n]
    let k = 0
    for (;;) {
      let child = 2 * k + 1
      if (child >= n) break
      if (child + 1 < n && this.less(child + 1, this.keysA[child], this.keysB[child])) child++
      if (!this.less(child, a, b)) break
      this.keysA[k] = this.keysA[child]
      this.keysB[k] = this.keysB[child]
      this.vals[k] = this.vals[child]
      k = child
    }
    this.keysA[k] = a
    this.keysB[k] = b
    this.vals[k] = val
    return top
  }
}
