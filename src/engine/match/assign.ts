// 1:1 assignment: every candidate pair has a score; the best pairs win globally (not the first
// found). Pairs are taken best-first; within one score level, a record with two or more free
// partners at that same score is a true tie: the tied records are grouped as one `ambiguous`
// match for review instead of one being chosen arbitrarily.

export interface Assigned {
  left: number[]
  right: number[]
  score: number
  ambiguous: boolean
}

export interface OneToOneSink {
  /** A clean pair. */
  pair(i: number, j: number, score: number): void
  /** Records tied at one score level: one ambiguous match for review. */
  tie(left: number[], right: number[], score: number): void
}

/**
 * Assigns candidate pairs one to one. A pair whose left and right records have no other
 * candidate cannot conflict with anything and is taken at once (most pairs, in practice); the
 * rest are ranked globally by score.
 */
export function assignOneToOne(
  pairsLeft: Int32Array,
  pairsRight: Int32Array,
  count: number,
  score: (i: number, j: number) => number,
  leftFree: Uint8Array,
  rightFree: Uint8Array,
  sink: OneToOneSink,
): void {
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
      sink.pair(i, j, score(i, j))
    } else contested.push(n)
  }
  if (contested.length === 0) return
  const scores = new Float64Array(count)
  for (const n of contested) scores[n] = score(pairsLeft[n], pairsRight[n])
  for (const a of rankContested(pairsLeft, pairsRight, scores, Int32Array.from(contested), leftFree, rightFree)) {
    if (a.ambiguous) sink.tie(a.left, a.right, a.score)
    else sink.pair(a.left[0], a.right[0], a.score)
  }
}

/** Best pairs first, globally; within one score level, records with several free partners are a tie. */
function rankContested(
  pairsLeft: Int32Array,
  pairsRight: Int32Array,
  scores: Float64Array,
  order: Int32Array,
  leftFree: Uint8Array,
  rightFree: Uint8Array,
): Assigned[] {
  const count = order.length
  order.sort((a, b) => scores[b] - scores[a] || pairsLeft[a] - pairsLeft[b] || pairsRight[a] - pairsRight[b])
  const out: Assigned[] = []
  let start = 0
  while (start < count) {
    let end = start
    const score = scores[order[start]]
    while (end < count && scores[order[end]] === score) end++
    const group: number[] = []
    for (let n = start; n < end; n++) {
      const p = order[n]
      if (leftFree[pairsLeft[p]] && rightFree[pairsRight[p]]) group.push(p)
    }
    if (group.length === 1) {
      const p = group[0]
      take(out, [pairsLeft[p]], [pairsRight[p]], score, false, leftFree, rightFree)
    } else if (group.length > 1) {
      for (const component of components(group, pairsLeft, pairsRight)) {
        take(out, component.left, component.right, score, component.pairs > 1, leftFree, rightFree)
      }
    }
    start = end
  }
  return out
}

function take(
  out: Assigned[],
  left: number[],
  right: number[],
  score: number,
  ambiguous: boolean,
  lf: Uint8Array,
  rf: Uint8Array,
) {
  for (const i of left) lf[i] = 0
  for (const j of right) rf[j] = 0
  out.push({ left, right, score, ambiguous })
}

/** Connected components of the tie graph: a component with one pair is a clean match. */
function components(
  group: number[],
  pl: Int32Array,
  pr: Int32Array,
): { left: number[]; right: number[]; pairs: number }[] {
  const parent = new Map<string, string>()
  const find = (x: string): string => {
    let root = x
    while (parent.get(root) !== root) root = parent.get(root)!
    parent.set(x, root)
    return root
  }
  const add = (x: string) => {
    if (!parent.has(x)) parent.set(x, x)
  }
  for (const p of group) {
    const a = `l${pl[p]}`
    const b = `r${pr[p]}`
    add(a)
    add(b)
    const ra = find(a)
    const rb = find(b)
    if (ra !== rb) parent.set(ra, rb)
  }
  const byRoot = new Map<string, { left: Set<number>; right: Set<number>; pairs: number }>()
  for (const p of group) {
    const root = find(`l${pl[p]}`)
    const c = byRoot.get(root) ?? { left: new Set<number>(), right: new Set<number>(), pairs: 0 }
    c.left.add(pl[p])
    c.right.add(pr[p])
    c.pairs++
    byRoot.set(root, c)
  }
  return [...byRoot.values()].map((c) => ({
    left: [...c.left].sort((a, b) => a - b),
    right: [...c.right].sort((a, b) => a - b),
    pairs: c.pairs,
  }))
}
