// The file load thread (load-thread.ts): parses a file with the loader of its type and posts the
// table back, its column buffers transferred (not copied). Requests wait on it, so it keeps its
// normal priority (not runs/background.ts).

import { parentPort } from 'node:worker_threads'
import type { Table } from '../engine/data/table.js'
import { crossing } from '../runs/request-thread.js'
import { fileLoaders } from './file-loaders.js'
import type { LoadReply, LoadRequest } from './load-thread.js'

const port = parentPort
if (!port) throw new Error('sources/load-worker.ts runs in a worker thread')

port.on('message', async ({ id, loader, path }: LoadRequest) => {
  try {
    const table = await fileLoaders[loader](path)
    const reply = { id, value: table } satisfies LoadReply
    try {
      port.postMessage(reply, buffersOf(table))
    } catch {
      port.postMessage(reply) // a buffer that cannot move (DataCloneError): copied instead
    }
  } catch (err) {
    port.postMessage({ id, error: crossing(err) } satisfies LoadReply)
  }
})

/**
 * The column buffers to hand over: those of the table alone. Shared memory is shared, not moved,
 * and a buffer smaller than Node's 8 KiB pool may be a slice of the pool, which cannot move.
 */
function buffersOf(table: Table): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>()
  for (const col of table.data)
    for (const a of Object.values(col) as unknown[])
      if (ArrayBuffer.isView(a) && a.buffer instanceof ArrayBuffer && a.buffer.byteLength > 8192) out.add(a.buffer)
  return [...out]
}
