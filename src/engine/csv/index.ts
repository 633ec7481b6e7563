// Streaming CSV loader: the file is read in chunks, scanned by the byte tokenizer, and each field
// goes straight into its typed column. Types come from a sample of the first rows and widen as
// later rows require; a column that turns out to be text makes the loader read the file again
// with that column as text (see columns.ts), so the types always equal full-file inference.

import { open } from 'node:fs/promises'
import { ConcordError } from '../../errors.js'
import { classifyText, TypeTracker, type ValueKind } from '../infer.js'
import type { Table } from '../table.js'
import { CsvColumn, NeedsString } from './columns.js'
import { type Delimiter, headerNames, sniffDelimiter } from './sniff.js'
import { malformed, type RowFields, Tokenizer } from './tokenizer.js'

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

const SAMPLE_ROWS = 2000
const MAX_FIELDS = 4096
const decoder = new TextDecoder()

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
  const chunkSize = opts.chunkSize ?? 8 * 1024 * 1024
  let buf = Buffer.allocUnsafe(Math.min(Math.max(size, 1), chunkSize) + 4)
  let filled = 0
  let fileOffset = 0
  const read = async (): Promise<number> => {
    if (filled === buf.length) {
      const bigger = Buffer.allocUnsafe(buf.length * 2)
      buf.copy(bigger, 0, 0, filled)
      buf = bigger
    }
    const { bytesRead } = await handle.read(buf, filled, buf.length - filled, fileOffset)
    fileOffset += bytesRead
    filled += bytesRead
    return bytesRead
  }

  await read()
  let pos = buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf ? 3 : 0
  if (filled - pos === 0) throw new ConcordError('empty_file', 'the CSV file is empty: it needs a header row', 400)
  const delimiter =
    opts.delimiter ?? sniffDelimiter(decoder.decode(buf.subarray(pos, Math.min(filled, pos + 64 * 1024))))

  // Header, then a sample of rows for the initial types; both are scanned again below. The
  // sample window grows until it holds the whole header row.
  let header: string[] | undefined
  let trackers: TypeTracker[] = []
  let bytes: number[] = []
  let sampled = 0
  let windowRows = 0
  let sampleEnd = pos
  for (let window = opts.sampleBytes ?? 1024 * 1024; ; window *= 2) {
    while (filled - pos < window && fileOffset < size) if ((await read()) === 0) break
    const sampleLimit = Math.min(filled, pos + window)
    const sampleFinal = sampleLimit === filled && fileOffset >= size
    header = undefined
    trackers = []
    bytes = []
    sampled = 0
    windowRows = 0
    sampleEnd = new Tokenizer(delimiter.charCodeAt(0), MAX_FIELDS).scan(buf, pos, sampleLimit, sampleFinal, (row) => {
      if (!header) {
        header = headerNames(fieldTexts(buf, row))
        for (let k = 0; k < header.length; k++) trackers.push(new TypeTracker())
        bytes = header.map(() => 0)
        return
      }
      windowRows++
      if (sampled >= SAMPLE_ROWS || row.count !== header.length) return
      const texts = fieldTexts(buf, row)
      for (let k = 0; k < texts.length; k++) {
        trackers[k].observe(classifyText(texts[k].trim()))
        bytes[k] += row.ends[k] - row.starts[k]
      }
      sampled++
    })
    if (header || sampleFinal) break
  }
  if (!header) throw new ConcordError('empty_file', 'the CSV file is empty: it needs a header row', 400)
  const names = header
  // Every row in the window counts for the rate, not only the SAMPLE_ROWS classified.
  const estimate = Math.max(1024, Math.ceil((size / Math.max(1, sampleEnd - pos)) * (windowRows + 1) * 1.1))
  const columns = trackers.map((tr, k) => {
    const kind: ValueKind = forced.has(k) ? 'string' : tr.kind
    const textBytes = Math.ceil(estimate * (sampled ? bytes[k] / sampled : 0) * 1.05)
    return new CsvColumn(k, kind, tr.scale, estimate, textBytes)
  })

  const rescan = new Tokenizer(delimiter.charCodeAt(0), MAX_FIELDS)
  let isHeader = true
  const onRow = (row: RowFields) => {
    if (isHeader) {
      isHeader = false
      return
    }
    if (row.count !== columns.length) {
      throw malformed(row.line, `expected ${columns.length} fields, found ${row.count}`)
    }
    for (let k = 0; k < row.count; k++) columns[k].append(buf, row.starts[k], row.ends[k], row.escaped[k] === 1)
  }
  for (;;) {
    opts.signal?.throwIfAborted()
    const final = fileOffset >= size
    const rest = rescan.scan(buf, pos, filled, final, onRow)
    if (final) break
    // keep the unfinished row, read more behind it
    buf.copy(buf, 0, rest, filled)
    filled -= rest
    pos = 0
    if ((await read()) === 0) {
      rescan.scan(buf, 0, filled, true, onRow)
      break
    }
  }
  const data = columns.map((c) => c.finish())
  const rows = data.length ? data[0].length : 0
  return { table: { columns: columns.map((c, k) => c.info(names[k])), data, length: rows }, delimiter, rows }
}

function fieldTexts(buf: Uint8Array, row: RowFields): string[] {
  const out: string[] = new Array(row.count)
  for (let k = 0; k < row.count; k++) {
    const text = decoder.decode(buf.subarray(row.starts[k], row.ends[k]))
    out[k] = row.escaped[k] ? text.replace(/""/g, '"') : text
  }
  return out
}
