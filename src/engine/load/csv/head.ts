// The start of a CSV file: byte order mark, delimiter, header and the types of a sample of rows.
// The columns start with these types and widen as later rows require (columns.ts).

import type { FileHandle } from 'node:fs/promises'
import { ConcordError } from '../../../errors.js'
import { classifyText, TypeTracker, type ValueKind } from '../infer.js'
import { type Delimiter, headerNames, sniffDelimiter } from './sniff.js'
import { type RowFields, Tokenizer } from './tokenizer.js'

export const SAMPLE_ROWS = 2000
export const MAX_FIELDS = 4096
const decoder = new TextDecoder()

export interface CsvHead {
  delimiter: Delimiter
  names: string[]
  /** Sampled type of each column; `string` for the columns the caller forced to text. */
  kinds: ValueKind[]
  scales: number[]
  /** Offset of the first row after the header, and its line. */
  dataStart: number
  dataLine: number
  /** Rows per byte and bytes per value of each column in the sample, to size the columns. */
  rowsPerByte: number
  bytesPerValue: number[]
}

export async function readHead(
  handle: FileHandle,
  size: number,
  forced: ReadonlySet<number>,
  opts: { delimiter?: Delimiter; sampleBytes?: number },
): Promise<CsvHead> {
  // The sample window grows until it holds the whole header row.
  for (let window = opts.sampleBytes ?? 1024 * 1024; ; window *= 2) {
    const want = Math.min(size, Math.max(window, 64 * 1024) + 3)
    const buf = Buffer.allocUnsafe(Math.max(want, 1))
    let filled = 0
    while (filled < want) {
      const { bytesRead } = await handle.read(buf, filled, want - filled, filled)
      if (bytesRead === 0) break
      filled += bytesRead
    }
    const pos = buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf && filled >= 3 ? 3 : 0
    if (filled - pos === 0) throw emptyFile()
    const delimiter =
      opts.delimiter ?? sniffDelimiter(decoder.decode(buf.subarray(pos, Math.min(filled, pos + 64 * 1024))))
    const sampleLimit = Math.min(filled, pos + window)
    const sampleFinal = sampleLimit === filled && filled >= size

    let names: string[] | undefined
    let trackers: TypeTracker[] = []
    let bytes: number[] = []
    let dataStart = 0
    let dataLine = 1
    let sampled = 0
    let rows = 0
    const tokenizer = new Tokenizer(delimiter.charCodeAt(0), MAX_FIELDS)
    const sampleEnd = tokenizer.scan(buf, pos, sampleLimit, sampleFinal, (row) => {
      if (!names) {
        names = headerNames(fieldTexts(buf, row))
        trackers = names.map(() => new TypeTracker())
        bytes = names.map(() => 0)
        dataStart = row.end
        dataLine = tokenizer.line
        return
      }
      rows++
      if (row.count !== names.length) return
      const texts = fieldTexts(buf, row)
      for (let k = 0; k < texts.length; k++) {
        trackers[k].observe(classifyText(texts[k].trim()))
        bytes[k] += row.ends[k] - row.starts[k]
      }
      return ++sampled < SAMPLE_ROWS
    })
    if (!names) {
      if (sampleFinal) throw emptyFile()
      continue
    }
    return {
      delimiter,
      names,
      kinds: trackers.map((tr, k) => (forced.has(k) ? 'string' : tr.kind)),
      scales: trackers.map((tr) => tr.scale),
      dataStart,
      dataLine,
      rowsPerByte: (rows + 1) / Math.max(1, sampleEnd - dataStart),
      bytesPerValue: bytes.map((b) => (sampled ? b / sampled : 0)),
    }
  }
}

function emptyFile(): ConcordError {
  return new ConcordError('empty_file', 'the CSV file is empty: it needs a header row', 400)
}

function fieldTexts(buf: Uint8Array, row: RowFields): string[] {
  const out: string[] = new Array(row.count)
  for (let k = 0; k < row.count; k++) {
    const text = decoder.decode(buf.subarray(row.starts[k], row.ends[k]))
    out[k] = row.escaped[k] ? text.replace(/""/g, '"') : text
  }
  return out
}
