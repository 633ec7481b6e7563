// Why a record is unmatched: for each pass that ran, the other side's records that share its
// join (its hash keys, or its first band written with both bounds), checked conjunct by
// conjunct; the candidate passing the largest share of a pass's conjuncts is the nearest miss
// (the lowest record number on a tie; an earlier pass wins a tie of shares), and the first
// conjunct it failed is what rejected it. A candidate passing them all lost to a better-scored
// or tied pair, or to a group whose sum did not fit. Every candidate counts, none is capped, so
// the PostgreSQL engine (connectors/postgres/pushdown.ts) gives the same evidence. Hash passes record near
// misses during their join (hashpass.ts); band passes are completed here for the records still
// unmatched after the last pass (bandpass.ts).

import { largeArray } from '../data/alloc.js'
import type { Side } from '../../language/predicate.js'
import type { UnmatchedSet } from './evidence.js'
import { sharedArray } from '../data/shared.js'
import { completeNearMisses } from '../match/bandpass.js'
import { type NearMisses, nearShare } from '../match/hashpass.js'
import type { PassEvidence } from '../match/pass.js'

/** Positions merged a block at a time (see merge). */
const BLOCK = 1024

export function explainUnmatched(
  side: Side,
  passes: PassEvidence[],
  ownFree: Uint8Array,
  otherFree: Uint8Array,
): UnmatchedSet {
  let count = 0
  for (let r = 0; r < ownFree.length; r++) count += ownFree[r]
  // in shared memory, as the match set is: the result-set writer's helper reads them without a
  // copy (posted, the two sides' sets were serialized and copied, ~10 MB at 1M × 1M)
  const rows = sharedArray(Int32Array, count)
  for (let r = 0, k = 0; r < ownFree.length; r++) if (ownFree[r]) rows[k++] = r
  const candidate = sharedArray(Int32Array, count).fill(-1)
  const pass = sharedArray(Int32Array, count).fill(-1)
  const conjunct = sharedArray(Int32Array, count).fill(-1)
  const candidateTaken = sharedArray(Uint8Array, count)
  const tiedWith = sharedArray(Int32Array, count).fill(-1)
  if (count === 0) return { rows, candidate, pass, conjunct, candidateTaken, tiedWith }

  // slot of each unmatched row in `rows`
  const slot = largeArray(Int32Array, ownFree.length).fill(-1)
  for (let k = 0; k < count; k++) slot[rows[k]] = k
  const best = largeArray(Float64Array, count).fill(-1)
  // A block's records are found first and each later read is a loop of its own: the reads of one
  // record (its slot, its candidate's row, whether that was taken) land on random cache lines, and
  // independent reads in a loop overlap their misses where one record's chain of them waits on each.
  const ks = new Int32Array(BLOCK)
  const slots = new Int32Array(BLOCK)
  const others = new Int32Array(BLOCK)
  const merge = (
    index: number,
    near: NearMisses,
    ownRows: Int32Array | null,
    otherRows: Int32Array | null,
    freeAfterPass: Uint8Array | null,
  ) => {
    const { missed } = near
    for (let block = 0; block < missed.length; block += BLOCK) {
      const end = Math.min(missed.length, block + BLOCK)
      let n = 0
      for (let k = block; k < end; k++) {
        if (missed[k] !== 0 && (freeAfterPass === null || freeAfterPass[k] !== 0)) ks[n++] = k
      }
      // matched in the end: nothing to explain (-1)
      for (let i = 0; i < n; i++) {
        const own = ownRows === null ? ks[i] : ownRows[ks[i]]
        slots[i] = ownFree[own] === 0 ? -1 : slot[own]
      }
      for (let i = 0; i < n; i++) {
        const c = near.candidate[ks[i]]
        others[i] = otherRows === null ? c : otherRows[c]
      }
      for (let i = 0; i < n; i++) {
        const s = slots[i]
        if (s < 0) continue
        const k = ks[i]
        const share = nearShare(near, k)
        if (share <= best[s]) continue
        best[s] = share
        const other = others[i]
        candidate[s] = other
        pass[s] = index
        conjunct[s] = missed[k] === 1 ? -1 : near.conjunct[k]
        candidateTaken[s] = otherFree[other] ? 0 : 1
      }
    }
  }

  for (const p of passes) {
    if (p.near) {
      const near = side === 'l' ? p.near.left : p.near.right
      const [ownRows, otherRows, free] =
        side === 'l'
          ? [p.near.leftRows, p.near.rightRows, p.near.leftFree]
          : [p.near.rightRows, p.near.leftRows, p.near.rightFree]
      merge(p.index, near, ownRows, otherRows, free)
    } else if (p.band) {
      // the join's near misses, completed with the records it could not see
      const { pass, join } = p.band
      merge(p.index, completeNearMisses(side, pass, join, ownFree), null, null, null)
    }
  }
  const set = { rows, candidate, pass, conjunct, candidateTaken, tiedWith }
  notePassedOver(set, side, passes, otherFree)
  return set
}

/**
 * A record `prefer` left unmatched is explained by the tie it lost, whatever else came near: its
 * candidate is the partner it tied for, and `tiedWith` the record preferred. (A record a later
 * pass matched is not in the set.) Shared with the PostgreSQL engine.
 */
export function notePassedOver(
  set: UnmatchedSet,
  side: Side,
  passes: Pick<PassEvidence, 'index' | 'passedOver'>[],
  otherFree: Uint8Array,
): void {
  const notes = passes.filter((p) => p.passedOver?.some((n) => n.side === side))
  if (!notes.length) return
  const slot = new Map<number, number>()
  set.rows.forEach((row, k) => slot.set(row, k))
  for (const p of notes) {
    for (const n of p.passedOver!) {
      const k = n.side === side ? slot.get(n.record) : undefined
      if (k === undefined) continue
      set.candidate[k] = n.partner
      set.pass[k] = p.index
      set.conjunct[k] = -1
      set.candidateTaken[k] = otherFree[n.partner] ? 0 : 1
      set.tiedWith[k] = n.winner
    }
  }
}
