// Streaming CSV loader: the file is read in chunks, scanned by the byte tokenizer, and each field
// goes straight into its typed column. Types come from a sample of the first rows and widen as
// later rows require; a column that turns out to be text makes the loader read the file again
// with that column as text (see columns.ts), so the types always equal full-file inference.

import { open } from 'node:fs/promises'
import { ConcordError } from '../../errors.js'
import type { Table } from '../table.js'
import { appendRows, CsvColumn, NeedsString } from './columns.js'
import { type CsvHead, MAX_FIELDS, readHead } from './head.js'
import { scanRange } from './scan.js'
import type { Delimiter } from './sniff.js'
import { Tokenizer } from './tokenizer.js'

export type { Delimiter } from './sniff.js'

export interface CsvLoadResult {
  table: Table
  delimiter: Delimiter
  rows: number
}

export interface CsvLoadOptions {
  signal?: AbortSignal
  delimiter?: Delimiter
  /** Bytes read per chunk. */
  chunkSize?: number
  /** Bytes sampled for the initial types (grown to hold the header). */
  sampleBytes?: number
}

export async function loadCsv(path: string, opts: CsvLoadOptions = {}): Promise<CsvLoadResult> {
  let handle: Awaited<ReturnType<typeof open>>
  try {
    handle = await open(path, 'r')
  } catch (err) {
    throw new ConcordError('unreadable_file', `cannot read the file: ${(err as Error).message}`, 400)
  }
  try {
    const size = (await handle.stat()).size
    const forced = new Set<number>()
    for (;;) {
      try {
        return await readAll(handle, size, forced, opts)
      } catch (err) {
        if (!(err instanceof NeedsString)) throw err
        for (const c of err.columns) forced.add(c) // rare: a late value made a column text; read again
      }
    }
  } finally {
    await handle.close()
  }
}

async function readAll(
  handle: Awaited<ReturnType<typeof open>>,
  size: number,
  forced: Set<number>,
  opts: CsvLoadOptions,
): Promise<CsvLoadResult> {
  const chunkSize = opts.chunkSize ?? 2 * 1024 * 1024
  const head = await readHead(handle, size, forced, opts)
  const capacity = rowsIn(size, head)
  const columns = head.kinds.map(
    (kind, k) => new CsvColumn(k, kind, head.scales[k], capacity, Math.ceil(capacity * head.bytesPerValue[k] * 1.05)),
  )
  const tokenizer = new Tokenizer(head.delimiter.charCodeAt(0), MAX_FIELDS)
  tokenizer.line = head.dataLine
  await scanRange({
    handle,
    size,
    from: head.dataStart,
    stop: () => size,
    chunkSize,
    tokenizer,
    onRow: appendRows(columns),
    beforeChunk: () => opts.signal?.throwIfAborted(),
  })
  const data = columns.map((c) => c.finish())
  const rows = data.length ? data[0].length : 0
  return {
    table: { columns: columns.map((c, k) => c.info(head.names[k])), data, length: rows },
    delimiter: head.delimiter,
    rows,
  }
}

/** Rows expected in `bytes` of the file, from the sample, with a margin. */
function rowsIn(bytes: number, head: CsvHead): number {
  return Math.max(1024, Math.ceil(bytes * head.rowsPerByte * 1.1))
}
