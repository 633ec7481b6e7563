// CSV exports off the event loop. Encoding a million rows is seconds of CPU; on the main thread even
// in slices of a few milliseconds it kept GET /health waiting 60-70 ms at p99 behind three
// concurrent exports. Here export worker threads (export-worker.ts) encode them, and the main
// thread only moves ready bytes to the socket: it asks for the next ~512 KiB when the response
// stream wants more, so a slow client holds one message in memory, not the file.

import { Readable } from 'node:stream'
import { Worker } from 'node:worker_threads'
import { ConcordError } from '../errors.js'
import { moduleWorker } from './module-worker.js'
import { exportedFile } from './pages.js'
import type { ResultSet } from './results.js'

export type ExportRequest =
  | { type: 'open'; id: number; dir: string; set: ResultSet }
  | { type: 'more'; id: number }
  | { type: 'close'; id: number }

export type ExportReply =
  | { type: 'data'; id: number; bytes: Uint8Array[]; done: boolean }
  | { type: 'error'; id: number; error: { error: string; message: string; suggestion?: string; status: number } }

interface Export {
  slot: Slot
  onReply(reply: ExportReply): void
  fail(err: Error): void
}

/** An export worker and the exports it is encoding. */
interface Slot {
  worker: Worker
  active: number
}

/**
 * Export workers: three, one for each set a client fetches together (matches and both unmatched
 * sets); each export stays on the one that was least busy when it started. With two, one worker
 * encoded two of the three sets while the other went idle halfway; with three the scheduler
 * shares the cores among all three to the end (they run at background priority, so the event
 * loop still comes first). The three exports of the bench's 1M run, eight alternated runs each:
 * median 774 ms with two, 697 ms with three.
 */
const EXPORT_WORKERS = 3

export class CsvExporter {
  private readonly slots: Slot[] = []
  private readonly exports = new Map<number, Export>()
  private nextId = 1

  constructor(private readonly workers = EXPORT_WORKERS) {}

  /** A result set as a CSV stream; a missing set is an error here, before any byte is sent. */
  csv(dir: string, set: ResultSet): Readable {
    exportedFile(dir, set)
    const slot = this.leastBusy()
    const { worker } = slot
    const id = this.nextId++
    let asked = false
    const stream = new Readable({
      highWaterMark: 1 << 20,
      read() {
        if (asked) return
        asked = true
        worker.postMessage({ type: 'more', id } satisfies ExportRequest)
      },
      destroy: (err, done) => {
        // a client that went away: the worker closes the file
        if (this.forget(id)) worker.postMessage({ type: 'close', id } satisfies ExportRequest)
        done(err)
      },
    })
    this.exports.set(id, {
      slot,
      onReply: (reply) => {
        asked = false
        if (reply.type === 'error') {
          this.forget(id)
          const { error, message, suggestion, status } = reply.error
          stream.destroy(new ConcordError(error, message, status, suggestion))
          return
        }
        for (const bytes of reply.bytes) stream.push(bytes)
        if (reply.done) {
          this.forget(id)
          stream.push(null)
        }
      },
      fail: (err) => stream.destroy(err),
    })
    if (slot.active++ === 0) worker.ref()
    worker.postMessage({ type: 'open', id, dir, set } satisfies ExportRequest)
    return stream
  }

  async close(): Promise<void> {
    const slots = this.slots.splice(0)
    for (const e of this.exports.values()) e.fail(new Error('the service is shutting down'))
    this.exports.clear()
    await Promise.all(slots.map((s) => s.worker.terminate()))
  }

  private forget(id: number): boolean {
    const e = this.exports.get(id)
    if (!e) return false
    this.exports.delete(id)
    // an idle export worker does not keep the process alive
    if (--e.slot.active === 0) e.slot.worker.unref()
    return true
  }

  /** An idle worker, a new one while there are fewer than `workers`, else the least busy. */
  private leastBusy(): Slot {
    const idle = this.slots.find((s) => s.active === 0)
    if (idle) return idle
    if (this.slots.length < this.workers) return this.spawn()
    return this.slots.reduce((a, b) => (b.active < a.active ? b : a))
  }

  private spawn(): Slot {
    const worker = moduleWorker('export-worker')
    const slot: Slot = { worker, active: 0 }
    worker.on('message', (reply: ExportReply) => this.exports.get(reply.id)?.onReply(reply))
    const lost = (err: Error) => {
      const at = this.slots.indexOf(slot)
      if (at < 0) return
      this.slots.splice(at, 1)
      for (const [id, e] of this.exports)
        if (e.slot === slot) {
          this.exports.delete(id)
          e.fail(err)
        }
    }
    worker.on('error', lost)
    worker.on('exit', (code) => lost(new Error(`an export worker stopped (exit code ${code})`)))
    this.slots.push(slot)
    return slot
  }
}
