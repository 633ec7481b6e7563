// A Parquet file's footer read once: its row groups and the engine type of each top-level column.
// hyparquet (pure JavaScript, no native build) parses the footer and decodes pages; the parsers
// below keep values in the engine's own units from the start — strings and JSON as their UTF-8
// bytes, dates as days, timestamps as whole milliseconds (floored, as every loader does) — so the
// statistics that prune row groups and the decoded values compare the same way.
//
// Decimals are the exception: hyparquet turns them into float64 values (214.16 as 214.16000000001),
// which would break exactness. The footer used for reading (`raw`) drops their DECIMAL annotation,
// so their pages decode as the stored integers (INT32, INT64) or big-endian bytes, and read.ts
// keeps them as scaled units.

import { open } from 'node:fs/promises'
import type { AsyncBuffer, FileMetaData, ParquetParsers, SchemaElement, SchemaTree } from 'hyparquet'
import { ConcordError } from '../../../errors.js'
import type { ColumnInfo, ColumnType } from '../../data/types.js'

/** How a top-level column decodes: one of the engine's types, or `text` for what it has no column for. */
export type ColumnKind = ColumnType | 'text'

export interface ParquetColumn {
  info: ColumnInfo
  kind: ColumnKind
  /** The column chunk holding this column in every row group (its statistics), null for nested columns. */
  leaf: number | null
  /** Physical type of the leaf. */
  physical?: SchemaElement['type']
  /** An unsigned integer (its deprecated statistics were compared as signed). */
  unsigned: boolean
  /** The column's schema element, as the file declares it. */
  element: SchemaElement
  /** 0 for a REQUIRED column, 1 for an OPTIONAL one (nested columns are read otherwise). */
  maxDefinitionLevel: number
  /**
   * How pages decode (read.ts): `raw` as the physical type stores them, converted to the engine's
   * units by the builder; `annotated` through hyparquet's conversions (text kinds, INT96, FLOAT16).
   */
  decode: 'raw' | 'annotated'
  /** The unit of an INT64 timestamp. */
  unit?: 'MILLIS' | 'MICROS' | 'NANOS'
}

export interface RowGroupSpan {
  /** First row of the group in the file. */
  start: number
  rows: number
}

export interface ParquetFile {
  path: string
  byteLength: number
  /** The footer as parsed with PARSERS: statistics in the engine's units (decimals aside, see prune.ts). */
  metadata: FileMetaData
  /** The footer to decode pages with: decimals unannotated (see above). */
  raw: FileMetaData
  columns: ParquetColumn[]
  groups: RowGroupSpan[]
  rows: number
}

/** Milliseconds since the epoch, floored, from a count of `per` units per millisecond. */
function floorMillis(v: bigint, per: bigint): number {
  const q = v / per
  return Number(v < 0n && q * per !== v ? q - 1n : q)
}

export const PARSERS: Partial<ParquetParsers> = {
  timestampFromMilliseconds: (v) => Number(v),
  timestampFromMicroseconds: (v) => floorMillis(v, 1000n),
  timestampFromNanoseconds: (v) => floorMillis(v, 1_000_000n),
  dateFromDays: (days) => days,
  stringFromBytes: (bytes) => bytes,
  jsonFromBytes: (bytes) => bytes,
}

export function malformed(err: unknown): ConcordError {
  return new ConcordError(
    'malformed_file',
    `not a readable Parquet file: ${(err as Error).message}`,
    400,
    'give a Parquet file (.parquet) as written by DuckDB, Spark, pandas/pyarrow or polars',
  )
}

/** Reads of byte ranges through one file handle, as hyparquet asks for them. */
export async function fileBuffer(path: string): Promise<AsyncBuffer & { close(): Promise<void> }> {
  const handle = await open(path, 'r')
  const { size } = await handle.stat()
  return {
    byteLength: size,
    async slice(start: number, end = size) {
      const out = new Uint8Array(Math.max(0, end - start))
      let done = 0
      while (done < out.length) {
        const { bytesRead } = await handle.read(out, done, out.length - done, start + done)
        if (bytesRead === 0) break
        done += bytesRead
      }
      return out.buffer
    },
    close: () => handle.close(),
  }
}

function isDecimal(e: SchemaElement): boolean {
  return e.converted_type === 'DECIMAL' || e.logical_type?.type === 'DECIMAL'
}

function decimalScale(e: SchemaElement): number {
  return e.logical_type?.type === 'DECIMAL' ? e.logical_type.scale : (e.scale ?? 0)
}

/** The engine type of a leaf column, from its physical type and annotations. */
function kindOf(e: SchemaElement): ColumnKind {
  const logical = e.logical_type?.type
  if (isDecimal(e)) return 'decimal'
  if (e.converted_type === 'DATE' || logical === 'DATE') return 'date'
  if (
    e.converted_type === 'TIMESTAMP_MILLIS' ||
    e.converted_type === 'TIMESTAMP_MICROS' ||
    logical === 'TIMESTAMP' ||
    (e.type === 'INT96' && !e.converted_type)
  )
    return 'timestamp'
  if (e.converted_type === 'TIME_MILLIS' || e.converted_type === 'TIME_MICROS' || logical === 'TIME') return 'text'
  if (logical === 'UUID' || logical === 'FLOAT16' || e.converted_type === 'INTERVAL') {
    return logical === 'FLOAT16' ? 'float' : 'text'
  }
  switch (e.type) {
    case 'BOOLEAN':
      return 'boolean'
    case 'INT32':
    case 'INT64':
      return 'integer'
    case 'FLOAT':
    case 'DOUBLE':
      return 'float'
    case 'BYTE_ARRAY':
      return 'string'
    default:
      // FIXED_LEN_BYTE_ARRAY without an annotation the engine knows: its bytes as text
      return 'text'
  }
}

function columnOf(node: SchemaTree, metadata: FileMetaData): ParquetColumn {
  const e = node.element
  const nested = node.children.length > 0 || e.repetition_type === 'REPEATED'
  const kind: ColumnKind = nested ? 'text' : kindOf(e)
  const type: ColumnType = kind === 'text' ? 'string' : kind
  const info: ColumnInfo = {
    name: e.name,
    type,
    nullable: e.repetition_type !== 'REQUIRED',
    ...(kind === 'decimal' ? { scale: decimalScale(e) } : {}),
  }
  const chunks = metadata.row_groups[0]?.columns ?? []
  const leaf = nested ? -1 : chunks.findIndex((c) => c.meta_data?.path_in_schema.join('.') === e.name)
  const unsigned =
    e.converted_type?.startsWith('UINT_') === true || (e.logical_type?.type === 'INTEGER' && !e.logical_type.isSigned)
  const decode = kind === 'text' || e.type === 'INT96' || e.logical_type?.type === 'FLOAT16' ? 'annotated' : 'raw'
  return {
    info,
    kind,
    leaf: leaf < 0 ? null : leaf,
    physical: e.type,
    unsigned,
    element: e,
    maxDefinitionLevel: e.repetition_type === 'REQUIRED' ? 0 : 1,
    decode,
    unit: kind === 'timestamp' && e.type === 'INT64' ? timestampUnit(e) : undefined,
  }
}

function timestampUnit(e: SchemaElement): 'MILLIS' | 'MICROS' | 'NANOS' {
  if (e.logical_type?.type === 'TIMESTAMP') return e.logical_type.unit
  return e.converted_type === 'TIMESTAMP_MICROS' ? 'MICROS' : 'MILLIS'
}

/** The footer of the Parquet file at `path`: schema, row groups, statistics. No page is read. */
export async function openParquet(path: string, signal?: AbortSignal): Promise<ParquetFile> {
  const { parquetMetadataAsync, parquetSchema } = await import('hyparquet')
  const file = await fileBuffer(path)
  let metadata: FileMetaData
  try {
    metadata = await parquetMetadataAsync(file, { parsers: PARSERS, geoparquet: false })
  } catch (err) {
    throw malformed(err)
  } finally {
    await file.close()
  }
  signal?.throwIfAborted()
  const columns = parquetSchema(metadata).children.map((node) => columnOf(node, metadata))
  const groups: RowGroupSpan[] = []
  let start = 0
  for (const g of metadata.row_groups) {
    const rows = Number(g.num_rows)
    groups.push({ start, rows })
    start += rows
  }
  const raw: FileMetaData = {
    ...metadata,
    schema: metadata.schema.map((e) =>
      isDecimal(e) ? { ...e, converted_type: undefined, logical_type: undefined } : e,
    ),
  }
  return { path, byteLength: file.byteLength, metadata, raw, columns, groups, rows: start }
}
