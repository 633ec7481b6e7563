// The export worker: encodes result sets as CSV off the event loop (exporter.ts is its other half).
// It holds one cursor per export and answers each `more` by encoding the next chunk into the slot
// of the export's shared ring that the main thread named, so it encodes only as fast as the client
// reads and no export is ever held whole.

import { parentPort } from 'node:worker_threads'
import { ConcordError } from '../errors.js'
import { CsvCursor } from './pages.js'
import type { ExportReply, ExportRequest } from './exporter.js'
import { runInBackground } from './background.js'

const port = parentPort
if (!port) throw new Error('runs/export-worker.ts runs in a worker thread')
runInBackground()

interface Export {
  cursor: Promise<CsvCursor>
  ring: Uint8Array
  slotBytes: number
  /** Chunks encoded beyond the one a slot took (a slice of rows can make more than one). */
  pending: Uint8Array[]
  /** The cursor has given its last chunk. */
  encoded: boolean
  closed: boolean
  /** The `more`s of an export run one after another: the cursor encodes one chunk at a time. */
  queue: Promise<void>
}

const exports = new Map<number, Export>()

/** Fills `slot` with the export's next chunk and says so; after the last chunk, nothing. */
async function fill(id: number, e: Export, slot: number): Promise<void> {
  if (e.closed) return
  const cursor = await e.cursor
  const waiting = e.pending.shift()
  const into = e.ring.subarray(slot * e.slotBytes, (slot + 1) * e.slotBytes)
  let length = 0
  let own: Uint8Array | undefined
  const take = (bytes: Uint8Array) => {
    if (bytes.length <= into.length) {
      into.set(bytes)
      length = bytes.length
    } else own = bytes.slice()
  }
  if (waiting) take(waiting)
  else if (!e.encoded) {
    // the cursor's chunk is valid only during the call: the first goes into the slot, any more
    // are copied to wait for the next slots
    let first = true
    e.encoded = await cursor.next((bytes) => {
      if (first) take(bytes)
      else e.pending.push(bytes.slice())
      first = false
    })
  }
  const done = e.encoded && e.pending.length === 0
  if (done) await end(id, e)
  // an export that ends on a chunk boundary answers its next slot with no bytes
  const reply: ExportReply = { type: 'data', id, slot, length, done, ...(own ? { bytes: own } : {}) }
  port!.postMessage(reply, own ? [own.buffer as ArrayBuffer] : [])
}

/** An export done, failed or closed by the main thread: forgotten, its file closed. */
async function end(id: number, e: Export): Promise<void> {
  exports.delete(id)
  e.closed = true
  await e.cursor.then((c) => c.close()).catch(() => {})
}

async function fail(id: number, e: Export, err: unknown): Promise<void> {
  await end(id, e)
  const error =
    err instanceof ConcordError
      ? { ...err.toJSON(), status: err.status }
      : { error: 'export_failed', message: (err as Error).message ?? String(err), status: 500 }
  port!.postMessage({ type: 'error', id, error } satisfies ExportReply)
}

port.on('message', (message: ExportRequest) => {
  const { id } = message
  if (message.type === 'open') {
    const cursor = CsvCursor.open(message.dir, message.set, message.chunkBytes)
    cursor.catch(() => {}) // reported by the first `more`
    exports.set(id, {
      cursor,
      ring: new Uint8Array(message.ring),
      slotBytes: message.slotBytes,
      pending: [],
      encoded: false,
      closed: false,
      queue: Promise.resolve(),
    })
    return
  }
  const e = exports.get(id)
  if (!e) return
  if (message.type === 'close') {
    // nothing more is encoded; the file is closed after any `more` still running on it
    e.closed = true
    e.queue = e.queue.then(() => end(id, e))
  } else e.queue = e.queue.then(() => fill(id, e, message.slot)).catch((err) => fail(id, e, err))
})
