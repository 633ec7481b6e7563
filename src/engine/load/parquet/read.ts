// Row groups of a Parquet file decoded into the engine's columns. Each kept group's bytes are read
// with one file read, so only the groups that survived pruning are fetched from disk, an abort is
// seen between groups, and the event loop gets a turn at every read. Flat columns (nearly all)
// are decoded page by page straight into their builders (pages.ts); nested ones (lists, structs,
// maps) through hyparquet's full read, as JSON text.
//
// Exactness as in every loader: integers and decimal units beyond 2^53 are refused (a float64
// could not keep them), decimals stay scaled integers, timestamps are floored to milliseconds.

import { type ColumnData, type DecodedArray, parquetSchema, type SchemaElement } from 'hyparquet'
import type { ColumnDecoder } from 'hyparquet/src/types.js'
import { ConcordError } from '../../../errors.js'
import type { Column } from '../../data/column.js'
import type { Table } from '../../data/table.js'
import type { ColumnInfo } from '../../data/types.js'
import { fileBuffer, malformed, PARSERS, type ParquetColumn, type ParquetFile } from './file.js'
import { type PageSink, parquetInternals, readChunkPages } from './pages.js'

const MAX_EXACT = 2 ** 53
const TWO_32 = 4294967296

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
 * Fills one engine column in row order, page after page, group after group. Values arrive as the
 * column's `decode` says (file.ts): raw physical values are brought into the engine's units here.
 */
class ColumnBuilder implements PageSink {
  private readonly valid: Uint8Array
  private nulls = 0
  /** The next row to fill. */
  private row = 0
  /** The file's row number of output row 0 of the current group (for messages). */
  private fileBase = 0
  private readonly numbers: Float64Array | Int32Array | Uint8Array | null
  private readonly offsets: Int32Array | null
  private bytes: Uint8Array
  private used = 0

  constructor(
    private readonly column: ParquetColumn,
    private readonly length: number,
  ) {
    this.valid = new Uint8Array(length).fill(1)
    const kind = column.kind
    const strings = kind === 'string' || kind === 'text'
    this.offsets = strings ? new Int32Array(length + 1) : null
    this.bytes = new Uint8Array(strings ? Math.max(64, length * 8) : 0)
    this.numbers = strings
      ? null
      : kind === 'date'
        ? new Int32Array(length)
        : kind === 'boolean'
          ? new Uint8Array(length)
          : new Float64Array(length)
  }

  /** Rows from here on are the group starting at file row `fileStart`. */
  startGroup(fileStart: number): void {
    this.fileBase = fileStart - this.row
  }

  page(values: DecodedArray, levels: number[], rows: number): void {
    if (levels.length === 0) {
      this.present(values, 0, this.row, rows)
      this.row += rows
      return
    }
    // runs of present values between NULLs, each put as a slice of `values`
    let v = 0
    let i = 0
    while (i < rows) {
      if (levels[i] === 0) {
        this.setNull(this.row + i)
        i++
        continue
      }
      let j = i
      while (j < rows && levels[j] !== 0) j++
      this.present(values, v, this.row + i, j - i)
      v += j - i
      i = j
    }
    this.row += rows
  }

  /** `count` values from `values[from]` into rows `at`… (all present). */
  private present(values: DecodedArray, from: number, at: number, count: number): void {
    const c = this.column
    if (c.kind === 'string') return this.strings(values, from, at, count)
    if (c.decode === 'raw') {
      if (values instanceof BigInt64Array) return this.int64(values, from, at, count)
      if (values instanceof Int32Array && !c.unsigned && c.kind !== 'boolean') {
        // INT32: integers, decimal units, days
        const out = this.numbers!
        for (let i = 0; i < count; i++) out[at + i] = values[from + i]
        return
      }
      if ((values instanceof Float64Array || values instanceof Float32Array) && c.kind === 'float') {
        const out = this.numbers!
        for (let i = 0; i < count; i++) out[at + i] = values[from + i]
        return
      }
    }
    for (let i = 0; i < count; i++) {
      const v: unknown = values[from + i]
      if (v === null || v === undefined) this.setNull(at + i)
      else this.set(at + i, v)
    }
  }

  private strings(values: DecodedArray, from: number, at: number, count: number): void {
    const offsets = this.offsets!
    for (let i = 0; i < count; i++) {
      const v: unknown = values[from + i]
      let b: Uint8Array
      if (v instanceof Uint8Array) b = v
      else if (v === null || v === undefined) {
        this.setNull(at + i)
        continue
      } else b = text.encode(String(v))
      this.append(b)
      offsets[at + i + 1] = this.used
    }
  }

  private append(b: Uint8Array): void {
    if (this.used + b.length > this.bytes.length) {
      const bigger = new Uint8Array(Math.max(this.bytes.length * 2, this.used + b.length))
      bigger.set(this.bytes.subarray(0, this.used))
      this.bytes = bigger
    }
    // a byte loop: set() per short value costs more than the copy
    const out = this.bytes
    let p = this.used
    for (let k = 0; k < b.length; k++) out[p++] = b[k]
    this.used = p
  }

  /** INT64 values (integers, decimal units, timestamps) read as two 32-bit halves: no BigInt per value. */
  private int64(values: BigInt64Array, from: number, at: number, count: number): void {
    const halves = new Int32Array(values.buffer, values.byteOffset + from * 8, count * 2)
    const out = this.numbers as Float64Array
    const c = this.column
    const unsigned = c.unsigned
    for (let i = 0; i < count; i++) {
      const lo = halves[2 * i] >>> 0
      const hi = unsigned ? halves[2 * i + 1] >>> 0 : halves[2 * i + 1]
      // exact whenever |value| < 2^53; beyond, the rounded value stays >= 2^53 and is refused
      const v = hi * TWO_32 + lo
      if (c.kind === 'timestamp') {
        out[at + i] = this.millis(v, at + i, values, from + i)
        continue
      }
      if (!(Math.abs(v) < MAX_EXACT))
        refuse(
          c,
          this.fileBase + at + i,
          `${c.kind === 'decimal' ? 'a decimal' : 'an integer'} beyond 2^53 units cannot be kept exactly`,
        )
      out[at + i] = v
    }
  }

  /**
   * A timestamp's milliseconds, floored, from its stored count of the column's unit: `v` as a
   * float64, exact below 2^53; beyond (nanoseconds) the stored value is read as a BigInt.
   */
  private millis(v: number, row: number, stored: ArrayLike<bigint>, index: number): number {
    const unit = this.column.unit
    if (unit === 'MILLIS') {
      if (!(Math.abs(v) < MAX_EXACT))
        refuse(this.column, this.fileBase + row, 'a timestamp beyond the representable range')
      return v
    }
    if (unit === 'MICROS' && Math.abs(v) < MAX_EXACT) {
      // floor division, checked: v / 1000 is rounded, its floor may be one off near an integer
      let q = Math.floor(v / 1000)
      const r = v - q * 1000
      if (r < 0) q--
      else if (r >= 1000) q++
      return q
    }
    const big = stored[index]
    return unit === 'MICROS' ? Number(floorDiv(big, 1000n)) : Number(floorDiv(big, 1_000_000n))
  }

  private setNull(row: number): void {
    this.valid[row] = 0
    this.nulls++
    if (this.offsets) this.offsets[row + 1] = this.used
  }

  private set(row: number, v: unknown): void {
    const c = this.column
    switch (c.kind) {
      case 'text':
        this.append(text.encode(textOf(v)))
        this.offsets![row + 1] = this.used
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
        if (units === null) refuse(c, this.fileBase + row, 'a decimal beyond 2^53 units cannot be kept exactly')
        this.numbers![row] = units
        return
      }
      case 'integer': {
        let n = typeof v === 'bigint' ? bigintNumber(c.unsigned ? BigInt.asUintN(64, v) : v) : (v as number)
        if (n !== null && c.unsigned && n < 0) n += TWO_32
        if (n === null) refuse(c, this.fileBase + row, 'an integer beyond 2^53 cannot be kept exactly')
        this.numbers![row] = n
        return
      }
      case 'timestamp':
        this.numbers![row] = typeof v === 'bigint' ? this.millis(Number(v), row, [v], 0) : Number(v)
        return
      default:
        // float
        this.numbers![row] = Number(v)
    }
  }

  finish(): { info: ColumnInfo; data: Column } {
    const n = this.length
    if (this.row !== n) throw new Error(`parquet column "${this.column.info.name}": ${this.row} of ${n} rows read`)
    const valid = this.nulls === 0 ? null : this.valid
    const info: ColumnInfo = { ...this.column.info, nullable: this.column.info.nullable || valid !== null }
    if (this.offsets) {
      return {
        info,
        data: { type: 'string', length: n, valid, offsets: this.offsets, data: this.bytes.slice(0, this.used) },
      }
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

function floorDiv(v: bigint, d: bigint): bigint {
  const q = v / d
  return v < 0n && q * d !== v ? q - 1n : q
}

function bigintNumber(v: bigint): number | null {
  return v > -9007199254740992n && v < 9007199254740992n ? Number(v) : null
}

/** The element a raw column decodes with: its annotations dropped, so values arrive as stored. */
function rawElement(e: SchemaElement): SchemaElement {
  return { ...e, converted_type: undefined, logical_type: undefined }
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
  const internals = await parquetInternals()
  const total = groups.reduce((n, g) => n + file.groups[g].rows, 0)
  const length = Math.min(total, opts.limit ?? total)
  const builders = file.columns.map((c) => new ColumnBuilder(c, length))
  const tree = parquetSchema(file.metadata)
  const decoders = file.columns.map((c, i): ColumnDecoder | null =>
    c.leaf === null
      ? null
      : {
          pathInSchema: [c.info.name],
          type: c.element.type!,
          element: c.decode === 'raw' ? rawElement(c.element) : c.element,
          schemaPath: [tree, tree.children[i]],
          codec: 'UNCOMPRESSED',
          parsers: { ...internals.defaultParsers, ...PARSERS },
          compressors: internals.compressors,
          utf8: false,
        },
  )
  const nested = file.columns.filter((_, i) => decoders[i] === null).map((c) => c.info.name)
  const buffer = await fileBuffer(file.path)
  try {
    let at = 0
    for (const g of groups) {
      if (at >= length) break
      opts.signal?.throwIfAborted()
      const span = file.groups[g]
      const rows = Math.min(span.rows, length - at)
      const chunks = file.metadata.row_groups[g].columns
      // one read covering every flat column's chunk in the group
      let lo = Infinity
      let hi = 0
      file.columns.forEach((c, i) => {
        if (decoders[i] === null) return
        const m = chunks[c.leaf!].meta_data!
        const start = Number(m.dictionary_page_offset || m.data_page_offset)
        lo = Math.min(lo, start)
        hi = Math.max(hi, start + Number(m.total_compressed_size))
      })
      const bytes = lo < hi ? new Uint8Array(await buffer.slice(lo, hi)) : new Uint8Array(0)
      opts.signal?.throwIfAborted()
      try {
        file.columns.forEach((c, i) => {
          const decoder = decoders[i]
          if (decoder === null) return
          const m = chunks[c.leaf!].meta_data!
          const start = Number(m.dictionary_page_offset || m.data_page_offset) - lo
          builders[i].startGroup(span.start)
          readChunkPages(
            internals,
            bytes.subarray(start, start + Number(m.total_compressed_size)),
            { ...decoder, codec: m.codec },
            c.maxDefinitionLevel,
            rows,
            builders[i],
          )
        })
      } catch (err) {
        if (err instanceof ConcordError) throw err
        throw malformed(err)
      }
      if (nested.length > 0) await readNested(file, buffer, g, rows, nested, builders)
      at += rows
    }
  } finally {
    await buffer.close()
  }
  const made = builders.map((b) => b.finish())
  return { columns: made.map((m) => m.info), data: made.map((m) => m.data), length }
}

/** Nested columns of group `g` (its first `rows` rows) through hyparquet's full read, as text. */
async function readNested(
  file: ParquetFile,
  buffer: Awaited<ReturnType<typeof fileBuffer>>,
  g: number,
  rows: number,
  names: string[],
  builders: ColumnBuilder[],
): Promise<void> {
  const { parquetRead } = await import('hyparquet')
  const { compressors } = await import('hyparquet-compressors')
  const span = file.groups[g]
  const byName = new Map(file.columns.map((c, i) => [c.info.name, builders[i]]))
  for (const name of names) byName.get(name)!.startGroup(span.start)
  // hyparquet calls onChunk from a promise it does not return: an error thrown there would go
  // unhandled, so the first one is kept and thrown once the group is read
  let failure: unknown
  const onChunk = (chunk: ColumnData) => {
    if (failure !== undefined) return
    const builder = byName.get(chunk.columnName)!
    const from = Math.max(chunk.rowStart, span.start)
    const to = Math.min(chunk.rowEnd, span.start + rows)
    if (to <= from) return
    const values = chunk.columnData.slice(from - chunk.rowStart, to - chunk.rowStart)
    try {
      builder.page(values, [], to - from)
    } catch (err) {
      failure = err
    }
  }
  try {
    await parquetRead({
      file: buffer,
      metadata: file.raw,
      columns: names,
      rowStart: span.start,
      rowEnd: span.start + rows,
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
}
