// The figures of a run report that the summary does not hold, computed from the run's stored
// result files a record batch at a time (the event loop given back between batches): histograms
// of the matches' amount and date deltas, the unmatched records by reason with exact amounts, and
// the largest unmatched records per side. Kept apart from the page (html.ts) so other readers (an
// export, the agent) can reuse them and tests can check them alone.

import { resultFile } from '../results.js'
import type { AmountColumns } from './amounts.js'
import { columnData, eachBatch, numbersOf, scaleOf } from './batches.js'
import { type Histogram, HistogramBuilder } from './histogram.js'
import { formatAmount } from './units.js'
import { unmatchedFigures, type UnmatchedFigures } from './unmatched.js'

export interface ReportFigures {
  /** Each side's amount column, as the summary chose it (the recipe's compared amounts); null: none. */
  amount_columns: { left: string | null; right: string | null }
  /** Of every match (clean and ambiguous): left minus right amount, and right minus left date in days. */
  deltas: { amount: Histogram; days: Histogram }
  unmatched: { left: UnmatchedFigures; right: UnmatchedFigures }
  /** How long reading the files took. */
  ms: number
}

export interface FigureOptions {
  /** Unmatched records listed per side, the largest amounts first. */
  top: number
  /** About how many bins a histogram has. */
  bins: number
}

/** The deltas of the matches in both match files (a run stored before the split has one). */
async function deltaHistograms(dir: string, bins: number): Promise<ReportFigures['deltas']> {
  const amount = new HistogramBuilder()
  const days = new HistogramBuilder()
  let scale: number | undefined
  for (const set of ['matches', 'ambiguous'] as const) {
    await eachBatch(resultFile(dir, set), (batch) => {
      const n = batch.numRows
      for (const [name, into] of [
        ['amount_delta', amount],
        ['days_delta', days],
      ] as const) {
        const data = columnData(batch, name)!
        const read = numbersOf(data)
        const values = new Float64Array(n)
        for (let i = 0; i < n; i++) values[i] = read(i)
        into.add(values)
      }
      scale ??= scaleOf(batch.schema.fields.find((f) => f.name === 'amount_delta')!)
    })
  }
  const s = scale ?? 0
  return {
    // float amounts (scale -1) are written as they are, as the match pages do
    amount: await amount.finish(bins, (x) => (s < 0 ? String(x) : formatAmount(x, s))),
    days: await days.finish(bins, String),
  }
}

/** The report's figures from a completed run's result folder, each side's amount as amounts.ts chose it. */
export async function reportFigures(dir: string, amounts: AmountColumns, opts: FigureOptions): Promise<ReportFigures> {
  const t0 = performance.now()
  const deltas = await deltaHistograms(dir, opts.bins)
  const left = await unmatchedFigures(resultFile(dir, 'unmatched-left'), 'left', amounts.left, opts.top)
  const right = await unmatchedFigures(resultFile(dir, 'unmatched-right'), 'right', amounts.right, opts.top)
  const column = (a: { field: string } | undefined) => (a ? a.field.slice(2) : null)
  return {
    amount_columns: { left: column(amounts.left), right: column(amounts.right) },
    deltas,
    unmatched: { left, right },
    ms: Math.round(performance.now() - t0),
  }
}
