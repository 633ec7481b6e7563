// Histograms of the matches' deltas, binned on the server: the page draws bars, it computes nothing.
// Amount deltas arrive as integer units (cents at scale 2), so their bins are whole steps of units
// with edges printed exactly (no float formatting can move a cent); days are whole days unless
// timestamps made them fractional, when the bins are ranges [from, to).

import { breather } from './batches.js'

export interface Bin {
  /** The bin's first value; with `discrete`, `to` is its last (inclusive), else its end (exclusive). */
  from: string
  to: string
  count: number
}

export interface Histogram {
  /** Matches with a value. */
  counted: number
  /** Matches without one (a pass that compares no amount or date). */
  missing: number
  /** Values exactly 0: the matches that agree. */
  zero: number
  min: string | null
  max: string | null
  /** Whole steps: each bin holds the values from..to inclusive; else [from, to). */
  discrete: boolean
  bins: Bin[]
}

/** The smallest of 1, 2, 5 × 10^k at least x: bin edges a reader can add up. */
export function niceStep(x: number, integral: boolean): number {
  if (!(x > 0)) return 1
  const power = 10 ** Math.floor(Math.log10(x))
  for (const m of [1, 2, 5, 10]) if (m * power >= x * (1 - 1e-12)) return integral ? Math.max(1, m * power) : m * power
  return 10 * power
}

/** Collects a delta column batch by batch (NaN: no value), then bins it. */
export class HistogramBuilder {
  private readonly chunks: Float64Array[] = []
  private min = Infinity
  private max = -Infinity
  private counted = 0
  private missing = 0
  private zero = 0
  private integral = true

  /** A batch's values; the builder keeps the array. */
  add(values: Float64Array): void {
    for (let i = 0; i < values.length; i++) {
      const v = values[i]
      if (Number.isNaN(v)) {
        this.missing++
        continue
      }
      this.counted++
      if (v === 0) this.zero++
      if (v < this.min) this.min = v
      if (v > this.max) this.max = v
      if (this.integral && !Number.isInteger(v)) this.integral = false
    }
    this.chunks.push(values)
  }

  /** At most about `maxBins` bins of a nice width; `format` prints a value as the page shows it. */
  async finish(maxBins: number, format: (x: number) => string): Promise<Histogram> {
    const { counted, missing, zero, integral } = this
    if (counted === 0) return { counted, missing, zero, min: null, max: null, discrete: integral, bins: [] }
    const span = integral ? this.max - this.min + 1 : this.max - this.min
    const width = niceStep(span / maxBins, integral)
    const first = Math.floor(this.min / width)
    const n = Math.floor(this.max / width) - first + 1
    const counts = new Float64Array(n)
    for (const chunk of this.chunks) {
      for (let i = 0; i < chunk.length; i++) {
        const v = chunk[i]
        if (!Number.isNaN(v)) counts[Math.min(n - 1, Math.floor(v / width) - first)]++
      }
      await breather()
    }
    // edges as multiples of the width: exact for integer units, rounded to the width's digits else
    const digits = integral ? 0 : Math.max(0, -Math.floor(Math.log10(width)))
    const edge = (k: number) => {
      const x = (first + k) * width
      return integral ? format(x) : format(Number(x.toFixed(digits)))
    }
    const bins = Array.from(counts, (count, k) => ({
      from: edge(k),
      to: integral ? format((first + k + 1) * width - 1) : edge(k + 1),
      count,
    }))
    return { counted, missing, zero, min: format(this.min), max: format(this.max), discrete: integral, bins }
  }
}
