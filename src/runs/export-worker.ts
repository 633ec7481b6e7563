// The export worker: encodes result sets as CSV off the event loop (exporter.ts is its other half).
// It holds one cursor per export and answers each `more` with about EXPORT_MESSAGE_BYTES of CSV,
// so the main thread asks only as fast as the client reads and no export is ever held whole.

import { parentPort } from 'node:worker_threads'
import { ConcordError } from '../errors.js'
import { CsvCursor } from './pages.js'
import type { ExportReply, ExportRequest } from './exporter.js'
import { runInBackground } from './background.js'

const port = parentPort
if (!port) throw new Error('runs/export-worker.ts runs in a worker thread')
runInBackground()

const EXPORT_MESSAGE_BYTES = 512 * 1024

const exports = new Map<number, Promise<CsvCursor>>()

function reply(message: ExportReply, transfer: ArrayBuffer[] = []) {
  port!.postMessage(message, transfer)
}

async function more(id: number, cursor: CsvCursor) {
  // each chunk copied once into a buffer of its own, which the message then moves (the cursor
  // reuses its buffer for the next chunk)
  const bytes: Uint8Array[] = []
  const done = await cursor.next((chunk) => bytes.push(chunk.slice()))
  if (done) {
    exports.delete(id)
    await cursor.close()
  }
  reply(
    { type: 'data', id, bytes, done },
    bytes.map((b) => b.buffer as ArrayBuffer),
  )
}

port.on('message', async (message: ExportRequest) => {
  const { id } = message
  try {
    if (message.type === 'open') {
      const opening = CsvCursor.open(message.dir, message.set, EXPORT_MESSAGE_BYTES)
      opening.catch(() => {}) // reported by the first `more`
      exports.set(id, opening)
    } else if (message.type === 'close') await (await exports.get(id))?.close()
    else {
      const cursor = exports.get(id)
      if (cursor) await more(id, await cursor)
    }
  } catch (err) {
    const failed = exports.get(id)
    exports.delete(id)
    await failed?.then((c) => c.close()).catch(() => {})
    const error =
      err instanceof ConcordError
        ? { ...err.toJSON(), status: err.status }
        : { error: 'export_failed', message: (err as Error).message ?? String(err), status: 500 }
    reply({ type: 'error', id, error })
  } finally {
    if (message.type === 'close') exports.delete(id)
  }
})
