// The join of a pass with equality keys, over partitioned sides (partition.ts): partition by
// partition, a small hash table on the right rows, probed with the left rows. Every pair with
// equal keys where at least one record is still free has its conjuncts checked once, and serves
// twice: as a candidate when both records are free and every conjunct holds, and as evidence —
// each free record keeps its nearest miss (the pair passing the largest share of conjuncts),
// which explains it if it ends unmatched. Costly conjuncts (similarity() ...) are checked only
// for a pair that can be a candidate or can still become a record's nearest miss (checks.ts).

import type { ConjunctChecks } from './checks.js'
import type { PartitionedSide } from './partition.js'

/**
 * Per position of one side: the nearest miss found so far. Every array starts as zeros, which
 * mean "none": fresh zeroed memory needs no fill pass, and on the benchmark VM writing a page the
 * first time is the expensive part (see docs/ARCHITECTURE.md, "memory").
 */
export interface NearMisses {
  /** Conjuncts the candidate failed, plus one; 0 = no candidate. */
  missed: Uint8Array
  /** The candidate's position on the other side (when `missed` > 0). */
  candidate: Int32Array
  /** Index (in the plan's conjuncts) of the first conjunct it failed (when `missed` > 1). */
  conjunct: Int16Array
  /** Candidates examined, capped. */
  seen: Uint8Array
  /** Conjuncts of the pass: a candidate's share passed is (total - missed + 1) / total. */
  total: number
}

export function nearMisses(n: number, total: number): NearMisses {
  return {
    missed: new Uint8Array(n),
    candidate: new Int32Array(n),
    conjunct: new Int16Array(n),
    seen: new Uint8Array(n),
    total,
  }
}

/** Share of its pass's conjuncts the nearest miss at `k` passed; -1 when there is none. */
export function nearShare(near: NearMisses, k: number): number {
  const missed = near.missed[k]
  return missed === 0 ? -1 : (near.total - missed + 1) / near.total
}

/** Candidates examined per record and pass: enough to find a near miss, bounded for wide joins. */
export const CANDIDATES_PER_RECORD = 32

function lowestBit(x: number): number {
  return 31 - Math.clz32(x & -x)
}

function bitCount(x: number): number {
  let n = 0
  while (x !== 0) {
    x &= x - 1
    n++
  }
  return n
}

/**
 * Whether a pair failing at least the conjuncts in `failed` could still become the nearest miss
 * of `own`: it has not seen its fill of candidates, and the pair could miss fewer conjuncts than
 * its nearest miss so far. When it could not, its costly conjuncts need not be checked: `record`
 * would count it and keep the nearest miss whatever they say.
 */
export function improves(near: NearMisses, own: number, failed: number): boolean {
  if (near.seen[own] >= CANDIDATES_PER_RECORD) return false
  const best = near.missed[own]
  return best === 0 || bitCount(failed) + 1 < best
}

/** Counts the pair among the candidates `own` examined (at most CANDIDATES_PER_RECORD) and keeps it if nearer. */
export function record(near: NearMisses, own: number, other: number, failed: number, checks: ConjunctChecks): void {
  if (near.seen[own] >= CANDIDATES_PER_RECORD) return
  near.seen[own]++
  keepNearest(near, own, other, failed, checks)
}

/** Keeps the pair as `own`'s nearest miss if it fails fewer conjuncts than the one kept (the first on a tie). */
export function keepNearest(
  near: NearMisses,
  own: number,
  other: number,
  failed: number,
  checks: ConjunctChecks,
): void {
  const missed = bitCount(failed) + 1
  const best = near.missed[own]
  if (best === 0 || missed < best) {
    near.missed[own] = missed
    near.candidate[own] = other
    if (failed !== 0) near.conjunct[own] = checks.checked[lowestBit(failed)]
  }
}

export function partitionedJoin(
  left: PartitionedSide,
  right: PartitionedSide,
  equal: (i: number, j: number) => boolean,
  checks: ConjunctChecks,
  leftFree: Uint8Array,
  rightFree: Uint8Array,
  leftNear: NearMisses,
  rightNear: NearMisses,
  onCandidate: (i: number, j: number) => void,
): void {
  const parts = left.start.length - 1
  let largest = 0
  for (let p = 0; p < parts; p++) largest = Math.max(largest, right.start[p + 1] - right.start[p])
  let cap = 16
  while (cap < largest * 2) cap *= 2
  const heads = new Int32Array(cap)
  const next = new Int32Array(Math.max(1, largest))
  const lh = left.hash
  const rh = right.hash
  const cheapOf = checks.cheap
  const costlyOf = checks.costly
  const lazy = checks.lazy
  for (let p = 0; p < parts; p++) {
    const rs = right.start[p]
    const re = right.start[p + 1]
    const ls = left.start[p]
    const le = left.start[p + 1]
    if (rs === re || ls === le) continue
    let size = 16
    while (size < (re - rs) * 2) size *= 2
    const mask = size - 1
    heads.fill(-1, 0, size)
    for (let m = re - 1; m >= rs; m--) {
      const slot = rh[m] & mask
      next[m - rs] = heads[slot]
      heads[slot] = m - rs
    }
    for (let k = ls; k < le; k++) {
      const h = lh[k]
      const lf = leftFree[k]
      for (let n = heads[h & mask]; n >= 0; n = next[n]) {
        const m = rs + n
        if (rh[m] !== h) continue
        const rf = rightFree[m]
        if ((lf | rf) === 0 || !equal(k, m)) continue
        let failed = cheapOf(k, m)
        const both = lf === 1 && rf === 1
        if (
          costlyOf !== null &&
          (!lazy ||
            (failed === 0 && both) ||
            (lf === 1 && improves(leftNear, k, failed)) ||
            (rf === 1 && improves(rightNear, m, failed)))
        )
          failed |= costlyOf(k, m)
        if (failed === 0 && both) onCandidate(k, m)
        if (lf === 1) record(leftNear, k, m, failed, checks)
        if (rf === 1) record(rightNear, m, k, failed, checks)
      }
    }
  }
}
