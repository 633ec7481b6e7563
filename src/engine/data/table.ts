// A table is named columns of equal length. Scoped tables, run inputs and results are all tables.

import { jsonValue } from './builder.js'
import { type Column, takeColumn } from './column.js'
import type { ColumnInfo } from './types.js'

export interface Table {
  readonly columns: ColumnInfo[]
  readonly data: Column[]
  readonly length: number
}

export function takeRows(table: Table, rows: Int32Array): Table {
  return { columns: table.columns, data: table.data.map((c) => takeColumn(c, rows)), length: rows.length }
}

export function sliceRows(table: Table, limit: number): Table {
  if (limit >= table.length) return table
  const rows = new Int32Array(limit)
  for (let i = 0; i < limit; i++) rows[i] = i
  return takeRows(table, rows)
}

export type JsonRow = Record<string, string | number | boolean | null>

export function rowsAsJson(table: Table, limit = table.length): JsonRow[] {
  const n = Math.min(limit, table.length)
  const out: JsonRow[] = new Array(n)
  for (let i = 0; i < n; i++) {
    const row: JsonRow = {}
    for (let c = 0; c < table.columns.length; c++) row[table.columns[c].name] = jsonValue(table.data[c], i)
    out[i] = row
  }
  return out
}

/** Column descriptions as loaded: the declared scale of a decimal is the one its units use. */
export function describeTable(table: Table): ColumnInfo[] {
  return table.columns.map((info, i) => {
    const col = table.data[i]
    const out: ColumnInfo = { ...info, nullable: info.nullable || col.valid !== null }
    if (col.type === 'decimal') out.scale = col.scale
    return out
  })
}
