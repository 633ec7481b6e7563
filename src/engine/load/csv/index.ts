// Streaming CSV loader: the file is read in chunks, scanned by the byte tokenizer, and each field
// goes straight into its typed column. Types come from a sample of the first rows and widen as
// later rows require; a column that turns out to be text makes the loader read the file again
// with that column as text (see columns.ts), so the types always equal full-file inference.
//
// Large files are parsed in two parts: this thread parses from the start while a worker thread
// parses from a row boundary in the second half, and the worker's columns are appended to ours
// (see parallel.ts for why that gives exactly the sequential result).

import { open } from 'node:fs/promises'
import { ConcordError } from '../../../errors.js'
import type { Table } from '../../data/table.js'
import { CsvColumn, NeedsString } from './columns.js'
import { type CsvHead, MAX_FIELDS, readHead } from './head.js'
import { type PartHelper, partHelper, type RunningPart, rowStartAfter } from './parallel.js'
import type { FileIdentity } from './part.js'
import { scanRange } from './scan.js'
import type { Delimiter } from './sniff.js'
import { malformed, Tokenizer } from './tokenizer.js'

export type { Delimiter } from './sniff.js'

export interface CsvLoadResult {
  table: Table
  delimiter: Delimiter
  rows: number
  /** 2 when a worker thread parsed part of the file, else 1. */
  parts: number
  /** Columns whose worker part was parsed into their own arrays and moved, not copied (columns.ts, reserveTail). */
  placed: number
}

/**
 * Bytes read per chunk. A chunk's buffer holds it and 64 KiB in front for the row carried over
 * (scan.ts): 2 MiB in all less glibc's header, so the buffer is one huge page (data/alloc.ts)
 * rather than 2 MiB and a bit, half of which faulted 4 KiB at a time: a 1M × 1M run's faults
 * 34.9k → 32.8k (medians of ten alternated runs each; its CPU the same within the VM's noise).
 */
const CHUNK_BYTES = 2 * 1024 * 1024 - 64 * 1024 - 64

export interface CsvLoadOptions {
  signal?: AbortSignal
  delimiter?: Delimiter
  /** Bytes read per chunk. */
  chunkSize?: number
  /** Bytes sampled for the initial types (grown to hold the header). */
  sampleBytes?: number
  /**
   * Files of at least `minBytes` (default 16 MiB) are parsed in two parts, the second by a worker
   * thread; false parses every file on this thread. `splitAt` (for tests) waits for the worker
   * and splits at the first row boundary candidate at or after that offset.
   */
  parallel?: false | { minBytes?: number; splitAt?: number }
}

const PARALLEL_MIN_BYTES = 16 * 1024 * 1024
/** A part smaller than this is not worth a worker's round trip. */
const MIN_PART_BYTES = 4 * 1024 * 1024
/**
 * Of the bytes left when the worker is ready, the share this thread keeps. Its code is warm and
 * the worker's starts cold (4.9 against 7.2 ms per MB on the benchmark file), but this thread
 * also joins the parts afterwards (about 18 ms for half a million rows).
 */
const OWN_SHARE = 0.56

export async function loadCsv(path: string, opts: CsvLoadOptions = {}): Promise<CsvLoadResult> {
  let handle: Awaited<ReturnType<typeof open>>
  try {
    handle = await open(path, 'r')
  } catch (err) {
    // the code, not the message: the message names the server's absolute path
    throw new ConcordError('unreadable_file', `cannot read the file (${(err as NodeJS.ErrnoException).code})`, 400)
  }
  try {
    const stat = await handle.stat()
    const size = stat.size
    const file = { path, dev: stat.dev, ino: stat.ino, size, mtimeMs: stat.mtimeMs }
    const parallel = opts.parallel === false ? null : (opts.parallel ?? {})
    // Started first so that the worker's start-up overlaps the sample and the first chunks.
    const helper = parallel && size >= (parallel.minBytes ?? PARALLEL_MIN_BYTES) ? partHelper() : null
    const forced = new Set<number>()
    for (;;) {
      try {
        return await readAll(handle, file, forced, opts, helper)
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
  file: FileIdentity & { path: string },
  forced: Set<number>,
  opts: CsvLoadOptions,
  helper: PartHelper | null,
): Promise<CsvLoadResult> {
  const size = file.size
  const chunkSize = opts.chunkSize ?? CHUNK_BYTES
  const head = await readHead(handle, size, forced, opts)
  const capacity = rowsIn(size, head)
  const columns = head.kinds.map(
    (kind, k) => new CsvColumn(k, kind, head.scales[k], capacity, Math.ceil(capacity * head.bytesPerValue[k] * 1.05)),
  )
  const tokenizer = new Tokenizer(head.delimiter.charCodeAt(0), MAX_FIELDS)
  tokenizer.line = head.dataLine
  const tokenize = (buf: Buffer, pos: number, end: number, final: boolean) =>
    tokenizer.scanInto(buf, pos, end, final, columns)
  const scan = { handle, size, chunkSize, tokenize }

  const splitAt = opts.parallel ? opts.parallel.splitAt : undefined
  // A holder, not a variable: the split is made inside scanRange's callback.
  const split: { part: RunningPart | null; tried: boolean } = { part: null, tried: false }
  const maybeSplit = async (at: number): Promise<void> => {
    opts.signal?.throwIfAborted()
    if (split.tried || !helper) return
    if (splitAt !== undefined) {
      split.tried = true
      if (!(await helper.ready())) return
    } else if (!helper.idle || size - at < 2 * MIN_PART_BYTES) return
    split.tried = true
    const target = Math.floor(Math.max(at, splitAt ?? at + (size - at) * OWN_SHARE))
    const start = await rowStartAfter(handle, target, size)
    if (start === null || start <= at || start >= size) return
    // the part is parsed into the room after this thread's share of each column's arrays, with
    // room to spare on both sides (columns.ts, reserveTail)
    const ownRows = rowsIn(start - head.dataStart, head)
    const placement = columns.map((c, k) => c.reserveTail(head.kinds[k], ownRows))
    split.part = helper.run({
      path: file.path,
      file: { dev: file.dev, ino: file.ino, size: file.size, mtimeMs: file.mtimeMs },
      start,
      size,
      delimiter: head.delimiter.charCodeAt(0),
      kinds: head.kinds,
      scales: head.scales,
      capacity: rowsIn(size - start, head),
      textBytes: head.bytesPerValue.map((b) => Math.ceil(rowsIn(size - start, head) * b * 1.05)),
      chunkSize,
      placement,
    })
    if (!split.part) for (const c of columns) c.unreserve()
  }

  let parts = 1
  let placed = 0
  try {
    let from = head.dataStart
    for (;;) {
      const stop = () => split.part?.start ?? size
      const end = await scanRange({ ...scan, from, stop, beforeChunk: maybeSplit })
      const part = split.part
      if (!part) break
      from = end
      if (end !== part.start) {
        // The split fell inside a quoted field: the worker's part is void; this thread goes on.
        part.cancel()
        split.part = null
        continue
      }
      const result = await part.whenDone(opts.signal)
      split.part = null
      if (result.type === 'done') {
        const needs: number[] = []
        for (const [k, c] of columns.entries()) {
          try {
            if (c.appendPart(result.parts[k])) placed++
          } catch (err) {
            if (!(err instanceof NeedsString)) throw err
            needs.push(...err.columns)
          }
        }
        if (needs.length) throw new NeedsString(needs)
        parts = 2
        break
      }
      // The worker counted lines from 1 at the split; this thread knows the split's line.
      if (result.type === 'malformed') throw malformed(result.line + tokenizer.line - 1, result.detail)
      if (result.type === 'needs-string') throw new NeedsString(result.columns)
      // the worker failed: this thread parses its part too
    }
  } finally {
    split.part?.cancel()
  }
  const data = columns.map((c) => c.finish())
  const rows = data.length ? data[0].length : 0
  return {
    table: { columns: columns.map((c, k) => c.info(head.names[k])), data, length: rows },
    delimiter: head.delimiter,
    rows,
    parts,
    placed,
  }
}

/** Rows expected in `bytes` of the file, from the sample, with a margin. */
function rowsIn(bytes: number, head: CsvHead): number {
  return Math.max(1024, Math.ceil(bytes * head.rowsPerByte * 1.1))
}
