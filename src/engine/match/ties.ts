// Ties in an optimal 1:1 assignment, and `prefer`, which resolves them.
//
// A pair is *optimal* when some optimal assignment (the most matches, then the largest total
// weight: optimal.ts) contains it. Another optimal assignment differs from the one found only
// along cycles of the residual graph whose arcs all have reduced cost 0 — a cycle through the
// sink or an "unmatched" column changes which record is matched (a sale keeps a settlement but
// its duplicate could take it instead). So a pair outside the assignment is optimal exactly when
// its arc has reduced cost 0 and both its records lie in one strongly connected component of the
// zero-cost arcs.
//
// A *tie* is a connected group of two or more optimal pairs: its records can trade partners (or
// be matched instead of one another) at no loss, so each of them has a different partner (or
// none) in some optimal assignment. Without `prefer` a tie is one ambiguous match held for
// review; an optimal pair alone in its group is in every optimal assignment: a clean match.

import type { Workspace } from './workspace.js'

/** Whether a pair's arc (left → right; right → left when matched) has reduced cost 0. */
function zeroCost(w: Workspace, e: number): boolean {
  const l = w.edgeLeft[e]
  const r = w.nl + w.edgeRight[e]
  return w.potentialA[l] === w.potentialA[r] && w.cost[e] + w.potentialB[l] - w.potentialB[r] === 0
}

/**
 * The arcs of the residual graph with reduced cost 0, grouped by node in the workspace's arc
 * arrays (arcPair: the pair an arc runs along, -1 for the others), skipping `removed` nodes.
 * Besides the pairs: left i ⇄ its "unmatched" column (cost (1, 0)), and every column ⇄ the
 * sink (cost 0; the sink's potential is 0): free columns into it, assigned ones out of it.
 */
function zeroArcs(w: Workspace, removed: Uint8Array | null): void {
  const { nl, nr, edges, edgeLeft, edgeRight, mateLeft, mateRight, potentialA: pA, potentialB: pB } = w
  const { arcFrom, arcTo, arcPair, arcStart, arcFill } = w
  const unmatched = nl + nr
  const T = 2 * nl + nr
  const nodes = w.nodeCount
  let n = 0
  const add = (u: number, v: number, e: number) => {
    if (removed !== null && (removed[u] || removed[v])) return
    arcFrom[n] = u
    arcTo[n] = v
    arcPair[n++] = e
  }
  for (let e = 0; e < edges; e++) {
    if (!zeroCost(w, e)) continue
    if (mateLeft[edgeLeft[e]] === e) add(nl + edgeRight[e], edgeLeft[e], e)
    else add(edgeLeft[e], nl + edgeRight[e], e)
  }
  for (let i = 0; i < nl; i++) {
    const d = unmatched + i
    if (pA[i] + 1 !== pA[d] || pB[i] !== pB[d]) continue
    if (mateLeft[i] >= 0) add(i, d, -1)
    else add(d, i, -1)
  }
  for (let c = nl; c < T; c++) {
    if (pA[c] !== 0 || pB[c] !== 0) continue
    const free = c < unmatched ? mateRight[c - nl] < 0 : mateLeft[c - unmatched] >= 0
    if (free) add(c, T, -1)
    else add(T, c, -1)
  }
  // group by node (counting sort): arcTo/arcPair are rewritten in place through a copy of the order
  arcStart.fill(0, 0, nodes + 1)
  for (let a = 0; a < n; a++) arcStart[arcFrom[a] + 1]++
  for (let u = 0; u < nodes; u++) arcStart[u + 1] += arcStart[u]
  arcFill.set(arcStart.subarray(0, nodes))
  const to = arcTo.slice(0, n)
  const pair = arcPair.slice(0, n)
  for (let a = 0; a < n; a++) {
    const at = arcFill[arcFrom[a]]++
    arcTo[at] = to[a]
    arcPair[at] = pair[a]
  }
}

/** Strongly connected components of the zero-cost arcs (iterative Tarjan) into `w.scc`. */
function components(w: Workspace): void {
  const nodes = w.nodeCount
  const { arcStart, arcTo, sccIndex: index, sccLow: low, scc, sccOnStack: onStack, sccStack: stack } = w
  const { callNode, callArc } = w
  index.fill(-1, 0, nodes)
  onStack.fill(0, 0, nodes)
  let top = 0
  let next = 0
  let count = 0
  for (let root = 0; root < nodes; root++) {
    if (index[root] >= 0) continue
    let depth = 0
    callNode[0] = root
    callArc[0] = arcStart[root]
    index[root] = low[root] = next++
    stack[top++] = root
    onStack[root] = 1
    while (depth >= 0) {
      const u = callNode[depth]
      if (callArc[depth] < arcStart[u + 1]) {
        const v = arcTo[callArc[depth]++]
        if (index[v] < 0) {
          index[v] = low[v] = next++
          stack[top++] = v
          onStack[v] = 1
          depth++
          callNode[depth] = v
          callArc[depth] = arcStart[v]
        } else if (onStack[v] && index[v] < low[u]) low[u] = index[v]
        continue
      }
      if (low[u] === index[u]) {
        let v: number
        do {
          v = stack[--top]
          onStack[v] = 0
          scc[v] = count
        } while (v !== u)
        count++
      }
      depth--
      if (depth >= 0 && low[u] < low[callNode[depth]]) low[callNode[depth]] = low[u]
    }
  }
}

/**
 * Marks in `w.optimal` every pair some optimal assignment contains; returns how many are not in
 * the one found (0: no ties).
 */
export function optimalPairs(w: Workspace): number {
  zeroArcs(w, null)
  components(w)
  const { nl, edges, edgeLeft, edgeRight, mateLeft, scc, optimal } = w
  let others = 0
  for (let e = 0; e < edges; e++) {
    if (mateLeft[edgeLeft[e]] === e) optimal[e] = 1
    else if (scc[edgeLeft[e]] === scc[nl + edgeRight[e]] && zeroCost(w, e)) {
      optimal[e] = 1
      others++
    } else optimal[e] = 0
  }
  return others
}

/** Records linked by two or more optimal pairs: a tie (records numbered in the component). */
export interface TieGroup {
  left: number[]
  right: number[]
  /** Its optimal pairs. */
  pairs: number[]
}

export function tieGroups(w: Workspace): TieGroup[] {
  const { nl, nr, edges, edgeLeft, edgeRight, optimal } = w
  const parent = new Int32Array(nl + nr)
  for (let x = 0; x < parent.length; x++) parent[x] = x
  const find = (x: number): number => {
    while (parent[x] !== x) x = parent[x] = parent[parent[x]]
    return x
  }
  for (let e = 0; e < edges; e++) {
    if (!optimal[e]) continue
    const a = find(edgeLeft[e])
    const b = find(nl + edgeRight[e])
    if (a !== b) parent[a] = b
  }
  const pairsOf = new Map<number, number[]>()
  for (let e = 0; e < edges; e++) {
    if (!optimal[e]) continue
    const root = find(edgeLeft[e])
    const list = pairsOf.get(root)
    if (list) list.push(e)
    else pairsOf.set(root, [e])
  }
  const groups: TieGroup[] = []
  for (const pairs of pairsOf.values()) {
    if (pairs.length < 2) continue
    const left = [...new Set(pairs.map((e) => edgeLeft[e]))].sort((a, b) => a - b)
    const right = [...new Set(pairs.map((e) => edgeRight[e]))].sort((a, b) => a - b)
    groups.push({ left, right, pairs })
  }
  return groups
}

/**
 * `prefer`: takes the tied pairs in `order` (most preferred first), each one that still extends
 * to an optimal assignment given the pairs taken before it, turning the assignment along a
 * zero-cost cycle through the pair when it is not in it yet. The result is optimal, and of the
 * optimal assignments it is the one whose pairs, in preference order, come first.
 */
export function resolveTies(w: Workspace, order: number[]): void {
  const { nl, nr, edgeLeft, edgeRight, mateLeft } = w
  const nodes = w.nodeCount
  const removed = new Uint8Array(nodes)
  zeroArcs(w, removed)
  components(w)
  for (const e of order) {
    const i = edgeLeft[e]
    const j = nl + edgeRight[e]
    if (removed[i] || removed[j]) continue
    if (mateLeft[i] !== e) {
      if (w.scc[i] !== w.scc[j] || !zeroCost(w, e)) continue
      rotate(w, e, cyclePath(w, j, i, nodes))
    }
    removed[i] = 1
    removed[j] = 1
    removed[nl + nr + i] = 1
    zeroArcs(w, removed)
    components(w)
  }
}

/** The pairs along a shortest path of zero-cost arcs from `from` to `to` (-1 for source and sink arcs). */
function cyclePath(w: Workspace, from: number, to: number, nodes: number): number[] {
  const cameBy = new Int32Array(nodes).fill(-1)
  const cameFrom = new Int32Array(nodes).fill(-1)
  const seen = new Uint8Array(nodes)
  const queue = [from]
  seen[from] = 1
  for (let q = 0; q < queue.length && !seen[to]; q++) {
    const u = queue[q]
    for (let a = w.arcStart[u]; a < w.arcStart[u + 1]; a++) {
      const v = w.arcTo[a]
      if (seen[v]) continue
      seen[v] = 1
      cameBy[v] = a
      cameFrom[v] = u
      queue.push(v)
    }
  }
  if (!seen[to]) throw new Error('no zero-cost cycle through a pair in one strongly connected component')
  const pairs: number[] = []
  for (let v = to; v !== from; v = cameFrom[v]) pairs.push(w.arcPair[cameBy[v]])
  return pairs
}

/** Turns the assignment along the cycle `e` + `path`: matched pairs on it leave, the others join. */
function rotate(w: Workspace, e: number, path: number[]): void {
  const { edgeLeft, edgeRight, mateLeft, mateRight } = w
  const leaving: number[] = []
  const joining = [e]
  for (const p of path) {
    if (p < 0) continue
    if (mateLeft[edgeLeft[p]] === p) leaving.push(p)
    else joining.push(p)
  }
  for (const p of leaving) {
    mateLeft[edgeLeft[p]] = -1
    mateRight[edgeRight[p]] = -1
  }
  for (const p of joining) {
    mateLeft[edgeLeft[p]] = p
    mateRight[edgeRight[p]] = p
  }
}
