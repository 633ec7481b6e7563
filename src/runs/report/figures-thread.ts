// Report figures computed off the event loop. Reading a million matches a record batch at a time
// on the service's own thread, the loop given back between batches, still kept GET /health waiting
// 100-200 ms at p99 (batch decoding and the garbage of 65,536-row batches come in lumps); on a
// worker thread the loop only posts a request and receives a few kilobytes. One thread serves
// every report (it reads batch by batch, so reports interleave), started at the first report and
// kept while the service runs, not holding the process open when idle. Figures are kept for the
// last few reports: a completed run's files never change (a retry is a new run).

import type { Worker } from 'node:worker_threads'
import { ConcordError } from '../../errors.js'
import { moduleWorker } from '../module-worker.js'
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
  private worker: Worker | undefined
  private readonly pending = new Map<number, { resolve(f: ReportFigures): void; reject(e: Error): void }>()
  private readonly cache = new Map<string, Promise<ReportFigures>>()
  private nextId = 1

  /** The figures of a completed run's results in `dir`; concurrent requests for one run share a read. */
  figures(dir: string, amounts: AmountColumns, opts: FigureOptions): Promise<ReportFigures> {
    const key = `${dir}\0${opts.top}\0${opts.bins}`
    let figures = this.cache.get(key)
    if (!figures) {
      figures = this.ask(dir, amounts, opts)
      figures.catch(() => this.cache.delete(key))
      this.cache.set(key, figures)
      while (this.cache.size > CACHE_SIZE) this.cache.delete(this.cache.keys().next().value!)
    }
    return figures
  }

  async close(): Promise<void> {
    const worker = this.worker
    this.worker = undefined
    this.fail(new Error('the service is shutting down'))
    await worker?.terminate()
  }

  private ask(dir: string, amounts: AmountColumns, opts: FigureOptions): Promise<ReportFigures> {
    const worker = this.thread()
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      if (this.pending.size === 1) worker.ref()
      worker.postMessage({ id, dir, amounts, opts } satisfies FiguresRequest)
    })
  }

  private thread(): Worker {
    if (this.worker) return this.worker
    const worker = moduleWorker('report/figures-worker')
    worker.on('message', (reply: FiguresReply) => {
      const waiting = this.pending.get(reply.id)
      if (!waiting) return
      this.pending.delete(reply.id)
      // an idle thread does not keep the process alive
      if (this.pending.size === 0) worker.unref()
      if ('figures' in reply) waiting.resolve(reply.figures)
      else waiting.reject(new ConcordError('report_failed', `the run's results could not be read: ${reply.error}`, 500))
    })
    const lost = (err: Error) => {
      if (this.worker !== worker) return
      this.worker = undefined
      this.fail(err)
    }
    worker.on('error', lost)
    worker.on('exit', (code) => lost(new Error(`the report thread stopped (exit code ${code})`)))
    this.worker = worker
    return worker
  }

  private fail(err: Error): void {
    for (const waiting of this.pending.values()) waiting.reject(err)
    this.pending.clear()
  }
}
