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

const MAX_CANDIDATES = 24
const MAX_VISITS = 200_000

/**
 * For each record of the "one" side (most constrained first), the smallest subset (size 1..maxGroup)
 * of its free candidates whose sum is within `tolerance` of its amount, closest first.
 * Two different best subsets are a tie: the match is flagged ambiguous and holds both.
 */
export function matchGroups(
  candidates: Map<number, number[]>,
  oneAmount: (row: number) => number | null,
  manyAmount: (row: number) => number | null,
  tolerance: number,
  maxGroup: number,
  manyFree: Uint8Array,
): GroupMatch[] {
  const out: GroupMatch[] = []
  const order = [...candidates.keys()].sort((a, b) => candidates.get(a)!.length - candidates.get(b)!.length || a - b)
  for (const one of order) {
    const target = oneAmount(one)
    if (target === null) continue
    const items = candidates
      .get(one)!
      .filter((j) => manyFree[j] && manyAmount(j) !== null)
      .slice(0, MAX_CANDIDATES)
    if (items.length === 0) continue
    const values = items.map((j) => manyAmount(j)!)
    const found = bestSubsets(values, target, tolerance, maxGroup)
    if (!found) continue
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

interface SubsetResult {
  best: number[]
  sum: number
  tied?: number[]
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
  if (!best) return undefined
  const found = best as { set: number[]; diff: number; sum: number }
  const result: SubsetResult = { best: found.set.map((m) => idx[m]), sum: found.sum }
  if (tied) result.tied = (tied as number[]).map((m) => idx[m])
  return result
}
