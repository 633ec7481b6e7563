// Arrow IPC files (the file or the stream format: .arrow, .feather v2, .arrows) into the engine's
// columns. The engine's layouts are Arrow's (data/column.ts), so strings, dates and floats keep
// their buffers' contents as they are, batch after batch; integers and timestamps become float64
// (exact below 2^53, refused beyond), decimals scaled units, booleans and validity bitmaps bytes.
// Types the engine has no column for (lists, structs, …) are read as their text.

import { readFile } from 'node:fs/promises'
import {
  type Data,
  DataType,
  type Field,
  type Table as ArrowTable,
  tableFromIPC,
  TimeUnit,
  type Vector,
} from 'apache-arrow'
import { ConcordError } from '../../errors.js'
import type { Column } from '../data/column.js'
import type { Table } from '../data/table.js'
import type { ColumnInfo } from '../data/types.js'

const MAX_EXACT = 2 ** 53

function refuse(field: Field, row: number, why: string): never {
  throw new ConcordError(
    'source_data_error',
    `column "${field.name}", row ${row + 1}: ${why}`,
    400,
    'store the value as a decimal or a string, or leave the column out',
  )
}

/** Validity bytes from the chunks' bitmaps, or null when no value is NULL. */
function validity(vector: Vector): Uint8Array | null {
  if (vector.nullCount === 0) return null
  const out = new Uint8Array(vector.length)
  let at = 0
  for (const d of vector.data) {
    for (let i = 0; i < d.length; i++) out[at++] = d.getValid(i) ? 1 : 0
  }
  return out
}

/** Every value of a numeric column as a float64, through `read` per chunk. */
function numbers(vector: Vector, read: (d: Data, i: number) => number): Float64Array {
  const out = new Float64Array(vector.length)
  let at = 0
  for (const d of vector.data) for (let i = 0; i < d.length; i++) out[at++] = d.getValid(i) ? read(d, i) : 0
  return out
}

function column(field: Field, vector: Vector): { info: ColumnInfo; data: Column } {
  const type = field.type
  const n = vector.length
  const valid = validity(vector)
  const info = (t: ColumnInfo['type'], scale?: number): ColumnInfo => ({
    name: field.name,
    type: t,
    nullable: valid !== null,
    ...(scale === undefined ? {} : { scale }),
  })
  if (DataType.isUtf8(type)) {
    let bytes = 0
    for (const d of vector.data) bytes += (d.valueOffsets as Int32Array)[d.length] - (d.valueOffsets as Int32Array)[0]
    const offsets = new Int32Array(n + 1)
    const data = new Uint8Array(bytes)
    let row = 0
    for (const d of vector.data) {
      const o = d.valueOffsets as Int32Array
      const base = offsets[row] - o[0]
      data.set((d.values as Uint8Array).subarray(o[0], o[d.length]), offsets[row])
      for (let i = 1; i <= d.length; i++) offsets[row + i] = o[i] + base
      row += d.length
    }
    return { info: info('string'), data: { type: 'string', length: n, valid, offsets, data } }
  }
  if (DataType.isInt(type)) {
    const values = numbers(vector, (d, i) => {
      const v = Number((d.values as ArrayLike<number | bigint>)[i])
      return Math.abs(v) < MAX_EXACT ? v : refuse(field, i, 'an integer beyond 2^53 cannot be kept exactly')
    })
    return { info: info('integer'), data: { type: 'integer', length: n, valid, values } }
  }
  if (DataType.isFloat(type)) {
    const values = numbers(vector, (d, i) => Number((d.values as ArrayLike<number>)[i]))
    return { info: info('float'), data: { type: 'float', length: n, valid, values } }
  }
  if (DataType.isDecimal(type)) {
    const words = type.bitWidth / 32
    const values = numbers(vector, (d, i) => {
      const w = d.values as Uint32Array
      const at = i * words
      // the value fits in the low two words (the second signed) when the higher ones are its sign
      const units = (w[at + 1] | 0) * 4294967296 + w[at]
      const sign = units < 0 ? 0xffffffff : 0
      for (let k = 2; k < words; k++)
        if (w[at + k] !== sign) refuse(field, i, 'a decimal beyond 2^53 units cannot be kept exactly')
      return Math.abs(units) < MAX_EXACT
        ? units
        : refuse(field, i, 'a decimal beyond 2^53 units cannot be kept exactly')
    })
    return { info: info('decimal', type.scale), data: { type: 'decimal', length: n, valid, values, scale: type.scale } }
  }
  if (DataType.isDate(type)) {
    const out = new Int32Array(n)
    let at = 0
    for (const d of vector.data) {
      const v = d.values as Int32Array | BigInt64Array
      for (let i = 0; i < d.length; i++)
        out[at++] = v instanceof Int32Array ? v[i] : Math.floor(Number(v[i]) / 86_400_000)
    }
    return { info: info('date'), data: { type: 'date', length: n, valid, values: out } }
  }
  if (DataType.isTimestamp(type)) {
    const per = {
      [TimeUnit.SECOND]: 1000,
      [TimeUnit.MILLISECOND]: 1,
      [TimeUnit.MICROSECOND]: 1e-3,
      [TimeUnit.NANOSECOND]: 1e-6,
    }[type.unit]
    const values = numbers(vector, (d, i) => Math.floor(Number((d.values as BigInt64Array)[i]) * per))
    return { info: info('timestamp'), data: { type: 'timestamp', length: n, valid, values } }
  }
  if (DataType.isBool(type)) {
    const values = new Uint8Array(n)
    for (let i = 0; i < n; i++) values[i] = vector.get(i) ? 1 : 0
    return { info: info('boolean'), data: { type: 'boolean', length: n, valid, values } }
  }
  // dictionaries of strings, and anything else, as text
  const text = new TextEncoder()
  const parts = Array.from({ length: n }, (_, i) => {
    const v = vector.get(i) as unknown
    return v === null || v === undefined ? null : text.encode(typeof v === 'object' ? JSON.stringify(v) : String(v))
  })
  const offsets = new Int32Array(n + 1)
  parts.forEach((p, i) => (offsets[i + 1] = offsets[i] + (p?.length ?? 0)))
  const data = new Uint8Array(offsets[n])
  parts.forEach((p, i) => p && data.set(p, offsets[i]))
  return { info: info('string'), data: { type: 'string', length: n, valid, offsets, data } }
}

/** An Arrow IPC file (file or stream format) as a table of the engine's columns. */
export async function loadArrow(path: string, signal?: AbortSignal): Promise<Table> {
  const bytes = await readFile(path, { signal })
  let table
  try {
    table = tableFromIPC(bytes)
  } catch (err) {
    throw new ConcordError(
      'malformed_file',
      `not an Arrow IPC file: ${(err as Error).message}`,
      400,
      'give an Arrow IPC file (.arrow, .feather v2) or stream (.arrows)',
    )
  }
  return fromArrowTable(table)
}

/** Some (or all) columns of an Arrow table as the engine's columns, named as in the table. */
export function fromArrowTable(table: ArrowTable, keep: (name: string) => boolean = () => true): Table {
  const columns: ColumnInfo[] = []
  const data: Column[] = []
  table.schema.fields.forEach((field, c) => {
    if (!keep(field.name)) return
    const made = column(field, table.getChildAt(c)!)
    columns.push(made.info)
    data.push(made.data)
  })
  return { columns, data, length: table.numRows }
}
