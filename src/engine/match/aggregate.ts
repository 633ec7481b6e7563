// Aggregate patterns. 1:N (and N:1, mirrored): one record against a group of its candidates on
// the other side whose amounts sum to what its amount asks (a window of sums solved from the pass's
// equation, equation.ts), found by a bounded subset-sum search (not merely "all candidates").
// Amounts are integer units at one scale, so sums and windows are exact.

import type { SumWindow } from './equation.js'

export interface GroupMatch {
  one: number
  many: number[]
  /** The group's sum, in units of the summed amounts. */
  sum: number
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
 * For each record of the "one" side (most constrained first), the best subset (size 1..maxGroup)
 * of its free candidates whose sum is in the record's window: one that fits exactly first, then
 * the smallest, then the closest. Two different best subsets are a tie: the match is flagged
 * ambiguous and holds both.
 *
 * Candidates are pruned and ranked before the search's cap applies, so which group is found does
 * not depend on the order the join produced them: a candidate that cannot be part of any group
 * (above the window's top when no candidate is negative) is dropped, the rest are
 * ranked by `rank` (how alike the pair is, by date and reference: higher first), then by amount
 * closeness, and only then cut to `MAX_CANDIDATES`.
 */
export function matchGroups(
  candidates: Map<number, number[]>,
  /** The sums that fit a record of the "one" side; null when its amount is NULL. */
  windowOf: (row: number) => SumWindow | null,
  manyAmount: (row: number) => number | null,
  maxGroup: number,
  manyFree: Uint8Array,
  rank: (one: number, many: number) => number = () => 0,
  bounds: SearchBounds = noBounds(),
): GroupMatch[] {
  const out: GroupMatch[] = []
  const order = [...candidates.keys()].sort((a, b) => candidates.get(a)!.length - candidates.get(b)!.length || a - b)
  const windows = new Map<number, SumWindow | null>()
  const decided = new Set<number>()
  // Exact fits first, for every record, then fits within tolerance: a record's near group must not
  // take the members another record's exact equation needs (a wider tolerance then costs nothing).
  for (const round of ['exact', 'within'] as const) {
    for (const one of order) {
      if (decided.has(one)) continue
      if (!windows.has(one)) windows.set(one, windowOf(one))
      const full = windows.get(one)!
      if (full === null || full.lo > full.hi) continue
      let window = full
      if (round === 'exact') {
        if (full.exact === null || full.exact < full.lo || full.exact > full.hi) continue
        window = { ...full, lo: full.exact, hi: full.exact }
      }
      // a tolerance of 0: the exact round is the whole search
      const last = round === 'within' || (window.lo === full.lo && window.hi === full.hi)
      const match = searchGroup(one, window, candidates.get(one)!, manyAmount, maxGroup, manyFree, rank, bounds, last)
      if (match || last) decided.add(one)
      if (match) out.push(match)
    }
  }
  return out
}

/**
 * One record's best group within `window`, its members taken. The bounds the search met are
 * counted when it found a group or is the record's `last` search (an exact round that found
 * nothing is searched again within tolerance, and counted there).
 */
function searchGroup(
  one: number,
  window: SumWindow,
  list: number[],
  manyAmount: (row: number) => number | null,
  maxGroup: number,
  manyFree: Uint8Array,
  rank: (one: number, many: number) => number,
  bounds: SearchBounds,
  last: boolean,
): GroupMatch | null {
  const items = usableCandidates(one, window, list, manyAmount, manyFree, rank)
  if (items.length === 0) return null
  const capped = items.length > MAX_CANDIDATES
  if (capped) items.length = MAX_CANDIDATES
  const values = items.map((j) => manyAmount(j)!)
  const found = bestSubsets(values, window, maxGroup)
  if (found?.best || last) {
    if (capped) bounds.candidates_capped++
    if (found?.exhausted) bounds.visits_exhausted++
  }
  if (!found?.best) return null
  const chosen = found.best.map((k) => items[k])
  const match: GroupMatch = { one, many: chosen, sum: found.sum, ambiguous: found.tied !== undefined }
  if (found.tied) {
    const alt = found.tied.map((k) => items[k]).filter((j) => !chosen.includes(j))
    match.alternatives = alt
    for (const j of alt) manyFree[j] = 0
  }
  for (const j of chosen) manyFree[j] = 0
  return match
}

/** The free candidates that could be in a group, best-ranked first. */
function usableCandidates(
  one: number,
  window: SumWindow,
  list: number[],
  amount: (row: number) => number | null,
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
  // with every amount of one sign, a candidate beyond the window fits no group
  const fits = (v: number) => (negative && positive ? true : negative ? v >= window.lo : v <= window.hi)
  const kept = items.filter((x) => fits(x.value))
  for (const x of kept) x.rank = rank(one, x.row)
  const off = (v: number) => Math.abs(v - window.base - window.frac)
  kept.sort((a, b) => b.rank - a.rank || off(a.value) - off(b.value) || a.row - b.row)
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

/**
 * Depth-first over items sorted by value, pruned by the reachable range; bounded in visits. A
 * subset whose sum is the exact one beats any other, then fewer items, then closer to the ideal
 * sum; once a group is found, larger ones are searched only for an exact fit.
 */
export function bestSubsets(values: number[], window: SumWindow, maxGroup: number): SubsetResult | undefined {
  const idx = values.map((_, k) => k).sort((a, b) => values[b] - values[a])
  const v = idx.map((k) => values[k])
  const n = v.length
  const { lo, hi, exact, base, frac } = window
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
  // how far a sum is from the ideal: 0 only for the exact sum (S - base is a small exact integer)
  const distance = (sum: number) => Math.abs(sum - base - frac)
  const better = (diff: number, size: number) => {
    if (!best) return true
    if ((diff === 0) !== (best.diff === 0)) return diff === 0
    return size < best.set.length || (size === best.set.length && diff < best.diff)
  }
  const visit = (k: number, sum: number) => {
    if (++visits > MAX_VISITS) return
    if (chosen.length > 0 && sum >= lo && sum <= hi) {
      const diff = distance(sum)
      if (better(diff, chosen.length)) {
        best = { set: [...chosen], diff, sum }
        tied = undefined
      } else if (best && diff === best.diff && chosen.length === best.set.length) {
        tied ??= [...chosen]
      }
    }
    if (chosen.length >= maxGroup || k >= n) return
    // past the best group's size only an exact fit can still win
    const growing = best !== undefined && chosen.length + 1 > best.set.length
    if (growing && (best!.diff === 0 || exact === null)) return
    const from = growing ? exact! : lo
    const to = growing ? exact! : hi
    if (sum + maxAdd[k] < from || sum + minAdd[k] > to) return
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
