// 1:1 assignment (DESIGN §2): the most matched records first, then the best total score, within
// each connected component of the candidate graph. A greedy best-first pick can strand records
// (left 100.00 and 99.10, right 100.00 and 100.90, tolerance 1.00: taking 100.00–100.00 first
// leaves 99.10 and 100.90 apart), so contested components are solved exactly (optimal.ts), and
// best-first only when that search would cost more than a budget, counted in the pass report.
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
import { ContestedComponents } from './components.js'
import { quantizeWeight, solveComponent } from './optimal.js'
import { Workspace } from './workspace.js'
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
  /** Arcs an exact search may relax per component before it is assigned best-first (EXACT_BUDGET). */
  exactBudget?: number
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
 * Arcs the exact searches may relax in one component before it is assigned best-first instead:
 * 15–65 ms of searching at the 7–33 ns a relaxation was measured to cost (bench notes in
 * docs/ARCHITECTURE.md). Counting the work done, not guessing it from the size, keeps exact the
 * many large components that are cheap (a band's chain of 20,000 records: 11 ms). The searches
 * relax at most (smaller side) × (pairs) arcs, so a component that reaches the budget has at
 * least budget^(2/3) pairs, and a pass spends at most budget^(1/3) (about 126) relaxations per
 * contested pair, however its components are shaped.
 */
export const EXACT_BUDGET = 2_000_000

export function emptyAssignment(): AssignmentReport {
  return { uncontested: 0, components: 0, exact: 0, greedy_fallback: 0, largest_component: 0, ties_resolved: 0 }
}

type PairOrder = (a: number, b: number) => number

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

  const budget = options.exactBudget ?? EXACT_BUDGET
  const w = new Workspace()
  const emit = emitter(w, reported, leftFree, rightFree, sink)
  const prefer = options.prefer
  const order: PairOrder | undefined = prefer
    ? (a, b) => prefer(emit.left(a), emit.right(a), emit.left(b), emit.right(b))
    : undefined
  const components = new ContestedComponents(pairsLeft, pairsRight, contested, leftFree.length, rightFree.length)
  for (let k = 0; k < components.count; k++) {
    components.load(k, w)
    for (let e = 0; e < w.edges; e++) w.weight[e] = quantizeWeight(weightOf(emit.left(e), emit.right(e)))
    report.components++
    report.largest_component = Math.max(report.largest_component, w.edges)
    if (w.nl === 1 || w.nr === 1) {
      report.exact++
      report.ties_resolved += assignStar(w, emit, order)
    } else if (solveComponent(w, budget)) {
      report.exact++
      report.ties_resolved += assignExact(w, emit, order)
    } else {
      report.greedy_fallback++
      report.ties_resolved += assignGreedy(w, emit, order)
    }
  }
  return report
}

/**
 * One record against several on the other side (the usual contest: a sale and its duplicate
 * settlements): its best-weighted candidate, or the candidates tied at the best weight.
 */
function assignStar(w: Workspace, emit: ComponentEmitter, order?: PairOrder): number {
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
function assignExact(w: Workspace, emit: ComponentEmitter, order?: PairOrder): number {
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

/**
 * How a component's decisions reach the sink, in the pass's positions and sides (a workspace
 * holds a component with its smaller side as its left: `flipped` when that is the pass's right).
 */
export interface ComponentEmitter {
  /** The pass's left / right position of a pair. */
  left(e: number): number
  right(e: number): number
  pair(e: number): void
  /**
   * A tie over these records (the workspace's sides): its score is the mean of `assigned`'s (one
   * optimal assignment of them), its deltas those of the first of `optimal` by the pass's
   * positions, which every engine finds alike.
   */
  tie(left: number[], right: number[], assigned: number[], optimal: number[]): void
  /** Records of `pairs` (in preference order) left unmatched: each tied with the one matched to its partner. */
  passedOver(pairs: number[], mateLeft: Int32Array, mateRight: Int32Array): void
}

function emitter(
  w: Workspace,
  reported: (i: number, j: number) => number,
  leftFree: Uint8Array,
  rightFree: Uint8Array,
  sink: OneToOneSink,
): ComponentEmitter {
  const own = (e: number) => w.leftRow[w.edgeLeft[e]]
  const other = (e: number) => w.rightRow[w.edgeRight[e]]
  const left = (e: number) => (w.flipped ? other(e) : own(e))
  const right = (e: number) => (w.flipped ? own(e) : other(e))
  return {
    left,
    right,
    pair(e) {
      leftFree[left(e)] = 0
      rightFree[right(e)] = 0
      sink.pair(left(e), right(e), reported(left(e), right(e)))
    },
    tie(ownSide, otherSide, assigned, optimal) {
      const a = ownSide.map((i) => w.leftRow[i])
      const b = otherSide.map((j) => w.rightRow[j])
      const [l, r] = (w.flipped ? [b, a] : [a, b]).map((rows) => rows.sort((x, y) => x - y))
      for (const i of l) leftFree[i] = 0
      for (const j of r) rightFree[j] = 0
      let total = 0
      for (const e of assigned) total += reported(left(e), right(e))
      let first = optimal[0]
      for (const e of optimal)
        if (left(e) < left(first) || (left(e) === left(first) && right(e) < right(first))) first = e
      sink.tie(l, r, total / assigned.length, left(first), right(first))
    },
    passedOver(pairs, mateLeft, mateRight) {
      if (!sink.passedOver) return
      const [ownSide, otherSide] = w.flipped ? (['r', 'l'] as const) : (['l', 'r'] as const)
      const noted = new Set<string>()
      for (const e of pairs) {
        const i = w.edgeLeft[e]
        const j = w.edgeRight[e]
        if (mateLeft[i] < 0 && mateRight[j] >= 0 && !noted.has(`l${i}`)) {
          noted.add(`l${i}`)
          sink.passedOver(ownSide, w.leftRow[i], own(mateRight[j]), w.rightRow[j])
        }
        if (mateRight[j] < 0 && mateLeft[i] >= 0 && !noted.has(`r${j}`)) {
          noted.add(`r${j}`)
          sink.passedOver(otherSide, w.rightRow[j], other(mateLeft[i]), w.leftRow[i])
        }
      }
    },
  }
}
