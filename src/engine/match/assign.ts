// 1:1 assignment (DESIGN §2): the most matched records first, then the best total score, within
// each connected component of the candidate graph. A greedy best-first pick can strand records
// (left 100.00 and 99.10, right 100.00 and 100.90, tolerance 1.00: taking 100.00–100.00 first
// leaves 99.10 and 100.90 apart), so contested components are solved exactly (optimal.ts) up to
// a bound on their size, and best-first past it, counted in the pass report.
//
// A pair whose two records have no other candidate cannot conflict with anything and is taken
// at once (most pairs, in practice). Records that an optimal assignment could pair differently
// at no loss are a tie (ties.ts): one `ambiguous` match for review, or, with `prefer`, resolved
// in preference order, the records left over noted as passed over for the one preferred.
//
// What is optimized and what is reported are separate: `weight` is any real number (a rule
// pass's 0..1 closeness, a probabilistic pass's log-likelihood match weight), compared at 1e-9;
// `reported` is the match's score (0..1), the weight itself when not given.

import { assignGreedy } from './greedy.js'
import { type Component, quantizeWeight, solveComponent, Workspace } from './optimal.js'
import { optimalPairs, resolveTies, tieGroups } from './ties.js'

export interface OneToOneScores {
  /** What assignment maximizes after the number of matches: any real number (log-likelihoods too). */
  weight(i: number, j: number): number
  /** The score a match reports (0..1); the weight when absent. */
  reported?(i: number, j: number): number
}

export interface OneToOneSink {
  /** A clean pair. */
  pair(i: number, j: number, score: number): void
  /** Records that could trade partners at no loss: one ambiguous match; (i, j) is one of its pairs, for deltas. */
  tie(left: number[], right: number[], score: number, i: number, j: number): void
  /** `prefer` left `record` unmatched: it tied with `winner` (same side) for `partner`, and `winner` was preferred. */
  passedOver?(side: 'l' | 'r', record: number, winner: number, partner: number): void
}

export interface AssignOptions {
  /** A total order on candidate pairs that resolves ties: negative when (i1, j1) is preferred. */
  prefer?: (i1: number, j1: number, i2: number, j2: number) => number
  /** Components with pairs × records on their smaller side above this are assigned best-first. */
  exactWork?: number
}

/** What a 1:1 pass's assignment did, for its report. */
export interface AssignmentReport {
  /** Pairs taken at once: neither record had another candidate. */
  uncontested: number
  /** Connected components of the other candidates. */
  components: number
  /** Components assigned exactly (the most matches, then the best total score). */
  exact: number
  /** Components past the exact bound, assigned best-first. */
  greedy_fallback: number
  /** Candidate pairs in the largest component. */
  largest_component: number
  /** Ties resolved by `prefer` instead of held as ambiguous. */
  ties_resolved: number
}

/**
 * Pairs × smaller side (Dijkstra runs × their arcs) up to which a component is solved exactly:
 * about 60 ms for the worst shape measured (a dense 1400 × 1400 component; bench notes in
 * docs/ARCHITECTURE.md); it also keeps path costs below 2^53 (optimal.ts).
 */
export const EXACT_WORK = 2_000_000

export function emptyAssignment(): AssignmentReport {
  return { uncontested: 0, components: 0, exact: 0, greedy_fallback: 0, largest_component: 0, ties_resolved: 0 }
}

export function assignOneToOne(
  pairsLeft: Int32Array,
  pairsRight: Int32Array,
  count: number,
  scores: OneToOneScores | ((i: number, j: number) => number),
  leftFree: Uint8Array,
  rightFree: Uint8Array,
  sink: OneToOneSink,
  options: AssignOptions = {},
): AssignmentReport {
  const weightOf = typeof scores === 'function' ? scores : scores.weight
  const reported = typeof scores === 'function' ? scores : (scores.reported ?? scores.weight)
  const report = emptyAssignment()
  const leftDegree = new Uint8Array(leftFree.length)
  const rightDegree = new Uint8Array(rightFree.length)
  for (let n = 0; n < count; n++) {
    const i = pairsLeft[n]
    const j = pairsRight[n]
    if (leftDegree[i] < 2) leftDegree[i]++
    if (rightDegree[j] < 2) rightDegree[j]++
  }
  const contested: number[] = []
  for (let n = 0; n < count; n++) {
    const i = pairsLeft[n]
    const j = pairsRight[n]
    if (leftDegree[i] === 1 && rightDegree[j] === 1) {
      leftFree[i] = 0
      rightFree[j] = 0
      sink.pair(i, j, reported(i, j))
      report.uncontested++
    } else contested.push(n)
  }
  if (contested.length === 0) return report

  const exactWork = options.exactWork ?? EXACT_WORK
  const w = new Workspace()
  const emit = emitter(w, reported, leftFree, rightFree, sink)
  const prefer = options.prefer
  const order = prefer
    ? (a: number, b: number) =>
        prefer(
          w.leftRow[w.edgeLeft[a]],
          w.rightRow[w.edgeRight[a]],
          w.leftRow[w.edgeLeft[b]],
          w.rightRow[w.edgeRight[b]],
        )
    : undefined
  const components = new ContestedComponents(pairsLeft, pairsRight, contested, leftFree.length, rightFree.length)
  for (let k = 0; k < components.count; k++) {
    components.load(k, w)
    for (let e = 0; e < w.edges; e++)
      w.weight[e] = quantizeWeight(weightOf(w.leftRow[w.edgeLeft[e]], w.rightRow[w.edgeRight[e]]))
    report.components++
    report.largest_component = Math.max(report.largest_component, w.edges)
    if (w.nl === 1 || w.nr === 1) {
      report.exact++
      report.ties_resolved += assignStar(w, emit, order)
    } else if (w.edges * Math.min(w.nl, w.nr) > exactWork) {
      report.greedy_fallback++
      report.ties_resolved += assignGreedy(w, emit, order)
    } else {
      report.exact++
      report.ties_resolved += assignExact(w, emit, order)
    }
  }
  return report
}

/**
 * One record against several on the other side (the usual contest: a sale and its duplicate
 * settlements): its best-weighted candidate, or the candidates tied at the best weight.
 */
function assignStar(w: Workspace, emit: ComponentEmitter, order?: (a: number, b: number) => number): number {
  let best = -Infinity
  for (let e = 0; e < w.edges; e++) if (w.weight[e] > best) best = w.weight[e]
  const tied: number[] = []
  for (let e = 0; e < w.edges; e++) if (w.weight[e] === best) tied.push(e)
  if (tied.length === 1) {
    emit.pair(tied[0])
    return 0
  }
  if (!order) {
    emit.tie(
      [...new Set(tied.map((e) => w.edgeLeft[e]))],
      [...new Set(tied.map((e) => w.edgeRight[e]))],
      [tied[0]],
      tied,
    )
    return 0
  }
  tied.sort(order)
  w.mateLeft.fill(-1, 0, w.nl)
  w.mateRight.fill(-1, 0, w.nr)
  w.mateLeft[w.edgeLeft[tied[0]]] = tied[0]
  w.mateRight[w.edgeRight[tied[0]]] = tied[0]
  emit.pair(tied[0])
  emit.passedOver(tied, w.mateLeft, w.mateRight)
  return 1
}

/** A component solved exactly (optimal.ts); ties held as one ambiguous match each, or resolved by `prefer`. */
function assignExact(w: Workspace, emit: ComponentEmitter, order?: (a: number, b: number) => number): number {
  solveComponent(w)
  const groups = optimalPairs(w) > 0 ? tieGroups(w) : []
  let resolved = 0
  const tied = new Set<number>()
  if (order && groups.length) {
    const tiedPairs = groups.flatMap((g) => g.pairs).sort(order)
    resolveTies(w, tiedPairs)
    resolved = groups.length
    emit.passedOver(tiedPairs, w.mateLeft, w.mateRight)
  } else for (const g of groups) for (const i of g.left) tied.add(i)
  for (let i = 0; i < w.nl; i++) if (w.mateLeft[i] >= 0 && !tied.has(i)) emit.pair(w.mateLeft[i])
  if (!order) for (const g of groups) emit.tie(g.left, g.right, matchedIn(g.left, w.mateLeft), g.pairs)
  return resolved
}

function matchedIn(left: number[], mateLeft: Int32Array): number[] {
  const out: number[] = []
  for (const i of left) if (mateLeft[i] >= 0) out.push(mateLeft[i])
  return out
}

/** How a component's decisions reach the sink, in the pass's positions. */
export interface ComponentEmitter {
  pair(e: number): void
  /**
   * A tie over these records: its score is the mean of `assigned`'s (one optimal assignment of
   * them), its deltas those of the first of `optimal` by position, which every engine finds alike.
   */
  tie(left: number[], right: number[], assigned: number[], optimal: number[]): void
  /** Records of `pairs` (in preference order) left unmatched: each tied with the one matched to its partner. */
  passedOver(pairs: number[], mateLeft: Int32Array, mateRight: Int32Array): void
}

function emitter(
  c: Component,
  reported: (i: number, j: number) => number,
  leftFree: Uint8Array,
  rightFree: Uint8Array,
  sink: OneToOneSink,
): ComponentEmitter {
  const li = (e: number) => c.leftRow[c.edgeLeft[e]]
  const rj = (e: number) => c.rightRow[c.edgeRight[e]]
  return {
    pair(e) {
      leftFree[li(e)] = 0
      rightFree[rj(e)] = 0
      sink.pair(li(e), rj(e), reported(li(e), rj(e)))
    },
    tie(left, right, assigned, optimal) {
      const l = left.map((i) => c.leftRow[i]).sort((a, b) => a - b)
      const r = right.map((j) => c.rightRow[j]).sort((a, b) => a - b)
      for (const i of l) leftFree[i] = 0
      for (const j of r) rightFree[j] = 0
      let total = 0
      for (const e of assigned) total += reported(li(e), rj(e))
      let first = optimal[0]
      for (const e of optimal) if (li(e) < li(first) || (li(e) === li(first) && rj(e) < rj(first))) first = e
      sink.tie(l, r, total / assigned.length, li(first), rj(first))
    },
    passedOver(pairs, mateLeft, mateRight) {
      if (!sink.passedOver) return
      const noted = new Set<string>()
      for (const e of pairs) {
        const i = c.edgeLeft[e]
        const j = c.edgeRight[e]
        if (mateLeft[i] < 0 && mateRight[j] >= 0 && !noted.has(`l${i}`)) {
          noted.add(`l${i}`)
          sink.passedOver('l', c.leftRow[i], li(mateRight[j]), c.rightRow[j])
        }
        if (mateRight[j] < 0 && mateLeft[i] >= 0 && !noted.has(`r${j}`)) {
          noted.add(`r${j}`)
          sink.passedOver('r', c.rightRow[j], rj(mateLeft[i]), c.leftRow[i])
        }
      }
    },
  }
}

/**
 * Connected components of the contested pairs, built once for all: pairs ordered by component and
 * within it by left record (counting sorts), so a component is loaded by copying a slice.
 */
class ContestedComponents {
  readonly count: number
  private readonly pairStart: Int32Array
  private readonly pairs: Int32Array
  private readonly leftDense: Int32Array
  private readonly rightDense: Int32Array
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
    // by left record, then (stably) by component
    const byLeft = countingSort(this.leftDense, nl, null)
    const order = countingSort(componentOf, components, byLeft)
    this.pairStart = new Int32Array(components + 1)
    for (let k = 0; k < c; k++) this.pairStart[componentOf[k] + 1]++
    for (let k = 0; k < components; k++) this.pairStart[k + 1] += this.pairStart[k]
    this.pairs = order
    this.count = components
    this.contested = contested
    this.localRight = new Int32Array(nr).fill(-1)
  }

  /** Copies component k into the workspace, its records numbered from 0. */
  load(k: number, w: Workspace): void {
    const from = this.pairStart[k]
    const to = this.pairStart[k + 1]
    let nl = 0
    let nr = 0
    let lastLeft = -1
    for (let x = from; x < to; x++) {
      const p = this.pairs[x]
      if (this.leftDense[p] !== lastLeft) {
        lastLeft = this.leftDense[p]
        nl++
      }
      if (this.localRight[this.rightDense[p]] < 0) this.localRight[this.rightDense[p]] = nr++
    }
    w.reserve(nl, nr, to - from)
    lastLeft = -1
    let i = -1
    for (let x = from, e = 0; x < to; x++, e++) {
      const p = this.pairs[x]
      const n = this.contested[p]
      if (this.leftDense[p] !== lastLeft) {
        lastLeft = this.leftDense[p]
        w.start[++i] = e
        w.leftRow[i] = this.pairsLeft[n]
      }
      const j = this.localRight[this.rightDense[p]]
      w.edgeLeft[e] = i
      w.edgeRight[e] = j
      w.rightRow[j] = this.pairsRight[n]
    }
    w.start[nl] = to - from
    for (let x = from; x < to; x++) this.localRight[this.rightDense[this.pairs[x]]] = -1
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
