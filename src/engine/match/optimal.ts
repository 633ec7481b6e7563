// The exact 1:1 assignment of one connected component of contested candidates: the most matches
// first, then the largest total weight (DESIGN §2). It is a min-cost max-flow on
// source → left → right → sink with unit capacities and cost `wmax - weight` on each candidate
// pair, solved by successive shortest paths with potentials (Dijkstra on reduced costs): each
// augmentation adds one match along the cheapest path, so after k of them the assignment is the
// best one of k matches, and the last is the best among those with the most matches. Every flow
// of k matches crosses exactly k pairs, so the constant `wmax` does not change which is best.
//
// Weights are integers (quantizeWeight): sums are exact, and so is every tie. The potentials it
// leaves price every arc of the residual graph at a reduced cost >= 0, so another assignment as
// good as this one differs from it only along cycles of arcs that all cost 0 (ties.ts).
//
// Most contested components are tiny (a duplicate and its twin), so a component is loaded into
// a Workspace whose arrays are reused from one component to the next: allocating a dozen typed
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

/** Scores are compared at this resolution: two that agree to nine decimals are a tie. */
export const WEIGHT_QUANTUM = 1e-9
/**
 * Scores past ±1000 are clamped before they are optimized: a match weight (log-likelihood) never
 * gets near it, and the bound keeps every path cost exact (below 2^53) for the component sizes
 * solved exactly (assign.ts: EXACT_WORK).
 */
const WEIGHT_LIMIT = 1000

/** A score as an exact integer weight; NaN ranks below every real score. */
export function quantizeWeight(score: number): number {
  if (Number.isNaN(score)) return -WEIGHT_LIMIT / WEIGHT_QUANTUM
  return Math.round(Math.max(-WEIGHT_LIMIT, Math.min(WEIGHT_LIMIT, score)) / WEIGHT_QUANTUM)
}

/** A component and its solution, in arrays that grow to the largest component and are then reused. */
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
  /** The solution: the pair matching left record i / right record j, or -1. */
  mateLeft = new Int32Array(16)
  mateRight = new Int32Array(16)
  /** Cost of each pair: the component's largest weight minus its weight (>= 0). */
  cost = new Float64Array(16)
  /** Node potentials: left 0..nl-1, right nl..nl+nr-1, source nl+nr, sink nl+nr+1. */
  potential = new Float64Array(16)
  // Dijkstra's
  dist = new Float64Array(16)
  settled = new Uint8Array(16)
  via = new Int32Array(16)
  readonly heap = new MinHeap(16)
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

  /** Makes room for a component of this size; its contents are then written by the caller. */
  reserve(nl: number, nr: number, edges: number): void {
    this.nl = nl
    this.nr = nr
    this.edges = edges
    const nodes = nl + nr + 2
    const arcs = edges + nl + nr
    if (this.start.length <= nl) this.start = new Int32Array(grown(nl + 1))
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
    if (this.potential.length < nodes + 1) {
      const n = grown(nodes + 1)
      this.potential = new Float64Array(n)
      this.dist = new Float64Array(n)
      this.settled = new Uint8Array(n)
      this.via = new Int32Array(n)
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

/** The most matches, then the largest total weight: fills mateLeft, mateRight, cost and potential. */
export function solveComponent(w: Workspace): void {
  const { nl, nr, edges, start, edgeLeft, edgeRight, weight, cost, mateLeft, mateRight } = w
  const { potential, dist, settled, via, heap } = w
  const S = nl + nr
  const T = S + 1
  const nodes = nl + nr + 2
  let wmax = -Infinity
  for (let e = 0; e < edges; e++) if (weight[e] > wmax) wmax = weight[e]
  for (let e = 0; e < edges; e++) cost[e] = wmax - weight[e]
  mateLeft.fill(-1, 0, nl)
  mateRight.fill(-1, 0, nr)
  potential.fill(0, 0, nodes)
  const relax = (u: number, v: number, arcCost: number, how: number) => {
    const d = dist[u] + arcCost + potential[u] - potential[v]
    if (d < dist[v]) {
      dist[v] = d
      via[v] = how
      heap.push(d, v)
    }
  }
  for (;;) {
    dist.fill(Infinity, 0, nodes)
    settled.fill(0, 0, nodes)
    heap.clear()
    dist[S] = 0
    heap.push(0, S)
    while (heap.size > 0) {
      const u = heap.pop()
      if (settled[u]) continue
      settled[u] = 1
      if (u === T) break
      if (u === S) {
        for (let i = 0; i < nl; i++) if (mateLeft[i] < 0) relax(S, i, 0, -1)
      } else if (u < nl) {
        for (let e = start[u]; e < start[u + 1]; e++) if (mateLeft[u] !== e) relax(u, nl + edgeRight[e], cost[e], e)
      } else if (u < S) {
        const j = u - nl
        const e = mateRight[j]
        if (e < 0) relax(u, T, 0, j)
        else relax(u, edgeLeft[e], -cost[e], e)
      }
    }
    if (!settled[T]) return // no augmenting path: the most matches there can be
    // nodes not settled are at least as far as the sink: capping them there keeps every reduced
    // cost >= 0 (the Dijkstra stopped at the sink)
    const reach = dist[T]
    for (let v = 0; v < nodes; v++) potential[v] += settled[v] ? dist[v] : reach
    // flip the path: sink ← right j ← (pair e) left i ← (its old pair) right j' ← … ← source
    let j = via[T]
    for (;;) {
      const e = via[nl + j]
      const i = edgeLeft[e]
      const before = mateLeft[i]
      mateLeft[i] = e
      mateRight[j] = e
      if (before < 0) break
      j = edgeRight[before]
    }
  }
}

/** A binary min-heap of (key, node) with lazy deletion: a node may be pushed again with a lower key. */
class MinHeap {
  private keys: Float64Array
  private vals: Int32Array
  size = 0

  constructor(capacity: number) {
    this.keys = new Float64Array(capacity)
    this.vals = new Int32Array(capacity)
  }

  clear(): void {
    this.size = 0
  }

  push(key: number, val: number): void {
    if (this.size === this.keys.length) {
      const keys = new Float64Array(this.size * 2)
      keys.set(this.keys)
      this.keys = keys
      const vals = new Int32Array(this.size * 2)
      vals.set(this.vals)
      this.vals = vals
    }
    let k = this.size++
    while (k > 0) {
      const up = (k - 1) >> 1
      if (this.keys[up] <= key) break
      this.keys[k] = this.keys[up]
      this.vals[k] = this.vals[up]
      k = up
    }
    this.keys[k] = key
    this.vals[k] = val
  }

  pop(): number {
    const top = this.vals[0]
    const n = --this.size
    const key = this.keys[n]
    const val = this.vals[n]
    let k = 0
    for (;;) {
      let child = 2 * k + 1
      if (child >= n) break
      if (child + 1 < n && this.keys[child + 1] < this.keys[child]) child++
      if (this.keys[child] >= key) break
      this.keys[k] = this.keys[child]
      this.vals[k] = this.vals[child]
      k = child
    }
    this.keys[k] = key
    this.vals[k] = val
    return top
  }
}
