// Reading a run's result file for the report: one record batch at a time (BATCH_ROWS rows, never
// the whole file), with the event loop given back between batches, and typed readers over a
// batch's buffers so the per-row work of a million rows stays in plain loops (Arrow's get() per
// row held the loop for seconds, see pages.ts).

import { existsSync } from 'node:fs'
import { open } from 'node:fs/promises'
import {
  type AsyncRecordBatchFileReader,
  type Data,
  DataType,
  type Field,
  type RecordBatch,
  RecordBatchReader,
  type Schema,
} from 'apache-arrow'
import type { ColumnInfo } from '../../engine/data/types.js'
import { validity } from '../csv.js'

/** Lets queued I/O and timers run (a /health probe among them) before the next batch. */
export const breather = () => new Promise<void>((next) => setImmediate(next))

/**
 * The batches of an Arrow IPC file, read from disk one at a time, with `each` called on each and
 * the loop given back after it. The schema (and its metadata) comes first through `start`. A
 * missing file (a run stored before the set existed) reads as no batches.
 */
export async function eachBatch(
  path: string,
  each: (batch: RecordBatch) => void,
  start?: (schema: Schema) => void,
): Promise<void> {
  if (!existsSync(path)) return
  const handle = await open(path)
  try {
    const reader = (await RecordBatchReader.from(handle)) as unknown as AsyncRecordBatchFileReader
    await reader.open()
    start?.(reader.schema)
    for await (const batch of reader) {
      if (batch.numRows > 0) each(batch)
      await breather()
    }
  } finally {
    await handle.close()
  }
}

/** A batch's column by name as its one chunk of data. */
export function columnData(batch: RecordBatch, name: string): Data | null {
  const c = batch.schema.fields.findIndex((f) => f.name === name)
  return c < 0 ? null : batch.data.children[c]
}

/** Reads row i of a column as a number; NaN for NULL. */
export type NumberAt = (i: number) => number

/**
 * A numeric column's values: decimals as their scaled units (exact below 2^53, as the engine
 * keeps them), integers as numbers, floats as they are, text (float amounts written as text) parsed.
 */
export function numbersOf(data: Data): NumberAt {
  const valid = validity(data)
  const type = data.type
  let read: NumberAt
  if (DataType.isDecimal(type)) {
    const words = data.values as Uint32Array
    const width = type.bitWidth / 32
    // the low two words (the second signed) hold any value below 2^53 units
    read = (i) => (words[i * width + 1] | 0) * 4294967296 + words[i * width]
  } else if (DataType.isInt(type)) {
    const values = data.values as ArrayLike<number | bigint>
    read = (i) => Number(values[i])
  } else if (DataType.isFloat(type)) {
    const values = data.values as Float64Array
    read = (i) => values[i]
  } else if (DataType.isUtf8(type)) {
    const offsets = data.valueOffsets as Int32Array
    const bytes = data.values as Uint8Array
    const text = new TextDecoder()
    read = (i) => Number(text.decode(bytes.subarray(offsets[i], offsets[i + 1])))
  } else {
    throw new Error(`not a numeric column: ${String(type)}`)
  }
  return valid === null ? read : (i) => (valid(i) ? read(i) : Number.NaN)
}

/** A decimal column's scale, 0 for integers, -1 for float amounts (formatted as they are). */
export function scaleOf(field: Field): number {
  if (DataType.isDecimal(field.type)) return field.type.scale
  if (DataType.isInt(field.type)) return 0
  return -1
}

/**
 * A dictionary column's indices mapped to a caller's numbering of its values (`number` names
 * each value once), -1 for NULL: the dictionary is read once per batch, rows as Int32 reads.
 */
export function dictionaryCodes(data: Data, number: (value: string) => number): (i: number) => number {
  const dictionary = data.dictionary
  const codes = Int32Array.from({ length: dictionary?.length ?? 0 }, (_, k) => number(String(dictionary!.get(k))))
  const indices = data.values as Int32Array
  const valid = validity(data)
  return valid === null ? (i) => codes[indices[i]] : (i) => (valid(i) ? codes[indices[i]] : -1)
}

/** Whether row i of a column is NULL. */
export function isNull(data: Data | null): (i: number) => boolean {
  const valid = data ? validity(data) : null
  return valid === null ? () => data === null : (i) => !valid(i)
}

/** The engine's type of a stored record column, as recipes are planned against (ColumnInfo). */
export function columnType(field: Field): ColumnInfo['type'] {
  const type = field.type
  if (DataType.isDecimal(type)) return 'decimal'
  if (DataType.isInt(type)) return 'integer'
  if (DataType.isFloat(type)) return 'float'
  if (DataType.isDate(type)) return 'date'
  if (DataType.isTimestamp(type)) return 'timestamp'
  if (DataType.isBool(type)) return 'boolean'
  return 'string'
}

/** A boolean column's row i (false for NULL). */
export function flagsOf(data: Data | null): (i: number) => boolean {
  if (!data) return () => false
  const bits = data.values as Uint8Array
  const valid = validity(data)
  const at = data.offset
  const bit = (i: number) => (bits[(at + i) >> 3] & (1 << ((at + i) & 7))) !== 0
  return valid === null ? bit : (i) => valid(i) && bit(i)
}

/** An Arrow file's schema (with its metadata), read from its footer without its batches. */
export async function fileSchema(path: string): Promise<Schema | null> {
  if (!existsSync(path)) return null
  const handle = await open(path)
  try {
    const reader = (await RecordBatchReader.from(handle)) as unknown as AsyncRecordBatchFileReader
    await reader.open()
    return reader.schema
  } finally {
    await handle.close()
  }
}
