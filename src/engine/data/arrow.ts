// Tables as Apache Arrow: loaded scopes handed to other tools, run results on disk (Arrow IPC
// files) and exports. The column layouts follow Arrow's (column.ts), so strings (offsets + UTF-8
// bytes), dates (Date32 days) and floats pass without copying their data; validity bytes are
// packed into Arrow's bitmaps, decimal units become Decimal128 at the column's scale, integers
// and timestamps Int64.

import {
  Bool,
  RecordBatch,
  Schema,
  Struct,
  type Data,
  DateDay,
  Decimal,
  Dictionary,
  Float64,
  Int32,
  Int64,
  List,
  makeData,
  makeVector,
  Table as ArrowTable,
  TimestampMillisecond,
  Utf8,
  Field,
  type Vector,
} from 'apache-arrow'
import { largeArray } from './alloc.js'
import type { Column, StringColumn } from './column.js'
import type { Table } from './table.js'
import type { ColumnInfo } from './types.js'

/** Decimal128 precision: any unit count below 2^53 fits in 16 digits; 38 is the type's maximum. */
const DECIMAL_PRECISION = 38

function bitmap(valid: Uint8Array | null, n: number): { nullBitmap?: Uint8Array; nullCount: number } {
  if (valid === null) return { nullCount: 0 }
  const bits = new Uint8Array((n + 7) >> 3)
  let nulls = 0
  for (let i = 0; i < n; i++) {
    if (valid[i]) bits[i >> 3] |= 1 << (i & 7)
    else nulls++
  }
  return nulls === 0 ? { nullCount: 0 } : { nullBitmap: bits, nullCount: nulls }
}

/**
 * Rows `from`… (`length` of them, all by default) of a column as Arrow data. Strings, dates and
 * floats are views of the column's own arrays (a string slice's offsets need not start at 0);
 * the rest is converted.
 */
export function arrowData(col: Column, from = 0, length = col.length - from): Data {
  const n = length
  const nulls = bitmap(col.valid === null ? null : col.valid.subarray(from, from + n), n)
  switch (col.type) {
    case 'string':
      return makeData({
        type: new Utf8(),
        length: n,
        ...nulls,
        valueOffsets: col.offsets.subarray(from, from + n + 1),
        data: col.data,
      })
    case 'float':
      return makeData({ type: new Float64(), length: n, ...nulls, data: col.values.subarray(from, from + n) })
    case 'integer':
    case 'timestamp': {
      const data = largeArray(BigInt64Array, n)
      for (let i = 0; i < n; i++) data[i] = BigInt(col.values[from + i])
      const type = col.type === 'integer' ? new Int64() : new TimestampMillisecond()
      return makeData({ type, length: n, ...nulls, data } as never)
    }
    case 'decimal': {
      // 128-bit two's complement, four little-endian 32-bit words per value
      const words = largeArray(Uint32Array, n * 4)
      for (let i = 0; i < n; i++) {
        const v = col.values[from + i]
        const high = Math.floor(v / 4294967296)
        words[i * 4] = v - high * 4294967296
        words[i * 4 + 1] = high >>> 0
        const sign = v < 0 ? 0xffffffff : 0
        words[i * 4 + 2] = sign
        words[i * 4 + 3] = sign
      }
      return makeData({ type: new Decimal(col.scale, DECIMAL_PRECISION, 128), length: n, ...nulls, data: words })
    }
    case 'date':
      return makeData({ type: new DateDay(), length: n, ...nulls, data: col.values.subarray(from, from + n) })
    case 'boolean': {
      const bits = new Uint8Array((n + 7) >> 3)
      for (let i = 0; i < n; i++) if (col.values[from + i]) bits[i >> 3] |= 1 << (i & 7)
      return makeData({ type: new Bool(), length: n, ...nulls, data: bits })
    }
  }
}

/** Arrow vectors for a table's columns, by name (`prefix` + name). */
export function arrowColumns(table: Table, prefix = ''): Record<string, Vector> {
  const out: Record<string, Vector> = {}
  table.columns.forEach((info: ColumnInfo, c) => {
    out[`${prefix}${info.name}`] = makeVector(arrowData(table.data[c]))
  })
  return out
}

/** Rows per record batch of a table handed over as Arrow. */
export const ARROW_BATCH_ROWS = 65_536

/** The Arrow schema of a table's columns. */
export function arrowSchema(table: Table): Schema {
  return new Schema(
    table.columns.map(
      (info, c) => new Field(info.name, arrowData(table.data[c], 0, 0).type, info.nullable || table.data[c].valid !== null),
    ),
  )
}

/**
 * A table as Arrow record batches of `rows` rows, each converted when it is asked for: a caller
 * that yields between batches never converts a whole large table at once. Every batch has the
 * schema arrowSchema gives (an empty table: no batch).
 */
export function* arrowBatches(table: Table, rows = ARROW_BATCH_ROWS): Generator<RecordBatch> {
  const schema = arrowSchema(table)
  for (let at = 0; at < table.length; at += rows) {
    const n = Math.min(rows, table.length - at)
    const children = table.data.map((col) => arrowData(col, at, n))
    const data = makeData({ type: new Struct(schema.fields), length: n, nullCount: 0, children })
    yield new RecordBatch(schema, data)
  }
}

/**
 * A table as an apache-arrow Table: record batches over the engine's own arrays — strings, dates
 * and floats without a copy (arrowData), integers, timestamps, decimals and booleans converted.
 */
export function toArrowTable(table: Table, rows = ARROW_BATCH_ROWS): ArrowTable {
  const batches = [...arrowBatches(table, rows)]
  return batches.length > 0 ? new ArrowTable(batches) : new ArrowTable(arrowSchema(table))
}

/** A string column from JS strings (null = NULL). */
export function stringColumn(values: ArrayLike<string | null>): StringColumn {
  const n = values.length
  const encoder = new TextEncoder()
  const offsets = largeArray(Int32Array, n + 1)
  let valid: Uint8Array | null = null
  let data = new Uint8Array(Math.max(64, n * 12))
  let at = 0
  for (let i = 0; i < n; i++) {
    const s = values[i]
    if (s === null) {
      valid ??= new Uint8Array(n).fill(1)
      valid[i] = 0
    } else {
      // at most 3 bytes per UTF-16 unit
      if (at + s.length * 3 > data.length) {
        const bigger = new Uint8Array(Math.max(data.length * 2, at + s.length * 3))
        bigger.set(data.subarray(0, at))
        data = bigger
      }
      at += encoder.encodeInto(s, data.subarray(at)).written
    }
    offsets[i + 1] = at
  }
  return { type: 'string', length: n, valid, offsets, data: data.slice(0, at) }
}

/**
 * A List<Float64> (or List<Int32>) vector: list k holds values[starts[k] .. starts[k+1]); NULL
 * where `valid` is 0.
 */
export function numberListVector(values: Float64Array | Int32Array, starts: Int32Array, valid: Uint8Array): Vector {
  const n = starts.length - 1
  const itemType = values instanceof Float64Array ? new Float64() : new Int32()
  const child = makeData({ type: itemType, length: values.length, nullCount: 0, data: values } as never)
  const type = new List(new Field('item', itemType, false))
  return makeVector(makeData({ type, length: n, ...bitmap(valid, n), valueOffsets: starts, child } as never))
}

const views = new WeakSet<Vector>()

/** Whether `data` is a view made by stringViewData (in this thread). */
export function isStringView(data: Data): boolean {
  return data.dictionary !== undefined && views.has(data.dictionary)
}

/**
 * Rows of a string column without copying its bytes: a Dictionary<Utf8, Int32> whose indices are
 * `rows` and whose dictionary is the whole column (NULL where `valid` is 0). What CSV result sets
 * are encoded from: gathering the strings into new buffers first took a third of writing them.
 * The dictionary's Data is made once per column (`cache`).
 */
export function stringViewData(
  col: StringColumn,
  rows: Int32Array,
  valid: Uint8Array | null = null,
  cache?: WeakMap<StringColumn, Vector>,
): Data {
  let dictionary = cache?.get(col)
  if (!dictionary) {
    dictionary = makeVector(arrowData(col))
    cache?.set(col, dictionary)
    views.add(dictionary)
  }
  const type = new Dictionary(new Utf8(), new Int32())
  return makeData({ type, length: rows.length, ...bitmap(valid, rows.length), data: rows, dictionary } as never)
}

/**
 * A list-of-strings vector: list k holds the strings items[starts[k] .. starts[k+1]), `items` being
 * Utf8 or a string view (stringViewData).
 */
export function stringListVector(items: Data, starts: Int32Array): Vector {
  const type = new List(new Field('item', items.type, true))
  return makeVector(
    makeData({ type, length: starts.length - 1, nullCount: 0, valueOffsets: starts, child: items } as never),
  )
}
