// A pass without equality keys: the band chosen on the data (band-choice.ts), each pair in it
// checked cheap conjuncts first, stopping at the first that fails; costly conjuncts (a
// similarity()) only for the pairs that pass every cheap one.
//
// The nearest miss of a record the pass leaves unmatched (nearmiss.ts) is the pair of lowest
// rank (hashpass.ts `rank`: fewest failed conjuncts, a pair failing a cheap one counting every
// costly one as failed), the lowest record number on a tie, among the pairs of its
// neighbourhood: those within the pass's first band written with both bounds (its conjuncts
// hold), whichever band the join chose on the data. That depends on the recipe and the data
// alone, so the PostgreSQL engine (connectors/postgres/pushdown.ts) explains with the same pairs. Computed in
// two parts:
//   1. every pair of records free at the pass that passes its cheap conjuncts: the join checked
//      their costly conjuncts anyway, so it keeps their nearest misses as it goes, and nothing is
//      computed twice (a candidate, passing everything, is the nearest miss there can be);
//   2. then every other pair of the neighbourhood (failing a cheap conjunct, or with a record
//      taken before the pass), probed after the last pass for the unmatched records only; a
//      pair's costly conjuncts are checked only when it passes every cheap one and could win.
// Counting a costly conjunct only where every cheap one holds is what keeps part 2 cheap: an
// exact count for every pair of the neighbourhood would cost a similarity per pair (measured on
// 45,000 unkeyed transfers: 80 s instead of 14 s for the whole command). Both parts depend only
// on the full masks, never on the order of evaluation: test/check-order.test.ts holds them to the
// unordered evaluation.

import { type BandEstimate, chooseBand } from './band-choice.js'
import { COSTLY, conjunctCost } from '../plan/cost.js'
import type { ConjunctChecks } from './checks.js'
import { improves, keepNearest, type NearMisses, nearMisses } from './hashpass.js'
import { bandPairs, type CompiledBand } from './join.js'
import { firstClosedBand } from '../plan/plan.js'
import type { PreparedPass } from './pass.js'

/** What a band pass reports: the band it used, its estimate and what it found. */
export interface BandReport {
  /** The band column used, as `side.column`. */
  column: string
  estimated_pairs: number
  /** Pairs within the band (and the other cheap bands on its side), each checked. */
  pairs: number
  /** Pairs that satisfied every conjunct. */
  candidates: number
  /** Every band option with its estimate (the chosen one included). */
  options: BandEstimate[]
}

/** What a band join leaves for the evidence of unmatched records. */
export interface BandEvidence {
  chosen: CompiledBand
  /** Nearest misses among the pairs passing the cheap conjuncts, by row. */
  near: { left: NearMisses; right: NearMisses }
  /** Free flags by row when the pass began. */
  freeBefore: { left: Uint8Array; right: Uint8Array }
}

/** Finds the candidates of a band pass among the free records, and the join's part of their nearest misses. */
export function bandJoin(
  options: CompiledBand[],
  checks: ConjunctChecks,
  leftFree: Uint8Array,
  rightFree: Uint8Array,
  onCandidate: (i: number, j: number) => void,
): { evidence: BandEvidence; report: BandReport } {
  const leftRows = freeRows(leftFree)
  const rightRows = freeRows(rightFree)
  const { chosen, estimates } = chooseBand(options, leftRows, rightRows)
  const { cheapHolds, costly } = checks
  const left = nearMisses(leftFree.length, checks.total)
  const right = nearMisses(rightFree.length, checks.total)
  let candidates = 0
  // pairs outside another band on the chosen band's side fail its conjunct, a cheap one: the scan
  // skips them without a check (bandPairs' `within`), to the same result
  const within = options.filter(
    (o) =>
      o !== chosen &&
      o.band.side === chosen.band.side &&
      (o.band.lo ? conjunctCost(o.band.lo) : 0) + (o.band.hi ? conjunctCost(o.band.hi) : 0) < COSTLY,
  )
  const pairs = bandPairs(
    chosen,
    leftRows,
    rightRows,
    (i, j) => {
      if (!cheapHolds(i, j)) return true
      const failed = costly === null ? 0 : costly(i, j)
      if (failed === 0) {
        candidates++
        onCandidate(i, j)
      }
      keepNearest(left, i, j, failed, checks)
      keepNearest(right, j, i, failed, checks)
      return true
    },
    within,
  )
  const estimate = estimates.find((e) => e.column === chosen.name)!.estimated_pairs
  return {
    evidence: { chosen, near: { left, right }, freeBefore: { left: leftFree.slice(), right: rightFree.slice() } },
    report: { column: chosen.name, estimated_pairs: estimate, pairs, candidates, options: estimates },
  }
}

/** The band a band pass's evidence is taken within: the first written with both bounds (else the first). */
export function explainedBand(pass: PreparedPass): { band: CompiledBand; mask: number } {
  const band = firstClosedBand(pass.plan)!
  const compiled = pass.bands[pass.plan.bands.indexOf(band)]
  // the bits of the band's own conjuncts: a pair is in the neighbourhood when none of them fails
  // (a float band errs wide, so its bounds alone would take in a pair the conjunct rejects)
  let mask = 0
  pass.checks.checked.forEach((index, bit) => {
    if (band.texts.includes(pass.plan.conjuncts[index].text)) mask |= 1 << bit
  })
  return { band: compiled, mask }
}

/**
 * Completes the nearest misses of one side's unmatched records (`unmatched`: flags by row) after
 * the last pass with the pairs of their neighbourhood the join did not account for (see the top
 * of this file).
 */
export function completeNearMisses(
  side: 'l' | 'r',
  pass: PreparedPass,
  evidence: BandEvidence,
  unmatched: Uint8Array,
): NearMisses {
  const near = side === 'l' ? evidence.near.left : evidence.near.right
  const otherFree = side === 'l' ? evidence.freeBefore.right : evidence.freeBefore.left
  const ownRows = freeRows(unmatched)
  if (ownRows.length === 0) return near
  const otherRows = new Int32Array(otherFree.length)
  for (let k = 0; k < otherRows.length; k++) otherRows[k] = k
  const { cheapHolds, cheap, costly, lazy } = pass.checks
  const { band, mask } = explainedBand(pass)
  const visit = (own: number, other: number, i: number, j: number): boolean => {
    if (otherFree[other] === 1 && cheapHolds(i, j)) return true // the join's part
    let failed = cheap(i, j)
    if ((failed & mask) !== 0) return true // outside the band's own conjuncts
    // costly conjuncts count only where every cheap one holds (hashpass.ts `rank`)
    if (costly !== null && (!lazy || (failed === 0 && improves(near, own, other)))) failed |= costly(i, j)
    keepNearest(near, own, other, failed, pass.checks)
    return true
  }
  if (side === 'l') bandPairs(band, ownRows, otherRows, (i, j) => visit(i, j, i, j))
  else bandPairs(band, otherRows, ownRows, (i, j) => visit(j, i, i, j))
  return near
}

function freeRows(free: Uint8Array): Int32Array {
  let n = 0
  for (let i = 0; i < free.length; i++) n += free[i]
  const rows = new Int32Array(n)
  for (let i = 0, k = 0; i < free.length; i++) if (free[i]) rows[k++] = i
  return rows
}
