// Why a record is unmatched: for each pass that ran, the other side's records that share its
// join (its hash keys, or its band), checked conjunct by conjunct; the candidate passing the
// largest share of a pass's conjuncts is the nearest miss, and the first conjunct it failed is
// what rejected it. A candidate passing them all lost to a better-scored or tied pair, or to a
// group whose sum did not fit.

import type { Side } from '../recipes/predicate.js'
import type { UnmatchedSet } from './evidence.js'
import { bandCandidates, conjunctTests, hashCandidates } from './join.js'
import type { PreparedPass } from './reconcile.js'
import type { Table } from './table.js'

/** Candidates examined per record and pass: enough to find a near miss, bounded for wide joins. */
const CANDIDATES_PER_RECORD = 32

export function explainUnmatched(
  side: Side,
  passes: PreparedPass[],
  ownFree: Uint8Array,
  otherFree: Uint8Array,
  tables: { l: Table; r: Table },
): UnmatchedSet {
  let count = 0
  for (let r = 0; r < ownFree.length; r++) count += ownFree[r]
  const rows = new Int32Array(count)
  for (let r = 0, k = 0; r < ownFree.length; r++) if (ownFree[r]) rows[k++] = r
  const candidate = new Int32Array(count).fill(-1)
  const pass = new Int32Array(count).fill(-1)
  const conjunct = new Int32Array(count).fill(-1)
  const candidateTaken = new Uint8Array(count)
  if (count === 0) return { rows, candidate, pass, conjunct, candidateTaken }

  // position of each unmatched row in `rows`
  const slot = new Int32Array(ownFree.length).fill(-1)
  for (let k = 0; k < count; k++) slot[rows[k]] = k
  const best = new Float64Array(count).fill(-1)
  const otherLength = side === 'l' ? tables.r.length : tables.l.length
  const others = new Int32Array(otherLength)
  for (let r = 0; r < otherLength; r++) others[r] = r

  for (const p of passes) {
    const tests = conjunctTests(p.plan, p.compiler)
    const seen = new Uint8Array(count)
    const visit = (i: number, j: number) => {
      const own = side === 'l' ? i : j
      const other = side === 'l' ? j : i
      const k = slot[own]
      if (seen[k] >= CANDIDATES_PER_RECORD) return
      seen[k]++
      let passed = 0
      let failed = -1
      for (let n = 0; n < tests.length; n++) {
        if (tests[n](i, j)) passed++
        else if (failed < 0) failed = n
      }
      const share = passed / tests.length
      if (share > best[k]) {
        best[k] = share
        candidate[k] = other
        pass[k] = p.index
        conjunct[k] = failed
        candidateTaken[k] = otherFree[other] ? 0 : 1
      }
    }
    const all = () => true
    const [leftRows, rightRows] = side === 'l' ? [rows, others] : [others, rows]
    if (p.keys) hashCandidates(p.keys, leftRows, rightRows, all, visit)
    else bandCandidates(p.plan, p.compiler, leftRows, rightRows, all, visit)
  }
  return { rows, candidate, pass, conjunct, candidateTaken }
}
