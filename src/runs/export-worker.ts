// The export worker: encodes result sets as CSV off the event loop (exporter.ts is its other half).
// It holds one generator per export and answers each `more` with about EXPORT_MESSAGE_BYTES of CSV,
// so the main thread asks only as fast as the client reads and no export is ever held whole.

import { parentPort } from 'node:worker_threads'
import { ConcordError } from '../errors.js'
import { csvChunks } from './pages.js'
import type { ExportReply, ExportRequest } from './exporter.js'

const port = parentPort
if (!port) throw new Error('runs/export-worker.ts runs in a worker thread')

const EXPORT_MESSAGE_BYTES = 512 * 1024

const exports = new Map<number, AsyncGenerator<Uint8Array>>()

function reply(message: ExportReply, transfer: ArrayBuffer[] = []) {
  port!.postMessage(message, transfer)
}

async function more(id: number, chunks: AsyncGenerator<Uint8Array>) {
  const parts: Uint8Array[] = []
  let size = 0
  let done = false
  while (size < EXPORT_MESSAGE_BYTES) {
    const next = await chunks.next()
    if (next.done) {
      done = true
      break
    }
    parts.push(next.value)
    size += next.value.byteLength
  }
  // one fresh buffer per message: chunks may share a buffer, and a transfer moves it whole
  const bytes = new Uint8Array(size)
  let at = 0
  for (const part of parts) {
    bytes.set(part, at)
    at += part.byteLength
  }
  if (done) exports.delete(id)
  reply({ type: 'data', id, bytes, done }, [bytes.buffer])
}

port.on('message', async (message: ExportRequest) => {
  const { id } = message
  try {
    if (message.type === 'open') exports.set(id, csvChunks(message.dir, message.set))
    else if (message.type === 'close') await exports.get(id)?.return(undefined)
    else {
      const chunks = exports.get(id)
      if (chunks) await more(id, chunks)
    }
  } catch (err) {
    exports.delete(id)
    const error =
      err instanceof ConcordError
        ? { ...err.toJSON(), status: err.status }
        : { error: 'export_failed', message: (err as Error).message ?? String(err), status: 500 }
    reply({ type: 'error', id, error })
  } finally {
    if (message.type === 'close') exports.delete(id)
  }
})
