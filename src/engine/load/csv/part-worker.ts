// The part worker: parses the byte range of a CSV file it is given into typed columns, with the
// same tokenizer and columns as the loader's own thread, and transfers the columns' buffers back
// (see parallel.ts). It starts from bundled JavaScript, so it imports nothing but these modules.

import { open } from 'node:fs/promises'
import { parentPort } from 'node:worker_threads'
import { CsvColumn, NeedsString } from './columns.js'
import { MAX_FIELDS } from './head.js'
import { type PartJob, type PartResult, partBuffers } from './part.js'
import { scanRange } from './scan.js'
import { MalformedCsv, Tokenizer } from './tokenizer.js'

class Cancelled extends Error {}

async function parsePart(job: PartJob, cancel: Int32Array): Promise<PartResult> {
  const handle = await open(job.path, 'r')
  try {
    // The same file as the loader's, not one put in its place since: else the loader parses on.
    const s = await handle.stat()
    const f = job.file
    if (s.dev !== f.dev || s.ino !== f.ino || s.size !== f.size || s.mtimeMs !== f.mtimeMs) {
      return { type: 'failed', message: 'the file changed during the load' }
    }
    const columns = job.kinds.map(
      (kind, k) => new CsvColumn(k, kind, job.scales[k], job.capacity, job.textBytes[k], job.placement?.[k] ?? null),
    )
    const tokenizer = new Tokenizer(job.delimiter, MAX_FIELDS)
    await scanRange({
      handle,
      size: job.size,
      from: job.start,
      stop: () => job.size,
      chunkSize: job.chunkSize,
      tokenize: (buf, pos, end, final) => tokenizer.scanInto(buf, pos, end, final, columns),
      beforeChunk: () => {
        if (Atomics.load(cancel, 0) !== 0) throw new Cancelled()
      },
    })
    return { type: 'done', parts: columns.map((c) => c.toPart()) }
  } finally {
    await handle.close()
  }
}

function failure(err: unknown): PartResult {
  if (err instanceof MalformedCsv) return { type: 'malformed', line: err.line, detail: err.detail }
  if (err instanceof NeedsString) return { type: 'needs-string', columns: err.columns }
  if (err instanceof Cancelled) return { type: 'cancelled' }
  return { type: 'failed', message: err instanceof Error ? err.message : String(err) }
}

const port = parentPort!
port.on('message', ({ job, cancel }: { job: PartJob; cancel: Int32Array }) => {
  parsePart(job, cancel).then(
    (result) => port.postMessage(result, result.type === 'done' ? partBuffers(result.parts) : []),
    (err) => port.postMessage(failure(err)),
  )
})
port.postMessage({ type: 'ready' })
