// The join of a pass with equality keys, over partitioned sides (partition.ts): partition by
// partition, a small hash table on the right rows, probed with the left rows. Every pair with
// equal keys where at least one record is still free has its conjuncts checked once, and serves
// twice: as a candidate when both records are free and every conjunct holds, and as evidence —
// each free record keeps its nearest miss (the pair passing the largest share of conjuncts),
// which explains it if it ends unmatched. Costly conjuncts (similarity() ...) are checked only
// for a pair that can be a candidate or can still become a record's nearest miss (checks.ts).

import { largeArray } from '../data/alloc.js'
import type { ConjunctChecks } from './checks.js'
import type { PartitionedSide } from './partition.js'

/**
 * Per position of one side: the nearest miss found so far. Every array starts as zeros, which
 * mean "none": fresh zeroed memory needs no fill pass, and on the benchmark VM writing a page the
 * first time is the expensive part (see docs/ARCHITECTURE.md, "memory").
 *
 * Which pair is a record's nearest miss depends on the recipe and the data alone, never on the
 * order pairs are visited in or on how many there are, so the PostgreSQL engine
 * (connectors/postgres/pushdown.ts) finds the same one: every pair of the record's neighbourhood counts (no cap),
 * ranked by `rank` (fewest failed conjuncts, costly ones weighed only where every cheap one
 * holds), a tie going to the lowest position on the other side. (Positions of a partition are in
 * row order and a record's hash candidates all share its partition, so the lowest position is
 * the lowest record number.)
 */
export interface NearMisses {
  /** The candidate's rank plus one; 0 = no candidate. */
  missed: Uint8Array
  /** The candidate's position on the other side (when `missed` > 0). */
  candidate: Int32Array
  /** Index (in the plan's conjuncts) of the first conjunct it failed (when `missed` > 1). */
  conjunct: Int16Array
  /** Conjuncts of the pass: a candidate's share passed is (total - missed + 1) / total. */
  total: number
}

export function nearMisses(n: number, total: number): NearMisses {
  return {
    missed: largeArray(Uint8Array, n),
    candidate: largeArray(Int32Array, n),
    conjunct: largeArray(Int16Array, n),
    total,
  }
}

/** Share of its pass's conjuncts the nearest miss at `k` passed; -1 when there is none. */
export function nearShare(near: NearMisses, k: number): number {
  const missed = near.missed[k]
  return missed === 0 ? -1 : (near.total - missed + 1) / near.total
}

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
 * How far a pair failing the conjuncts in `failed` is from passing: the number it fails, where a
 * pair failing a cheap conjunct counts every costly one as failed too. Costly conjuncts (a
 * similarity()) are thus only ever evaluated for a pair meeting every cheap one, which the join
 * does anyway: an exact count for every pair of a wide band would cost a similarity per pair (on
 * 45,000 unkeyed transfers, the whole command took 80 s instead of 14 s: measured).
 */
export function rank(failed: number, checks: ConjunctChecks): number {
  const cheap = failed & ~checks.costlyBits
  return cheap === 0 ? bitCount(failed) : bitCount(cheap) + checks.costlyCount
}

/**
 * Whether a pair meeting every cheap conjunct could become `own`'s nearest miss whatever its
 * costly conjuncts say (rank 0, or as low as the kept one with a lower position): when it could
 * not, its costly conjuncts need not be checked for the evidence.
 */
export function improves(near: NearMisses, own: number, other: number): boolean {
  const best = near.missed[own]
  return best === 0 || best > 1 || other < near.candidate[own]
}

/** Keeps the pair as `own`'s nearest miss if it ranks lower than the one kept, or as low with a lower position. */
export function keepNearest(
  near: NearMisses,
  own: number,
  other: number,
  failed: number,
  checks: ConjunctChecks,
): void {
  const missed = rank(failed, checks) + 1
  const best = near.missed[own]
  if (best === 0 || missed < best || (missed === best && other < near.candidate[own])) {
    near.missed[own] = missed
    near.candidate[own] = other
    // the first failed conjunct that counts: a cheap one if any failed
    const cheap = failed & ~checks.costlyBits
    if (failed !== 0) near.conjunct[own] = checks.checked[lowestBit(cheap !== 0 ? cheap : failed)]
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
        // costly conjuncts only where every cheap one holds (see `rank`), and there only when
        // the pair may be a candidate or a nearest miss
        if (
          costlyOf !== null &&
          (!lazy ||
            (failed === 0 &&
              (both || (lf === 1 && improves(leftNear, k, m)) || (rf === 1 && improves(rightNear, m, k)))))
        )
          failed |= costlyOf(k, m)
        if (failed === 0 && both) onCandidate(k, m)
        if (lf === 1) keepNearest(leftNear, k, m, failed, checks)
        if (rf === 1) keepNearest(rightNear, m, k, failed, checks)
      }
    }
  }
}
