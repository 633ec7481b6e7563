// Aggregate patterns. 1:N (and N:1, mirrored): one record against a group of its candidates on
// the other side whose amounts sum to its amount within tolerance, found by a bounded
// subset-sum search (not merely "all candidates"). N:M: key groups on both sides whose sums agree.
// Amounts are integer units at one scale, so sums and tolerances are exact.

export interface GroupMatch {
  one: number
  many: number[]
  /** one's amount minus the group's sum, in units. */
  delta: number
  ambiguous: boolean
  alternatives?: number[]
}

export const MAX_CANDIDATES = 24
export const MAX_VISITS = 200_000

/** How often a pass's group search met its bounds: reported in the pass summary, never silent. */
export interface SearchBounds {
  /** Records with more usable candidates than the search takes: only the best-ranked were tried. */
  candidates_capped: number
  /** Records whose search stopped at the visit limit before it had tried every subset. */
  visits_exhausted: number
  /** N:M groups left unmatched because a side has more records than `max_group`. */
  groups_over_max: number
}

export const noBounds = (): SearchBounds => ({ candidates_capped: 0, visits_exhausted: 0, groups_over_max: 0 })

/**
 * For each record of the "one" side (most constrained first), the smallest subset (size 1..maxGroup)
 * of its free candidates whose sum is within `tolerance` of its amount, closest first.
 * Two different best subsets are a tie: the match is flagged ambiguous and holds both.
 *
 * Candidates are pruned and ranked before the search's cap applies, so which group is found does
 * not depend on the order the join produced them: a candidate that cannot be part of any group
 * (larger than the amount plus tolerance when no candidate is negative) is dropped, the rest are
 * ranked by `rank` (how alike the pair is, by date and reference: higher first), then by amount
 * closeness, and only then cut to `MAX_CANDIDATES`.
 */
export function matchGroups(
  candidates: Map<number, number[]>,
  oneAmount: (row: number) => number | null,
  manyAmount: (row: number) => number | null,
  tolerance: number,
  maxGroup: number,
  manyFree: Uint8Array,
  rank: (one: number, many: number) => number = () => 0,
  bounds: SearchBounds = noBounds(),
): GroupMatch[] {
  const out: GroupMatch[] = []
  const order = [...candidates.keys()].sort((a, b) => candidates.get(a)!.length - candidates.get(b)!.length || a - b)
  for (const one of order) {
    const target = oneAmount(one)
    if (target === null) continue
    const items = usableCandidates(one, target, candidates.get(one)!, manyAmount, tolerance, manyFree, rank)
    if (items.length === 0) continue
    if (items.length > MAX_CANDIDATES) {
      bounds.candidates_capped++
      items.length = MAX_CANDIDATES
    }
    const values = items.map((j) => manyAmount(j)!)
    const found = bestSubsets(values, target, tolerance, maxGroup)
    if (found?.exhausted) bounds.visits_exhausted++
    if (!found?.best) continue
    const chosen = found.best.map((k) => items[k])
    const match: GroupMatch = { one, many: chosen, delta: target - found.sum, ambiguous: found.tied !== undefined }
    if (found.tied) {
      const alt = found.tied.map((k) => items[k]).filter((j) => !chosen.includes(j))
      match.alternatives = alt
      for (const j of alt) manyFree[j] = 0
    }
    for (const j of chosen) manyFree[j] = 0
    out.push(match)
  }
  return out
}

/** The free candidates that could be in a group, best-ranked first. */
function usableCandidates(
  one: number,
  target: number,
  list: number[],
  amount: (row: number) => number | null,
  tolerance: number,
  free: Uint8Array,
  rank: (one: number, many: number) => number,
): number[] {
  const items: { row: number; value: number; rank: number }[] = []
  let negative = false
  let positive = false
  for (const j of list) {
    const value = free[j] ? amount(j) : null
    if (value === null) continue
    if (value < 0) negative = true
    if (value > 0) positive = true
    items.push({ row: j, value, rank: 0 })
  }
  // with every amount of one sign, a candidate beyond the target (plus tolerance) fits no group
  const fits = (v: number) =>
    negative && positive ? true : negative ? v >= target - tolerance : v <= target + tolerance
  const kept = items.filter((x) => fits(x.value))
  for (const x of kept) x.rank = rank(one, x.row)
  kept.sort((a, b) => b.rank - a.rank || Math.abs(target - a.value) - Math.abs(target - b.value) || a.row - b.row)
  return kept.map((x) => x.row)
}

interface SubsetResult {
  /** Undefined when no subset fits. */
  best?: number[]
  sum: number
  tied?: number[]
  /** The visit limit stopped the search: a fitting or better subset may have been missed. */
  exhausted: boolean
}

/** Depth-first over items sorted by value, pruned by the reachable range; bounded in visits. */
export function bestSubsets(
  values: number[],
  target: number,
  tolerance: number,
  maxGroup: number,
): SubsetResult | undefined {
  const idx = values.map((_, k) => k).sort((a, b) => values[b] - values[a])
  const v = idx.map((k) => values[k])
  const n = v.length
  // suffix sums of positives/negatives bound what the remaining items can still add
  const maxAdd = new Array<number>(n + 1).fill(0)
  const minAdd = new Array<number>(n + 1).fill(0)
  for (let k = n - 1; k >= 0; k--) {
    maxAdd[k] = maxAdd[k + 1] + Math.max(0, v[k])
    minAdd[k] = minAdd[k + 1] + Math.min(0, v[k])
  }
  let best: { set: number[]; diff: number; sum: number } | undefined
  let tied: number[] | undefined
  let visits = 0
  const chosen: number[] = []
  const better = (diff: number, size: number) =>
    !best || size < best.set.length || (size === best.set.length && diff < best.diff)
  const visit = (k: number, sum: number) => {
    if (++visits > MAX_VISITS) return
    if (chosen.length > 0) {
      const diff = Math.abs(target - sum)
      if (diff <= tolerance) {
        if (better(diff, chosen.length)) {
          best = { set: [...chosen], diff, sum }
          tied = undefined
        } else if (best && diff === best.diff && chosen.length === best.set.length) {
          tied ??= [...chosen]
        }
      }
    }
    if (chosen.length >= maxGroup || k >= n) return
    if (best && chosen.length + 1 > best.set.length) return
    if (sum + maxAdd[k] < target - tolerance || sum + minAdd[k] > target + tolerance) return
    for (let m = k; m < n; m++) {
      chosen.push(m)
      visit(m + 1, sum + v[m])
      chosen.pop()
    }
  }
  visit(0, 0)
  const exhausted = visits > MAX_VISITS
  if (!best) return exhausted ? { sum: 0, exhausted } : undefined
  const found = best as { set: number[]; diff: number; sum: number }
  const result: SubsetResult = { best: found.set.map((m) => idx[m]), sum: found.sum, exhausted }
  if (tied) result.tied = (tied as number[]).map((m) => idx[m])
  return result
}
