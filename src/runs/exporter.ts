// CSV exports off the event loop. Encoding a million rows is seconds of CPU; on the main thread even
// in slices of a few milliseconds it kept GET /health waiting 60-70 ms at p99 behind three
// concurrent exports. Here one worker thread (export-worker.ts) encodes every export, and the main
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
  onReply(reply: ExportReply): void
  fail(err: Error): void
}

export class CsvExporter {
  private worker: Worker | undefined
  private readonly exports = new Map<number, Export>()
  private nextId = 1

  /** A result set as a CSV stream; a missing set is an error here, before any byte is sent. */
  csv(dir: string, set: ResultSet): Readable {
    exportedFile(dir, set)
    const worker = this.ensureWorker()
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
    worker.ref()
    worker.postMessage({ type: 'open', id, dir, set } satisfies ExportRequest)
    return stream
  }

  async close(): Promise<void> {
    const worker = this.worker
    this.worker = undefined
    for (const e of this.exports.values()) e.fail(new Error('the service is shutting down'))
    this.exports.clear()
    await worker?.terminate()
  }

  private forget(id: number): boolean {
    const had = this.exports.delete(id)
    // an idle export worker does not keep the process alive
    if (had && this.exports.size === 0) this.worker?.unref()
    return had
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker
    const worker = moduleWorker('export-worker')
    worker.on('message', (reply: ExportReply) => this.exports.get(reply.id)?.onReply(reply))
    const lost = (err: Error) => {
      if (this.worker !== worker) return
      this.worker = undefined
      for (const e of this.exports.values()) e.fail(err)
      this.exports.clear()
    }
    worker.on('error', lost)
    worker.on('exit', (code) => lost(new Error(`the export worker stopped (exit code ${code})`)))
    this.worker = worker
    return worker
  }
}
