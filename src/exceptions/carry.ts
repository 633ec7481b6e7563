// Open items across runs: before a run of a recipe matches, the records its earlier runs left open
// (exceptions not yet resolved) are appended to the side they came from, read from the unmatched
// file of the run that stored them (its `l.`/`r.` columns are the record's own columns). Today's
// file usually holds only today's records, so a carried record can meet its counterpart only this
// way. A record whose key today's load already has is not appended (the fresh copy is the record).
// Types are unified the way loaders widen them (integer → decimal, scales to the finer, date →
// timestamp, anything → text when today's column is text); a column the source gained since is
// NULL in the carried records; a stored value that cannot become today's type (text into a number
// or a date column, a boolean into anything else) fails the run clearly (carry_incompatible).

import { readFile } from 'node:fs/promises'
import { tableFromIPC } from 'apache-arrow'
import { jsonValue } from '../engine/data/builder.js'
import { type Column, stringAt, type StringColumn } from '../engine/data/column.js'
import { stringColumn } from '../engine/data/arrow.js'
import { recordKeyReader } from '../engine/explain/evidence.js'
import { fromArrowTable } from '../engine/load/arrow.js'
import { type Table, takeRows } from '../engine/data/table.js'
import type { ColumnInfo } from '../engine/data/types.js'
import { POW10 } from '../engine/data/values.js'
import { ConcordError } from '../errors.js'
import type { Recipe } from '../recipes/schema.js'
import { resultFile } from '../runs/results.js'
import type { CarriedRows, CarrySource } from './batch.js'

const DAY_MS = 86_400_000

export async function carryOpenItems(
  recipe: Recipe,
  tables: { left: Table; right: Table },
  carry: { left: CarrySource[]; right: CarrySource[] },
): Promise<{ tables: { left: Table; right: Table }; carried: CarriedRows }> {
  const out = { ...tables }
  const carried: CarriedRows = { left: { from: 0, ids: [] }, right: { from: 0, ids: [] } }
  for (const side of ['left', 'right'] as const) {
    const base = tables[side]
    const keyOf = recordKeyReader(base, recipe[side].key)
    const present = new Set<string>()
    for (let row = 0; row < base.length; row++) present.add(keyOf(row))
    const parts: Table[] = []
    const ids: number[] = []
    for (const source of carry[side]) {
      const wanted = new Map<string, number>()
      source.keys.forEach((k, i) => {
        if (!present.has(k)) wanted.set(k, source.ids[i])
      })
      if (!wanted.size) continue
      const picked = await storedRecords(source.runDir, side, wanted)
      parts.push(picked.table)
      ids.push(...picked.ids)
      for (const [k] of wanted) present.add(k)
    }
    carried[side] = { from: base.length, ids }
    let table = base
    for (const part of parts) table = appendRows(table, part, side)
    out[side] = table
  }
  return { tables: out, carried }
}

/** The stored records of one side of a run whose keys are wanted, with the exception of each. */
async function storedRecords(
  runDir: string,
  side: 'left' | 'right',
  wanted: Map<string, number>,
): Promise<{ table: Table; ids: number[] }> {
  let bytes: Buffer
  try {
    bytes = await readFile(resultFile(runDir, `unmatched-${side}`))
  } catch (err) {
    throw new ConcordError(
      'carry_unavailable',
      `the records of open items stored by an earlier run are gone (${(err as Error).message})`,
      409,
      'resolve those exceptions (write-off or accept), or set carry_open_items to false',
    )
  }
  const prefix = side === 'left' ? 'l.' : 'r.'
  const stored = fromArrowTable(tableFromIPC(bytes), (name) => name === 'record_key' || name.startsWith(prefix))
  const keyCol = stored.data[stored.columns.findIndex((c) => c.name === 'record_key')] as StringColumn
  const rows: number[] = []
  const ids: number[] = []
  for (let row = 0; row < stored.length; row++) {
    const id = wanted.get(stringAt(keyCol, row))
    if (id === undefined) continue
    rows.push(row)
    ids.push(id)
  }
  const own = {
    columns: stored.columns
      .filter((c) => c.name.startsWith(prefix))
      .map((c) => ({ ...c, name: c.name.slice(prefix.length) })),
    data: stored.data.filter((_, c) => stored.columns[c].name.startsWith(prefix)),
    length: stored.length,
  }
  return { table: takeRows(own, Int32Array.from(rows)), ids }
}

function incompatible(side: string, message: string): ConcordError {
  return new ConcordError(
    'carry_incompatible',
    `the ${side} source's columns changed since open items were stored: ${message}`,
    409,
    'resolve the open items stored before the change, or run with carry_open_items false',
  )
}

/** `extra`'s rows after `base`'s, in `base`'s columns (see the header for how types meet). */
export function appendRows(base: Table, extra: Table, side: string): Table {
  const columns: ColumnInfo[] = []
  const data: Column[] = []
  base.columns.forEach((info, c) => {
    const e = extra.columns.findIndex((x) => x.name === info.name)
    // a column the source gained since: the stored records have no value for it
    const stored = e < 0 ? nulls(base.data[c], extra.length) : extra.data[e]
    const joined = concatColumns(base.data[c], stored, info.name, side)
    columns.push({
      ...info,
      type: joined.type,
      nullable: info.nullable || joined.valid !== null,
      ...(joined.type === 'decimal' ? { scale: joined.scale } : {}),
    })
    data.push(joined)
  })
  return { columns, data, length: base.length + extra.length }
}

function concatColumns(a: Column, b: Column, name: string, side: string): Column {
  const n = a.length + b.length
  const valid =
    a.valid === null && b.valid === null
      ? null
      : Uint8Array.from({ length: n }, (_, i) => (i < a.length ? (a.valid?.[i] ?? 1) : (b.valid?.[i - a.length] ?? 1)))
  if (a.type === 'string') {
    const text = (col: Column, row: number) => {
      const v = jsonValue(col, row)
      return v === null ? null : String(v)
    }
    const values = Array.from({ length: n }, (_, i) => (i < a.length ? text(a, i) : text(b, i - a.length)))
    return { ...stringColumn(values), valid }
  }
  const refuse = () => incompatible(side, `column "${name}" was ${b.type} and is ${a.type} now`)
  if (b.type === 'string' || b.type === 'boolean' || a.type === 'boolean') {
    if (a.type === 'boolean' && b.type === 'boolean')
      return { type: 'boolean', length: n, valid, values: concat(Uint8Array, a.values, b.values) }
    throw refuse()
  }
  if (a.type === 'date' || a.type === 'timestamp' || b.type === 'date' || b.type === 'timestamp') {
    const temporal = (c: Column) => c.type === 'date' || c.type === 'timestamp'
    if (!temporal(a) || !temporal(b)) throw refuse()
    if (a.type === 'date' && b.type === 'date')
      return {
        type: 'date',
        length: n,
        valid,
        values: concat(Int32Array, a.values as Int32Array, b.values as Int32Array),
      }
    const ms = (c: Column) => Float64Array.from(numbers(c), (v) => (c.type === 'date' ? v * DAY_MS : v))
    return { type: 'timestamp', length: n, valid, values: concat(Float64Array, ms(a), ms(b)) }
  }
  // numbers: integer, decimal, float
  const scaleOf = (c: Column) => (c.type === 'decimal' ? c.scale : 0)
  if (a.type === 'float' || b.type === 'float') {
    const float = (c: Column) => Float64Array.from(numbers(c), (v) => v / POW10[scaleOf(c)])
    return { type: 'float', length: n, valid, values: concat(Float64Array, float(a), float(b)) }
  }
  if (a.type === 'integer' && b.type === 'integer')
    return { type: 'integer', length: n, valid, values: concat(Float64Array, a.values, b.values) }
  const scale = Math.max(scaleOf(a), scaleOf(b))
  const units = (c: Column) => Float64Array.from(numbers(c), (v) => v * POW10[scale - scaleOf(c)])
  return { type: 'decimal', length: n, valid, values: concat(Float64Array, units(a), units(b)), scale }
}

/** A column of `n` NULLs of `like`'s type. */
function nulls(like: Column, n: number): Column {
  const valid = new Uint8Array(n)
  if (like.type === 'string')
    return { type: 'string', length: n, valid, offsets: new Int32Array(n + 1), data: new Uint8Array(0) }
  if (like.type === 'date') return { type: 'date', length: n, valid, values: new Int32Array(n) }
  if (like.type === 'boolean') return { type: 'boolean', length: n, valid, values: new Uint8Array(n) }
  if (like.type === 'decimal')
    return { type: 'decimal', length: n, valid, values: new Float64Array(n), scale: like.scale }
  return { type: like.type, length: n, valid, values: new Float64Array(n) }
}

/** The values of a column that is not text. */
const numbers = (c: Column): ArrayLike<number> => (c as Exclude<Column, StringColumn>).values

function concat<T extends Float64Array | Int32Array | Uint8Array>(Kind: { new (n: number): T }, a: T, b: T): T {
  const out = new Kind(a.length + b.length)
  out.set(a)
  out.set(b, a.length)
  return out
}
