// Sample rows (as previews return them: decimals as strings) as engine tables typed by the
// declared schemas, so a pass's predicate compiles over them exactly as it does over the loaded
// sources and a check made on the samples is the engine's own answer, not a re-implementation.

import { columnBuilder } from '../engine/data/builder.js'
import type { Table } from '../engine/data/table.js'
import type { ColumnInfo } from '../engine/data/types.js'
import type { ColumnT, RowT } from './schemas.js'

export interface UnreadableValue {
  side: 'left' | 'right'
  row: number
  column: string
  value: RowT[string]
  type: string
}

export interface SampleTable {
  table: Table
  /** Values that do not fit their column's type: read as NULL, and reported. */
  unreadable: UnreadableValue[]
}

/** Whether a column of this type can hold the value (a scratch builder tries it; text holds anything). */
function fits(info: ColumnInfo, value: unknown): boolean {
  if (info.type === 'string') return true
  try {
    columnBuilder(info, 1).append(value)
    return true
  } catch {
    return false
  }
}

/**
 * One side's rows as a table with the schema's columns, in its order. A column absent from a row
 * is NULL there. Decimal scales follow the values (the declared scale may be finer than a
 * preview's text, and a builder with a fixed scale refuses more digits).
 */
export function sampleTable(schema: ColumnT[], rows: RowT[], side: 'left' | 'right'): SampleTable {
  const unreadable: UnreadableValue[] = []
  const data = schema.map((c) => {
    const info: ColumnInfo = { name: c.name, type: c.type, nullable: true }
    const builder = columnBuilder(info, Math.max(16, rows.length))
    rows.forEach((row, k) => {
      const value = row[c.name]
      if (value === undefined || value === null || fits(info, value)) builder.append(value)
      else {
        unreadable.push({ side, row: k, column: c.name, value, type: c.type })
        builder.append(null)
      }
    })
    return builder.finish()
  })
  const columns = schema.map((c, k): ColumnInfo => {
    const col = data[k]
    return { name: c.name, type: c.type, nullable: true, ...(col.type === 'decimal' ? { scale: col.scale } : {}) }
  })
  return { table: { columns, data, length: rows.length }, unreadable }
}

/** Columns of the schema that no sample row has at all: a check reading them would judge NULLs. */
export function absentColumns(schema: ColumnT[], rows: RowT[]): Set<string> {
  const absent = new Set<string>()
  if (rows.length === 0) return absent
  for (const c of schema) if (rows.every((r) => !(c.name in r))) absent.add(c.name)
  return absent
}
