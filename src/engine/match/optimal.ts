// The exact 1:1 assignment of one connected component of contested candidates: the most matches
// first, then the largest total weight (DESIGN §2). Each left record is assigned in turn, along
// the cheapest augmenting path from it (Dijkstra on reduced costs, as the Hungarian method and
// Jonker–Volgenant do), to a free right record or to its own "unmatched" column. Costs are pairs
// compared lexicographically: a pair costs (0, wmax - weight), staying unmatched (1, 0), so a
// path that matches one more record always wins, and among those the heaviest. Exploring from one
// record keeps each search local: assigning every left of an 800-record chain of candidates
// this way reads a few arcs per record, where augmenting from all free records at once (plain
// successive shortest paths) read the whole component each time.
//
// Weights are integers (quantizeWeight): sums are exact, and so is every tie. The potentials it
// leaves price every arc of the residual graph at a reduced cost >= 0 (a sink joins the free
// columns, whose potential stays 0), so another assignment as good as this one differs from it
// only along cycles of arcs that all cost 0 (ties.ts).

import type { Workspace } from './workspace.js'

/** Scores are compared at this resolution: two that agree to nine decimals are a tie. */
export const WEIGHT_QUANTUM = 1e-9
/**
 * Scores past ±1000 are clamped before they are optimized: a match weight (log-likelihood) never
 * gets near it. Path costs and potentials stay below (smaller side × 2 + 2) × the component's
 * weight range, which solveComponent keeps below 2^53, so they are exact.
 */
const WEIGHT_LIMIT = 1000

/** A score as an exact integer weight; NaN ranks below every real score. */
export function quantizeWeight(score: number): number {
  if (Number.isNaN(score)) return -WEIGHT_LIMIT / WEIGHT_QUANTUM
  return Math.round(Math.max(-WEIGHT_LIMIT, Math.min(WEIGHT_LIMIT, score)) / WEIGHT_QUANTUM)
}

/**
 * The most matches, then the largest total weight: fills mateLeft, mateRight, cost and the
 * potentials. False, leaving them unfinished, when the searches would relax more than `budget`
 * arcs, or the weights spread too wide for exact path costs (a weight range beyond 2^53 / (2nl + 2)).
 */
export function solveComponent(w: Workspace, budget = Infinity): boolean {
  const { nl, nr, edges, start, edgeLeft, edgeRight, weight, cost, mateLeft, mateRight } = w
  const { potentialA: pA, potentialB: pB, distA, distB, settled, predRow, predPair, visited, heap } = w
  const nodes = w.nodeCount
  let wmax = -Infinity
  let wmin = Infinity
  for (let e = 0; e < edges; e++) {
    if (weight[e] > wmax) wmax = weight[e]
    if (weight[e] < wmin) wmin = weight[e]
  }
  // a path alternates at most 2nl + 1 arcs: its cost, and every potential, stays exact below 2^53
  if ((wmax - wmin) * (2 * nl + 2) >= 2 ** 53) return false
  for (let e = 0; e < edges; e++) cost[e] = wmax - weight[e]
  mateLeft.fill(-1, 0, nl)
  mateRight.fill(-1, 0, nr)
  pA.fill(0, 0, nodes)
  pB.fill(0, 0, nodes)
  const unmatched = nl + nr // + i: left record i's "unmatched" column
  let seen = 0
  let relaxed = 0
  // reduced cost of the arc u → v costing (a, b), added to u's distance
  const relax = (u: number, v: number, a: number, b: number, row: number, pair: number) => {
    relaxed++
    const da = distA[u] + a + pA[u] - pA[v]
    const db = distB[u] + b + pB[u] - pB[v]
    if (da < distA[v] || (da === distA[v] && db < distB[v])) {
      if (distA[v] === Infinity) visited[seen++] = v
      distA[v] = da
      distB[v] = db
      predRow[v] = row
      predPair[v] = pair
      heap.push(da, db, v)
    }
  }
  for (let i = 0; i < nl; i++) {
    seen = 0
    heap.clear()
    distA[i] = 0
    distB[i] = 0
    visited[seen++] = i
    heap.push(0, 0, i)
    let target = -1
    while (target < 0) {
      if (relaxed > budget) {
        for (let k = 0; k < seen; k++) {
          distA[visited[k]] = Infinity
          distB[visited[k]] = Infinity
          settled[visited[k]] = 0
        }
        return false
      }
      const u = heap.pop()
      if (settled[u]) continue
      settled[u] = 1
      if (u >= unmatched) {
        target = u // an "unmatched" column is reached only while free
        break
      }
      if (u >= nl) {
        const e = mateRight[u - nl]
        if (e < 0) {
          target = u
          break
        }
        relax(u, edgeLeft[e], 0, -cost[e], -1, e)
        continue
      }
      for (let e = start[u]; e < start[u + 1]; e++) if (mateLeft[u] !== e) relax(u, nl + edgeRight[e], 0, cost[e], u, e)
      if (u === i || mateLeft[u] >= 0) relax(u, unmatched + u, 1, 0, u, -1)
    }
    // potentials: settled nodes by their distance less the target's, the others unchanged (they
    // are at least as far), which keeps every reduced cost >= 0 and leaves free columns at 0
    const ta = distA[target]
    const tb = distB[target]
    for (let k = 0; k < seen; k++) {
      const v = visited[k]
      if (settled[v]) {
        pA[v] += distA[v] - ta
        pB[v] += distB[v] - tb
      }
    }
    // flip the path: target ← left r (by its pair, or its "unmatched" column) ← the right r held ← …
    for (let v = target; ;) {
      const r = predRow[v]
      const e = predPair[v]
      const before = mateLeft[r]
      mateLeft[r] = e
      if (e >= 0) mateRight[edgeRight[e]] = e
      if (r === i) break
      v = nl + edgeRight[before]
    }
    for (let k = 0; k < seen; k++) {
      const v = visited[k]
      distA[v] = Infinity
      distB[v] = Infinity
      settled[v] = 0
    }
  }
  return true
}
