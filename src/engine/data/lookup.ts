// Lookup tables (a recipe's "lookups"): another source, loaded whole, indexed by its key once per
// run, so that lookup('fx', 'rate', l.currency, l.booking_date) in compiled code is a hash probe
// per key column (and, with as_of, a binary search over that key's dates), never a scan.
//
// Keys compare as the engine's `=` does: each value is brought to the key column's own
// representation exactly (decimal units at the column's scale, days, milliseconds, the string
// itself), and a value that no row could equal (2.005 against a column of cents, a timestamp
// past midnight against a date column) finds nothing. NULL finds nothing; rows with a NULL key
// part (or as_of) are never found. A key (with as_of: a key and as_of) held by two rows is an
// error: a lookup that silently picked one of them would make a match depend on load order.

import { ConcordError } from '../../errors.js'
import { columnType, type ExprType, type LookupSchema } from '../../language/types.js'
import { jsonValue } from './builder.js'
import { type Column, type DateColumn, type NumericColumn, stringAt } from './column.js'
import { describeTable, type Table } from './table.js'
import { POW10 } from './values.js'

export interface LookupDef {
  source: string
  key: string[]
  as_of?: string
}

type KeyValue = string | number | boolean
/** A value in a key column's representation; null: it equals no row's key. */
type Probe = KeyValue | null

/** Per as_of key: the rows' as_of values ascending, and the rows in that order. */
interface Versions {
  at: Float64Array
  rows: Int32Array
}

/** One level per key column; the last level holds a row (or, with as_of, the key's versions). */
type Level = Map<KeyValue, Level | number | Versions>

const DAY_MS = 86_400_000

/** How many lookup indexes have been built, process-wide: a test holds the engine to one per lookup per run. */
export const lookupBuilds = { count: 0 }

export class LookupTable {
  readonly schema: LookupSchema
  private readonly root: Level = new Map()
  private readonly keyColumns: Column[]
  private readonly asOfColumn?: Column

  constructor(
    readonly name: string,
    readonly def: LookupDef,
    readonly table: Table,
  ) {
    const columns = describeTable(table)
    this.schema = { source: def.source, key: def.key, columns, ...(def.as_of ? { as_of: def.as_of } : {}) }
    this.keyColumns = def.key.map((k) => this.column(k))
    if (def.as_of) {
      const asOf = this.column(def.as_of)
      if (asOf.type !== 'date' && asOf.type !== 'timestamp')
        throw new ConcordError(
          'type_mismatch',
          `lookup "${name}": as_of column "${def.as_of}" of source "${def.source}" is ${asOf.type}, not a date or timestamp`,
          400,
        )
      this.asOfColumn = asOf
    }
    this.build()
    lookupBuilds.count++
  }

  private column(name: string): Column {
    const n = this.table.columns.findIndex((c) => c.name === name)
    if (n < 0)
      throw new ConcordError(
        'unknown_column',
        `lookup "${this.name}": source "${this.def.source}" has no column "${name}"`,
        400,
        `its columns: ${this.table.columns.map((c) => c.name).join(', ')}`,
      )
    return this.table.data[n]
  }

  private build(): void {
    const depth = this.keyColumns.length
    const asOf = this.asOfColumn
    const pending = new Map<Level, Map<KeyValue, number[]>>()
    rows: for (let row = 0; row < this.table.length; row++) {
      let level = this.root
      for (let k = 0; k < depth; k++) {
        const value = keyAt(this.keyColumns[k], row)
        if (value === null) continue rows
        if (k === depth - 1) {
          if (asOf) {
            if (asOf.valid !== null && asOf.valid[row] === 0) continue rows
            let versions = pending.get(level)
            if (!versions) pending.set(level, (versions = new Map()))
            const list = versions.get(value)
            if (list) list.push(row)
            else versions.set(value, [row])
          } else {
            const earlier = level.get(value)
            if (earlier !== undefined) throw this.notUnique(earlier as number, row)
            level.set(value, row)
          }
        } else {
          let next = level.get(value) as Level | undefined
          if (!next) level.set(value, (next = new Map()))
          level = next
        }
      }
    }
    if (!asOf) return
    const at = (asOf as DateColumn | NumericColumn).values
    for (const [level, versions] of pending) {
      for (const [value, list] of versions) {
        list.sort((a, b) => at[a] - at[b])
        for (let n = 1; n < list.length; n++)
          if (at[list[n]] === at[list[n - 1]]) throw this.notUnique(list[n - 1], list[n])
        level.set(value, { at: Float64Array.from(list, (r) => at[r]), rows: Int32Array.from(list) })
      }
    }
  }

  private notUnique(first: number, second: number): ConcordError {
    const names = [...this.def.key, ...(this.def.as_of ? [this.def.as_of] : [])]
    const columns = [...this.keyColumns, ...(this.asOfColumn ? [this.asOfColumn] : [])]
    const key = names.map((n, k) => `${n} = ${JSON.stringify(jsonValue(columns[k], first))}`).join(', ')
    return new ConcordError(
      'lookup_not_unique',
      `lookup "${this.name}": source "${this.def.source}" has more than one row with ${key} (its rows ${first + 1} and ${second + 1})`,
      400,
      this.def.as_of
        ? `a lookup needs one row per key and ${this.def.as_of}: remove the duplicates, or add a column to its key`
        : 'a lookup needs one row per key: remove the duplicates, add a column to its key, or give it an as_of date',
    )
  }

  /**
   * A function from the values of a lookup() call (in the compiled code's representation, of
   * the given types) to the row they find, or -1.
   */
  probe(types: ExprType[]): (...values: (KeyValue | null)[]) => number {
    const columns = this.schema.columns!
    const depth = this.keyColumns.length
    const convert = types.map((t, k) =>
      k < depth ? keyConverter(t, columnType(columns.find((c) => c.name === this.def.key[k])!)) : this.asOfValue(t),
    )
    const root = this.root
    const asOf = this.asOfColumn !== undefined
    const descend = (values: (KeyValue | null)[]): number => {
      let node: Level | number | Versions | undefined = root
      for (let k = 0; k < depth; k++) {
        const v = convert[k](values[k])
        if (v === null) return -1
        node = (node as Level).get(v)
        if (node === undefined) return -1
      }
      if (!asOf) return node as number
      const when = convert[depth](values[depth])
      return when === null ? -1 : latestOnOrBefore(node as Versions, when as number)
    }
    if (depth === 1 && !asOf) {
      // the common case (a fee by brand), with the last answer kept: lookup('fees', 'rate', l.brand)
      // and lookup('fees', 'fixed', l.brand) in one expression share this probe and ask it twice
      const only = convert[0]
      let lastValue: KeyValue | null | undefined
      let lastRow = -1
      return (value) => {
        if (value === lastValue) return lastRow
        const v = only(value)
        const row = v === null ? undefined : root.get(v)
        lastValue = value
        lastRow = row === undefined ? -1 : (row as number)
        return lastRow
      }
    }
    return (...values) => descend(values)
  }

  /** A function from a row (-1: none) to a column's value as compiled code reads it (decimal units, days, …). */
  reader(name: string): (row: number) => KeyValue | null {
    const col = this.column(name)
    const valid = col.valid
    if (col.type === 'string') {
      const cache = new Map<number, string>()
      return (row) => {
        if (row < 0 || (valid !== null && valid[row] === 0)) return null
        let s = cache.get(row)
        if (s === undefined) cache.set(row, (s = stringAt(col, row)))
        return s
      }
    }
    const values = col.values
    if (col.type === 'boolean') return (row) => (row < 0 || (valid !== null && valid[row] === 0) ? null : values[row] === 1)
    return (row) => (row < 0 || (valid !== null && valid[row] === 0) ? null : values[row])
  }

  /** The as_of comparison for a value of type `t`: the as_of column's representation, rounded so `<=` holds as it would. */
  private asOfValue(t: ExprType): (v: KeyValue | null) => Probe {
    if (t.kind === this.asOfColumn?.type) return (v) => v
    // a date is its midnight; a row dated d is on or before a timestamp t when d <= floor(t / day)
    if (t.kind === 'date') return (v) => (v === null ? null : (v as number) * DAY_MS)
    if (t.kind === 'timestamp') return (v) => (v === null ? null : Math.floor((v as number) / DAY_MS))
    return () => null
  }
}

/** The last row whose as_of is on or before `when`, or -1. */
function latestOnOrBefore(v: Versions, when: number): number {
  let lo = 0
  let hi = v.at.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (v.at[mid] <= when) lo = mid + 1
    else hi = mid
  }
  return lo === 0 ? -1 : v.rows[lo - 1]
}

/** A key column's value at a row in its own representation, or null. */
function keyAt(col: Column, row: number): KeyValue | null {
  if (col.valid !== null && col.valid[row] === 0) return null
  if (col.type === 'string') return stringAt(col, row)
  if (col.type === 'boolean') return col.values[row] === 1
  const v = col.values[row]
  if (Number.isNaN(v)) return null
  return v === 0 ? 0 : v // -0 and 0 are one key
}

/**
 * Brings a value of type `from` (as compiled code holds it) into the representation of a key
 * column of type `to`, exactly as `=` would compare the two; null when it can equal no value.
 */
export function keyConverter(from: ExprType, to: ExprType): (v: KeyValue | null) => Probe {
  if (from.kind === 'null') return () => null
  const exact = (v: KeyValue | null) => (v === null ? null : v === 0 ? 0 : v)
  const fromScale = from.scale ?? 0
  const toScale = to.scale ?? 0
  const decimalish = (k: string) => k === 'integer' || k === 'decimal'
  if (decimalish(from.kind) && decimalish(to.kind)) {
    if (fromScale === toScale) return exact
    if (fromScale < toScale) {
      const f = POW10[toScale - fromScale]
      return (v) => (v === null ? null : (v as number) * f)
    }
    const f = POW10[fromScale - toScale]
    return (v) => (v === null || (v as number) % f !== 0 ? null : (v as number) / f || 0)
  }
  if (to.kind === 'float' && decimalish(from.kind)) {
    const f = POW10[fromScale]
    return (v) => (v === null ? null : (v as number) / f || 0)
  }
  if (from.kind === 'float' && decimalish(to.kind)) {
    // `=` compares as floats: the column's units / 10^scale against the value
    const f = POW10[toScale]
    return (v) => {
      if (v === null) return null
      const units = Math.round((v as number) * f)
      return units / f === v ? units || 0 : null
    }
  }
  if (from.kind === 'date' && to.kind === 'timestamp') return (v) => (v === null ? null : (v as number) * DAY_MS)
  if (from.kind === 'timestamp' && to.kind === 'date')
    return (v) => (v === null || (v as number) % DAY_MS !== 0 ? null : (v as number) / DAY_MS)
  return exact
}

/** The recipe's lookup tables for one run, indexed. */
export class LookupSet {
  readonly schemas: Record<string, LookupSchema> = {}

  constructor(private readonly tables: Map<string, LookupTable>) {
    for (const [name, t] of tables) this.schemas[name] = t.schema
  }

  get(name: string): LookupTable | undefined {
    return this.tables.get(name)
  }
}

/**
 * Indexes every lookup a recipe declares, from the tables its sources loaded: once per run.
 * A missing table, a missing column or a key held by two rows is a coded error.
 */
export function buildLookups(defs: Record<string, LookupDef> | undefined, tables: Record<string, Table>): LookupSet {
  const out = new Map<string, LookupTable>()
  for (const [name, def] of Object.entries(defs ?? {})) {
    const table = tables[name]
    if (!table)
      throw new ConcordError(
        'lookup_not_loaded',
        `lookup "${name}" (source "${def.source}") was not loaded for this run`,
        400,
        'every lookup the recipe declares is loaded with its source when the recipe runs',
      )
    out.set(name, new LookupTable(name, def, table))
  }
  return new LookupSet(out)
}
