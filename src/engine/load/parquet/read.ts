// Row groups of a Parquet file decoded into the engine's columns. Each group is read on its own
// (one hyparquet read per group), so only the groups that survived pruning are fetched from disk,
// an abort is seen between groups, and the event loop gets a turn at every file read.
//
// Exactness as in every loader: integers and decimal units beyond 2^53 are refused (a float64
// could not keep them), decimals stay scaled integers, timestamps are floored to milliseconds.

import type { ColumnData, DecodedArray } from 'hyparquet'
import { ConcordError } from '../../../errors.js'
import type { Column } from '../../data/column.js'
import type { Table } from '../../data/table.js'
import type { ColumnInfo } from '../../data/types.js'
import { fileBuffer, malformed, PARSERS, type ParquetColumn, type ParquetFile } from './file.js'

const MAX_EXACT = 2 ** 53

function refuse(column: ParquetColumn, row: number, why: string): never {
  throw new ConcordError(
    'source_data_error',
    `column "${column.info.name}", row ${row + 1}: ${why}`,
    400,
    'store the value as a decimal or a string, or leave the column out',
  )
}

/** A big-endian two's complement integer (a decimal's bytes) as a number, or null beyond 2^53. */
export function bytesToUnits(b: Uint8Array): number | null {
  if (b.length === 0) return 0
  const negative = b[0] >= 0x80
  // skip leading sign bytes while the value still fits in what remains
  let at = 0
  while (b.length - at > 6 && b[at] === (negative ? 0xff : 0) && b[at + 1] >= 0x80 === negative) at++
  if (b.length - at > 7) return null
  let v = 0
  for (let i = at; i < b.length; i++) v = v * 256 + b[i]
  if (negative) v -= 2 ** (8 * (b.length - at))
  return Math.abs(v) < MAX_EXACT ? v : null
}

/** Fills one engine column, row group after row group, from hyparquet's decoded chunks. */
class ColumnBuilder {
  private readonly valid: Uint8Array
  private nulls = 0
  /** The file's row number of output row 0 in the chunk being put (for messages). */
  private fileRow = 0
  private readonly numbers: Float64Array | Int32Array | Uint8Array | null
  private readonly parts: (Uint8Array | null)[] | null

  constructor(
    private readonly column: ParquetColumn,
    private readonly length: number,
  ) {
    this.valid = new Uint8Array(length).fill(1)
    const kind = column.kind
    this.parts = kind === 'string' || kind === 'text' ? new Array<Uint8Array | null>(length).fill(null) : null
    this.numbers =
      kind === 'date'
        ? new Int32Array(length)
        : kind === 'boolean'
          ? new Uint8Array(length)
          : this.parts
            ? null
            : new Float64Array(length)
  }

  /** `values[i]` is row `at + i` of the output and row `fileRow + i` of the file. */
  put(values: DecodedArray, at: number, count: number, fileRow: number): void {
    this.fileRow = fileRow - at
    // strings (most of the bytes) in their own loop; the rest through set()
    if (this.column.kind === 'string') {
      const parts = this.parts!
      for (let i = 0; i < count; i++) {
        const v: unknown = values[i]
        if (v instanceof Uint8Array) parts[at + i] = v
        else if (v === null || v === undefined) this.setNull(at + i)
        else parts[at + i] = text.encode(String(v))
      }
      return
    }
    for (let i = 0; i < count; i++) {
      const v: unknown = values[i]
      if (v === null || v === undefined) this.setNull(at + i)
      else this.set(at + i, v)
    }
  }

  private setNull(row: number): void {
    this.valid[row] = 0
    this.nulls++
  }

  private set(row: number, v: unknown): void {
    switch (this.column.kind) {
      case 'text':
        this.parts![row] = text.encode(textOf(v))
        return
      case 'boolean':
        this.numbers![row] = v ? 1 : 0
        return
      case 'date':
        this.numbers![row] = v as number
        return
      case 'decimal': {
        const units =
          v instanceof Uint8Array ? bytesToUnits(v) : typeof v === 'bigint' ? bigintNumber(v) : (v as number)
        if (units === null)
          refuse(this.column, this.fileRow + row, 'a decimal beyond 2^53 units cannot be kept exactly')
        this.numbers![row] = units
        return
      }
      case 'integer': {
        const n = typeof v === 'bigint' ? bigintNumber(v) : (v as number)
        if (n === null) refuse(this.column, this.fileRow + row, 'an integer beyond 2^53 cannot be kept exactly')
        this.numbers![row] = n
        return
      }
      default:
        // float, timestamp (already milliseconds, see PARSERS)
        this.numbers![row] = Number(v)
    }
  }

  finish(): { info: ColumnInfo; data: Column } {
    const n = this.length
    const valid = this.nulls === 0 ? null : this.valid
    const info: ColumnInfo = { ...this.column.info, nullable: this.column.info.nullable || valid !== null }
    if (this.parts) {
      const offsets = new Int32Array(n + 1)
      for (let i = 0; i < n; i++) offsets[i + 1] = offsets[i] + (this.parts[i]?.length ?? 0)
      const data = new Uint8Array(offsets[n])
      for (let i = 0; i < n; i++) {
        const p = this.parts[i]
        if (p === null) continue
        // a byte loop: set() per short value costs more than the copy
        let at = offsets[i]
        for (let k = 0; k < p.length; k++) data[at++] = p[k]
      }
      return { info, data: { type: 'string', length: n, valid, offsets, data } }
    }
    const type = info.type
    if (type === 'date') return { info, data: { type, length: n, valid, values: this.numbers as Int32Array } }
    if (type === 'boolean') return { info, data: { type, length: n, valid, values: this.numbers as Uint8Array } }
    if (type === 'decimal')
      return { info, data: { type, length: n, valid, values: this.numbers as Float64Array, scale: info.scale ?? 0 } }
    return {
      info,
      data: { type: type as 'integer' | 'float' | 'timestamp', length: n, valid, values: this.numbers as Float64Array },
    }
  }
}

function bigintNumber(v: bigint): number | null {
  return v > -9007199254740992n && v < 9007199254740992n ? Number(v) : null
}

const utf8 = new TextDecoder()
const text = new TextEncoder()

/** A value the engine has no column for (a list, a struct, a time of day, a UUID) as text. */
function textOf(v: unknown): string {
  if (v instanceof Uint8Array) return utf8.decode(v)
  if (typeof v === 'string') return v
  if (typeof v === 'bigint' || typeof v === 'number' || typeof v === 'boolean') return String(v)
  return JSON.stringify(v, (_k, x: unknown) =>
    typeof x === 'bigint' ? x.toString() : x instanceof Uint8Array ? utf8.decode(x) : x,
  )
}

/**
 * The rows of row groups `groups` (indexes into file.groups, ascending), at most `limit` of them,
 * as a table of the engine's columns.
 */
export async function readRowGroups(
  file: ParquetFile,
  groups: number[],
  opts: { limit?: number; signal?: AbortSignal } = {},
): Promise<Table> {
  const { parquetRead } = await import('hyparquet')
  const { compressors } = await import('hyparquet-compressors')
  const total = groups.reduce((n, g) => n + file.groups[g].rows, 0)
  const length = Math.min(total, opts.limit ?? total)
  const builders = file.columns.map((c) => new ColumnBuilder(c, length))
  const byName = new Map(file.columns.map((c, i) => [c.info.name, builders[i]]))
  const buffer = await fileBuffer(file.path)
  try {
    let at = 0
    for (const g of groups) {
      if (at >= length) break
      opts.signal?.throwIfAborted()
      const span = file.groups[g]
      const base = at
      // hyparquet calls onChunk from a promise it does not return: an error thrown there would go
      // unhandled, so the first one is kept and thrown once the group is read
      let failure: unknown
      const onChunk = (chunk: ColumnData) => {
        if (failure !== undefined) return
        // rows of the group from chunk.rowStart (file rows), clipped to the group and the limit
        const from = Math.max(chunk.rowStart, span.start)
        const to = Math.min(chunk.rowEnd, span.start + span.rows, span.start + (length - base))
        if (to <= from) return
        const offset = from - chunk.rowStart
        const values = offset === 0 ? chunk.columnData : chunk.columnData.slice(offset)
        try {
          byName.get(chunk.columnName)?.put(values, base + (from - span.start), to - from, from)
        } catch (err) {
          failure = err
        }
      }
      try {
        await parquetRead({
          file: buffer,
          metadata: file.raw,
          rowStart: span.start,
          rowEnd: span.start + span.rows,
          utf8: false,
          parsers: PARSERS,
          compressors,
          geoparquet: false,
          onChunk,
        })
      } catch (err) {
        throw malformed(err)
      }
      if (failure !== undefined) throw failure
      at += Math.min(span.rows, length - base)
    }
  } finally {
    await buffer.close()
  }
  const made = builders.map((b) => b.finish())
  return { columns: made.map((m) => m.info), data: made.map((m) => m.data), length }
}
