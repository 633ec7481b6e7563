// Report figures computed off the event loop. Reading a million matches a record batch at a time
// on the service's own thread, the loop given back between batches, still kept GET /health waiting
// 100-200 ms at p99 (batch decoding and the garbage of 65,536-row batches come in lumps); on a
// worker thread the loop only posts a request and receives a few kilobytes. One thread serves
// every report (it reads batch by batch, so reports interleave), started at the first report and
// kept while the service runs, not holding the process open when idle. Figures are kept for the
// last few reports: a completed run's files never change (a retry is a new run).

import { ConcordError } from '../../errors.js'
import { RequestThread } from '../request-thread.js'
import type { AmountColumns } from './amounts.js'
import type { FigureOptions, ReportFigures } from './figures.js'

export interface FiguresRequest {
  id: number
  dir: string
  amounts: AmountColumns
  opts: FigureOptions
}

export type FiguresReply = { id: number; figures: ReportFigures } | { id: number; error: string }

const CACHE_SIZE = 8

export class FiguresThread {
  private readonly thread = new RequestThread<FiguresReply>('report/figures-worker', 'report thread', (reply) =>
    'figures' in reply
      ? { value: reply.figures }
      : { error: new ConcordError('report_failed', `the run's results could not be read: ${reply.error}`, 500) },
  )
  private readonly cache = new Map<string, Promise<ReportFigures>>()

  /** The figures of a completed run's results in `dir`; concurrent requests for one run share a read. */
  figures(dir: string, amounts: AmountColumns, opts: FigureOptions): Promise<ReportFigures> {
    const key = `${dir}\0${opts.top}\0${opts.bins}`
    let figures = this.cache.get(key)
    if (!figures) {
      figures = this.thread.ask({ dir, amounts, opts } satisfies Omit<FiguresRequest, 'id'>) as Promise<ReportFigures>
      figures.catch(() => this.cache.delete(key))
      this.cache.set(key, figures)
      while (this.cache.size > CACHE_SIZE) this.cache.delete(this.cache.keys().next().value!)
    }
    return figures
  }

  close(): Promise<void> {
    return this.thread.close()
  }
}
