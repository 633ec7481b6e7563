// The reference CSV loader for differential tests: csv-parse (the library) for the syntax and
// the generic per-value builders for the types. Simple and slow; src/engine/load/csv is checked against it.

import { createReadStream } from 'node:fs'
import { open } from 'node:fs/promises'
import { parse } from 'csv-parse'
import { ConcordError } from '../../src/errors.js'
import { columnBuilder, ValueTypeError } from '../../src/engine/data/builder.js'
import { classifyText, TypeTracker } from '../../src/engine/load/infer.js'
import type { Table } from '../../src/engine/data/table.js'
import type { ColumnInfo } from '../../src/engine/data/types.js'

export type Delimiter = ',' | ';' | '\t'

export interface CsvLoadResult {
  table: Table
  delimiter: Delimiter
  rows: number
}

export interface CsvLoadOptions {
  signal?: AbortSignal
  delimiter?: Delimiter
}

export async function loadCsvReference(path: string, opts: CsvLoadOptions = {}): Promise<CsvLoadResult> {
  const delimiter = opts.delimiter ?? (await sniffDelimiter(path))
  let header: string[] | undefined
  let trackers: TypeTracker[] = []
  let rows = 0
  await eachRecord(path, delimiter, opts.signal, (record, line) => {
    if (!header) {
      header = headerNames(record)
      trackers = header.map(() => new TypeTracker())
      return
    }
    if (record.length !== header.length) {
      throw new ConcordError(
        'malformed_file',
        `line ${line}: expected ${header.length} fields, found ${record.length}`,
        400,
        'check for an unquoted delimiter or a missing field',
      )
    }
    for (let c = 0; c < record.length; c++) trackers[c].observe(classifyText(record[c].trim()))
    rows++
  })
  if (!header) throw new ConcordError('empty_file', 'the CSV file is empty: it needs a header row', 400)
  const names = header
  const columns: ColumnInfo[] = trackers.map((t, i) => t.result(names[i]))
  const builders = columns.map((c) => columnBuilder(c, Math.max(16, rows)))
  let first = true
  await eachRecord(path, delimiter, opts.signal, (record, line) => {
    if (first) {
      first = false
      return
    }
    try {
      for (let c = 0; c < record.length; c++) builders[c].append(record[c])
    } catch (err) {
      if (err instanceof ValueTypeError) throw new ConcordError('malformed_file', `line ${line}: ${err.message}`, 400)
      throw err
    }
  })
  const data = builders.map((b) => b.finish())
  return {
    table: { columns: columns.map((c, i) => ({ ...c, nullable: data[i].valid !== null })), data, length: rows },
    delimiter,
    rows,
  }
}

/** Trimmed header names; blanks become column_N, repeats get _2, _3 … */
export function headerNames(record: string[]): string[] {
  const seen = new Map<string, number>()
  return record.map((raw, i) => {
    const base = raw.trim() || `column_${i + 1}`
    const n = (seen.get(base) ?? 0) + 1
    seen.set(base, n)
    return n === 1 ? base : `${base}_${n}`
  })
}

async function eachRecord(
  path: string,
  delimiter: Delimiter,
  signal: AbortSignal | undefined,
  onRecord: (record: string[], line: number) => void,
): Promise<void> {
  const parser = parse({
    delimiter,
    bom: true,
    trim: true,
    skip_empty_lines: true,
    relax_column_count: true,
    info: true,
  })
  const input = createReadStream(path, { signal })
  input.on('error', (err) => parser.destroy(err))
  input.pipe(parser)
  try {
    for await (const item of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
      onRecord(item.record, item.info.lines)
    }
  } catch (err) {
    throw asCsvError(err)
  }
}

function asCsvError(err: unknown): Error {
  if (err instanceof ConcordError || (err as Error).name === 'AbortError') return err as Error
  const e = err as Error & { code?: string; lines?: number }
  if (e.code === 'ENOENT' || e.code === 'EACCES' || e.code === 'EISDIR') {
    return new ConcordError('unreadable_file', `cannot read the file: ${e.message}`, 400)
  }
  // csv-parse prefixes its codes with CSV_, all but INVALID_OPENING_QUOTE (a quote inside an unquoted field)
  if (e.code?.startsWith('CSV_') || e.code === 'INVALID_OPENING_QUOTE') {
    const line = e.lines ?? /line (\d+)/.exec(e.message)?.[1]
    const what =
      e.code === 'CSV_QUOTE_NOT_CLOSED' ? 'unterminated quoted field' : e.message.replace(/^Invalid [^:]*:\s*/, '')
    return new ConcordError('malformed_file', `line ${line ?? '?'}: ${what}`, 400, 'check the quoting near that line')
  }
  return e
}

/** The delimiter that splits the first lines into the most, and most consistent, fields. */
export async function sniffDelimiter(path: string): Promise<Delimiter> {
  let text: string
  try {
    const fh = await open(path, 'r')
    try {
      const buf = Buffer.alloc(64 * 1024)
      const { bytesRead } = await fh.read(buf, 0, buf.length, 0)
      text = buf.subarray(0, bytesRead).toString('utf8')
    } finally {
      await fh.close()
    }
  } catch (err) {
    throw asCsvError(err)
  }
  const lines = text
    .split(/\r?\n/)
    .filter((l) => l.trim() !== '')
    .slice(0, 20)
  if (lines.length > 1 && text.length === 64 * 1024) lines.pop() // the last line may be cut
  let best: Delimiter = ','
  let bestScore = -1
  for (const d of [',', ';', '\t'] as Delimiter[]) {
    const counts = lines.map((l) => countOutsideQuotes(l, d))
    if (counts[0] === 0) continue
    const consistent = counts.filter((c) => c === counts[0]).length
    const score = consistent * 1000 + counts[0]
    if (score > bestScore) {
      bestScore = score
      best = d
    }
  }
  return best
}

function countOutsideQuotes(line: string, d: string): number {
  let n = 0
  let quoted = false
  for (const ch of line) {
    if (ch === '"') quoted = !quoted
    else if (ch === d && !quoted) n++
  }
  return n
}
