// CSV exports off the event loop. Encoding a million rows is seconds of CPU; on the main thread even
// in slices of a few milliseconds it kept GET /health waiting 60-70 ms at p99 behind three
// concurrent exports. Here export worker threads (export-worker.ts) encode them, and the main
// thread only hands ready bytes to the socket.
//
// The bytes travel through a small ring of shared memory per export (RING_SLOTS slots of about
// 512 KiB), not in a fresh buffer per message: a moved buffer is external memory to the main
// thread's heap, and 150 MB of them made V8 run a full collection every ~60 MB (23 over three
// 1M-row runs' exports, with ~0.4 s of CPU in its marking threads on a 2-core machine). A slot is
// asked for again only once the socket has taken its bytes (the write callback), so a slow client
// holds at most the ring, never the file.

import type { Writable } from 'node:stream'
import { Worker } from 'node:worker_threads'
import { ConcordError } from '../errors.js'
import { moduleWorker } from './module-worker.js'
import { exportedFile } from './pages.js'
import type { ResultSet } from './results.js'

/** CSV bytes per chunk: the encoder cuts a chunk at the first row end past this. */
const CHUNK_BYTES = 512 * 1024
/**
 * Room in a slot past the chunk mark, for the row that crosses it; a chunk that does not fit is
 * moved in a buffer of its own.
 */
const SLOT_HEADROOM = 64 * 1024
/** Slots per export: one the socket is writing, one encoded and waiting, one being encoded. */
const RING_SLOTS = 3

export type ExportRequest =
  | {
      type: 'open'
      id: number
      dir: string
      set: ResultSet
      ring: SharedArrayBuffer
      chunkBytes: number
      slotBytes: number
    }
  /** Fill `slot` with the next chunk. */
  | { type: 'more'; id: number; slot: number }
  | { type: 'close'; id: number }

export type ExportReply =
  /** The next chunk: `length` bytes in `slot`, or (a chunk too long for a slot) `bytes`. */
  | { type: 'data'; id: number; slot: number; length: number; bytes?: Uint8Array; done: boolean }
  | { type: 'error'; id: number; error: { error: string; message: string; suggestion?: string; status: number } }

/** An export worker and how many exports it is encoding (not to be confused with a ring's slots). */
interface Encoder {
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

export interface ExporterOptions {
  workers?: number
  /** Tests make chunks small, so that an export takes many and its slots are reused. */
  chunkBytes?: number
  slotBytes?: number
}

export class CsvExporter {
  private readonly encoders: Encoder[] = []
  private readonly exports = new Map<number, CsvExport>()
  private nextId = 1
  private readonly workers: number
  private readonly chunkBytes: number
  private readonly slotBytes: number

  constructor({ workers = EXPORT_WORKERS, chunkBytes = CHUNK_BYTES, slotBytes }: ExporterOptions = {}) {
    this.workers = workers
    this.chunkBytes = chunkBytes
    this.slotBytes = slotBytes ?? chunkBytes + SLOT_HEADROOM
  }

  /**
   * Starts encoding a result set as CSV; resolves once its first bytes are ready. A set that is
   * missing or cannot be read rejects here, before any byte is sent, so it can still be answered
   * with an error.
   */
  async open(dir: string, set: ResultSet): Promise<CsvExport> {
    exportedFile(dir, set)
    const encoder = this.leastBusy()
    const id = this.nextId++
    const { chunkBytes, slotBytes } = this
    const ring = new SharedArrayBuffer(RING_SLOTS * slotBytes)
    const exp = new CsvExport(encoder.worker, id, ring, slotBytes, () => this.forget(id))
    this.exports.set(id, exp)
    if (encoder.active++ === 0) encoder.worker.ref()
    encoder.worker.postMessage({ type: 'open', id, dir, set, ring, chunkBytes, slotBytes } satisfies ExportRequest)
    for (let s = 0; s < RING_SLOTS; s++) exp.ask(s)
    await exp.started()
    return exp
  }

  async close(): Promise<void> {
    const encoders = this.encoders.splice(0)
    for (const e of this.exports.values()) e.fail(new Error('the service is shutting down'))
    this.exports.clear()
    await Promise.all(encoders.map((s) => s.worker.terminate()))
  }

  private forget(id: number): void {
    const e = this.exports.get(id)
    if (!e) return
    this.exports.delete(id)
    const encoder = this.encoders.find((s) => s.worker === e.worker)
    // an idle export worker does not keep the process alive
    if (encoder && --encoder.active === 0) encoder.worker.unref()
  }

  /** An idle worker, a new one while there are fewer than `workers`, else the least busy. */
  private leastBusy(): Encoder {
    const idle = this.encoders.find((s) => s.active === 0)
    if (idle) return idle
    if (this.encoders.length < this.workers) return this.spawn()
    return this.encoders.reduce((a, b) => (b.active < a.active ? b : a))
  }

  private spawn(): Encoder {
    const worker = moduleWorker('export-worker')
    const encoder: Encoder = { worker, active: 0 }
    worker.on('message', (reply: ExportReply) => this.exports.get(reply.id)?.onReply(reply))
    const lost = (err: Error) => {
      const at = this.encoders.indexOf(encoder)
      if (at < 0) return
      this.encoders.splice(at, 1)
      for (const e of [...this.exports.values()]) if (e.worker === worker) e.fail(err)
    }
    worker.on('error', lost)
    worker.on('exit', (code) => lost(new Error(`an export worker stopped (exit code ${code})`)))
    this.encoders.push(encoder)
    return encoder
  }
}

interface Chunk {
  slot: number
  bytes: Uint8Array
  done: boolean
}

/**
 * One export being encoded: chunks arrive in the order their slots were asked for; `pipeTo` writes
 * them and asks for a slot again once the destination has taken its bytes.
 */
export class CsvExport {
  private readonly ready: Chunk[] = []
  private wake: (() => void) | undefined
  private failure: Error | undefined
  private ended = false

  constructor(
    readonly worker: Worker,
    private readonly id: number,
    private readonly ring: SharedArrayBuffer,
    private readonly slotBytes: number,
    private readonly forget: () => void,
  ) {}

  /** Asks the worker to fill `slot` with the next chunk. */
  ask(slot: number): void {
    if (!this.ended) this.worker.postMessage({ type: 'more', id: this.id, slot } satisfies ExportRequest)
  }

  onReply(reply: ExportReply): void {
    if (reply.type === 'error') {
      const { error, message, suggestion, status } = reply.error
      this.fail(new ConcordError(error, message, status, suggestion))
      return
    }
    const bytes = reply.bytes ?? new Uint8Array(this.ring, reply.slot * this.slotBytes, reply.length)
    this.ready.push({ slot: reply.slot, bytes, done: reply.done })
    // the worker answers no slot after the last chunk
    if (reply.done) this.finish()
    this.wake?.()
  }

  /** Ends the export with `err`: a waiting `started` or `pipeTo` rejects with it. */
  fail(err: Error): void {
    if (this.failure) return
    this.failure = err
    this.finish()
    this.wake?.()
  }

  /** Resolves once the first chunk is ready (rejects if the worker failed first). */
  async started(): Promise<void> {
    await this.next(false)
  }

  /**
   * Writes the export to `out` and ends it; resolves once `out` has finished, with true, or with
   * false if `out` closed first (a client that left: the worker stops). A slot is asked for again
   * in the callback of the write that took its bytes, so no byte is overwritten while `out` still
   * holds it.
   */
  async pipeTo(out: Writable): Promise<boolean> {
    let gone = false
    // once every byte is handed over, the close that follows the end is not a client leaving
    let ending = false
    const left = () => {
      if (ending) return
      gone = true
      this.close()
      this.wake?.()
    }
    // a client that left before the first byte (between open and here)
    if (out.destroyed) {
      this.close()
      return false
    }
    out.once('close', left)
    try {
      for (;;) {
        const chunk = await this.next(true)
        if (gone) return false
        if (!chunk) break
        // an export that ends on a chunk boundary ends with an empty one
        if (chunk.bytes.length)
          out.write(chunk.bytes, (err) => {
            // a write that failed: the destination is gone, whether or not its 'close' came yet
            if (err) left()
            else if (!chunk.done) this.ask(chunk.slot)
          })
        if (chunk.done) break
      }
      ending = true
      await new Promise<void>((resolve) => out.end(resolve))
      return !gone
    } catch (err) {
      out.destroy(err as Error)
      throw err
    } finally {
      out.off('close', left)
    }
  }

  /** Stops encoding (the worker closes the file); nothing more is asked for. */
  close(): void {
    if (this.ended) return
    this.worker.postMessage({ type: 'close', id: this.id } satisfies ExportRequest)
    this.finish()
  }

  private finish(): void {
    if (this.ended) return
    this.ended = true
    this.forget()
  }

  /** The next chunk (taken when `take`), or null once the last was taken. */
  private async next(take: boolean): Promise<Chunk | null> {
    for (;;) {
      if (this.ready.length) return take ? this.ready.shift()! : this.ready[0]
      if (this.failure) throw this.failure
      if (this.ended) return null
      await new Promise<void>((resolve) => (this.wake = resolve))
      this.wake = undefined
    }
  }
}
