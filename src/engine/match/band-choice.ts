// Which band a pass joins on, chosen on the data when it runs. A pass of amount ±10% and a
// 21-day window has two band options; which prunes more depends on the data (how dense the
// dates are, how spread the amounts), not on the order the conjuncts were written. Each option
// is estimated by the pairs it would visit: a sample of the probe side's records, each counting
// by binary search how many of a sample of the sorted side fall within its bounds, scaled to the
// whole sides. The sample is seeded (the same rows every run, so the same choice), and when a
// side is small it is the whole side, so the estimate is then exact.

import { type CompiledBand, lowerBound, probeBounds, upperBound } from './join.js'
import { prng } from '../data/prng.js'

/** Records sampled from the sorted side and from the probe side. */
export const SORTED_SAMPLE = 4096
export const PROBE_SAMPLE = 1024

export interface BandEstimate {
  /** `side.column` of the option. */
  column: string
  /** Pairs the band would visit over the free records, estimated. */
  estimated_pairs: number
}

export interface BandChoice {
  chosen: CompiledBand
  estimates: BandEstimate[]
}

/** The option with the fewest estimated pairs; on a tie, the first written. */
export function chooseBand(options: CompiledBand[], leftRows: Int32Array, rightRows: Int32Array): BandChoice {
  if (options.length === 0) throw new Error('a band pass needs a band')
  const estimates = options.map((b) => ({ column: b.name, estimated_pairs: estimatePairs(b, leftRows, rightRows) }))
  let best = 0
  for (let k = 1; k < options.length; k++) if (estimates[k].estimated_pairs < estimates[best].estimated_pairs) best = k
  return { chosen: options[best], estimates }
}

export function estimatePairs(b: CompiledBand, leftRows: Int32Array, rightRows: Int32Array): number {
  const [sortedRows, probeRows] = b.band.side === 'r' ? [rightRows, leftRows] : [leftRows, rightRows]
  if (sortedRows.length === 0 || probeRows.length === 0) return 0
  const random = prng(0x5eed)
  const sortedPick = sample(sortedRows, SORTED_SAMPLE, random)
  const values: number[] = []
  for (const row of sortedPick) {
    const v = b.value(row)
    if (v !== null) values.push(v)
  }
  const keys = Float64Array.from(values).sort()
  const probePick = sample(probeRows, PROBE_SAMPLE, random)
  let hits = 0
  for (const row of probePick) {
    const bounds = probeBounds(b, row)
    if (bounds !== null) hits += Math.max(0, upperBound(keys, bounds[1]) - lowerBound(keys, bounds[0]))
  }
  const perProbe = (hits / probePick.length) * (sortedRows.length / sortedPick.length)
  return Math.round(perProbe * probeRows.length)
}

/** `n` rows drawn with replacement, or all of them when there are no more than `n`. */
function sample(rows: Int32Array, n: number, random: () => number): Int32Array {
  if (rows.length <= n) return rows
  const out = new Int32Array(n)
  for (let k = 0; k < n; k++) out[k] = rows[Math.floor(random() * rows.length)]
  return out
}
