// One filter semantics for every connector (DESIGN §2). Conditions are resolved once against a
// schema: the column must exist, the operator must suit its type, and every value is converted
// to the column's type exactly. The engine evaluates resolved conditions over columns; SQL
// connectors render the same resolved conditions as a parameterized WHERE clause.
//
// Semantics (those of PostgreSQL, which the differential test pins):
// - A NULL never satisfies a condition, `neq` included.
// - Strings compare by their UTF-8 bytes (PostgreSQL's "C" collation); LIKE is case-sensitive,
//   `%` is any run, `_` one character, `\` escapes the next character.
// - integer and decimal columns compare exactly against decimal values (`gt 2.5` on an integer
//   column is `>= 3`); float columns compare as IEEE doubles.
// - Dates take "YYYY-MM-DD"; timestamps take a date (its midnight UTC) or a timestamp.
// - `between` is inclusive and not symmetric: [5, 1] matches nothing.

import { ConcordError } from '../../errors.js'
import { type Column, isNull } from '../data/column.js'
import { nearestNames } from '../../language/similarity.js'
import type { Table } from '../data/table.js'
import type { ColumnInfo, FilterCondition, FilterOp, FilterScalar } from '../data/types.js'
import { FILTER_OPS } from '../data/types.js'
import {
  formatDate,
  formatDecimal,
  formatTimestamp,
  numberText,
  parseDate,
  parseDateOrTimestamp,
} from '../data/values.js'

/** A value converted to its column's type. `text` is its canonical form, used as a SQL parameter. */
export interface TypedValue {
  /** string: UTF-8 bytes; integer/decimal: floor(value) in the column's units; float/timestamp: number; date: days; boolean: 0/1. */
  key: Uint8Array | number
  /** integer/decimal only: false when the value has more fraction digits than the column (it lies between two units). */
  exact: boolean
  text: string
}

export interface ResolvedCondition {
  column: ColumnInfo
  index: number
  op: FilterOp
  values: TypedValue[]
  /** like: the pattern compiled to an anchored regular expression. */
  pattern?: RegExp
}

const RANGE_OPS: ReadonlySet<FilterOp> = new Set(['gt', 'gte', 'lt', 'lte', 'between'])

function invalid(message: string, suggestion?: string): ConcordError {
  return new ConcordError('invalid_filter', message, 400, suggestion)
}

/** A condition that holds but likely does not say what was meant. */
export interface FilterWarning {
  column: string
  code: 'date_bounds_timestamp'
  message: string
  suggestion: string
}

const BARE_DATE = /^\d{4}-\d{2}-\d{2}$/

/** The next day of a YYYY-MM-DD date. */
function nextDay(date: string): string {
  const d = new Date(`${date}T00:00:00Z`)
  d.setUTCDate(d.getUTCDate() + 1)
  return d.toISOString().slice(0, 10)
}

/**
 * Conditions where a bare date bounds a timestamp column from above: `lte "2026-01-31"` or the
 * upper end of `between` means 2026-01-31T00:00:00Z, so the rest of that day is left out — a
 * month's filter that silently drops its last day (748 of 776 rows in one report). Said, not
 * refused: midnight may be meant.
 */
export function filterWarnings(columns: ColumnInfo[], conditions: FilterCondition[]): FilterWarning[] {
  const out: FilterWarning[] = []
  for (const cond of conditions) {
    const column = columns.find((c) => c.name === cond.column)
    if (column?.type !== 'timestamp') continue
    const upper =
      cond.op === 'lte' ? cond.value : cond.op === 'between' && Array.isArray(cond.value) ? cond.value[1] : null
    if (typeof upper !== 'string' || !BARE_DATE.test(upper)) continue
    const after = nextDay(upper)
    const from = Array.isArray(cond.value) ? String(cond.value[0]) : ''
    out.push({
      column: column.name,
      code: 'date_bounds_timestamp',
      message: `"${column.name}" is a timestamp: "${upper}" means ${upper}T00:00:00Z, so ${cond.op} leaves out the rest of ${upper}`,
      suggestion:
        cond.op === 'between'
          ? `to include all of ${upper}, use gte "${from}" and lt "${after}"`
          : `to include all of ${upper}, use lt "${after}"`,
    })
  }
  return out
}

export function resolveConditions(columns: ColumnInfo[], conditions: FilterCondition[]): ResolvedCondition[] {
  return conditions.map((c) => resolveCondition(columns, c))
}

function resolveCondition(columns: ColumnInfo[], cond: FilterCondition): ResolvedCondition {
  const index = columns.findIndex((c) => c.name === cond.column)
  if (index < 0) {
    const near = nearestNames(
      String(cond.column),
      columns.map((c) => c.name),
    )
    throw new ConcordError(
      'unknown_column',
      `unknown column "${cond.column}"`,
      400,
      near.length ? `did you mean ${near.map((n) => `"${n}"`).join(', ')}?` : undefined,
    )
  }
  const column = columns[index]
  const op = cond.op
  if (!FILTER_OPS.includes(op)) {
    throw invalid(`unknown operator "${op}"`, `use one of ${FILTER_OPS.join(', ')}`)
  }
  const where = `condition on "${column.name}" (${column.type})`
  let raw: FilterScalar[]
  if (op === 'between') {
    if (!Array.isArray(cond.value) || cond.value.length !== 2) {
      throw invalid(`${where}: between takes [from, to]`, 'give two values, e.g. ["2024-01-01", "2024-01-31"]')
    }
    raw = cond.value
  } else if (op === 'in') {
    if (!Array.isArray(cond.value) || cond.value.length === 0) {
      throw invalid(`${where}: in takes a non-empty list of values`)
    }
    raw = cond.value
  } else {
    if (Array.isArray(cond.value)) {
      throw invalid(`${where}: ${op} takes one value, not a list`, 'use "in" for a list or "between" for a range')
    }
    raw = [cond.value]
  }
  if (op === 'like') {
    if (column.type !== 'string') throw invalid(`${where}: like applies to string columns only`)
    if (typeof raw[0] !== 'string') throw invalid(`${where}: like takes a string pattern`)
    return { column, index, op, values: [stringValue(raw[0])], pattern: likePattern(raw[0], where) }
  }
  if (column.type === 'boolean' && RANGE_OPS.has(op)) {
    throw invalid(`${where}: ${op} does not apply to booleans`, 'use eq, neq or in')
  }
  return { column, index, op, values: raw.map((v) => typedValue(column, v, where)) }
}

function stringValue(s: string): TypedValue {
  return { key: new TextEncoder().encode(s), exact: true, text: s }
}

function typedValue(column: ColumnInfo, v: FilterScalar, where: string): TypedValue {
  if (v === null || v === undefined || (typeof v === 'object' && !Array.isArray(v))) {
    throw invalid(`${where}: a value must be a string, number or boolean`)
  }
  if (Array.isArray(v)) throw invalid(`${where}: nested lists are not values`)
  switch (column.type) {
    case 'string':
      return stringValue(String(v))
    case 'integer':
    case 'decimal': {
      const text = typeof v === 'number' ? numberText(v) : typeof v === 'string' ? v.trim() : null
      const bound = text === null ? null : decimalBound(text, column.scale ?? 0)
      if (bound === null) throw invalid(`${where}: ${JSON.stringify(v)} is not a number`, 'give a number such as 12.50')
      return bound
    }
    case 'float': {
      const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : Number.NaN
      if (!Number.isFinite(n)) throw invalid(`${where}: ${JSON.stringify(v)} is not a number`)
      return { key: n, exact: true, text: String(n) }
    }
    case 'date': {
      const days = typeof v === 'string' ? parseDate(v.trim()) : null
      if (days === null) throw invalid(`${where}: ${JSON.stringify(v)} is not a date`, 'write dates as YYYY-MM-DD')
      return { key: days, exact: true, text: formatDate(days) }
    }
    case 'timestamp': {
      const ms = typeof v === 'string' ? parseDateOrTimestamp(v.trim()) : null
      if (ms === null) {
        throw invalid(`${where}: ${JSON.stringify(v)} is not a timestamp`, 'write YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS[Z]')
      }
      return { key: ms, exact: true, text: formatTimestamp(ms) }
    }
    case 'boolean': {
      const b =
        typeof v === 'boolean'
          ? v
          : typeof v === 'string' && /^(true|false)$/i.test(v.trim())
            ? v.trim().toLowerCase() === 'true'
            : null
      if (b === null) throw invalid(`${where}: ${JSON.stringify(v)} is not a boolean`, 'use true or false')
      return { key: b ? 1 : 0, exact: true, text: String(b) }
    }
  }
}

const PLAIN_DECIMAL = /^([+-]?)(\d+)(?:\.(\d*))?$|^([+-]?)\.(\d+)$/

/**
 * floor(value × 10^scale) computed exactly with BigInt, and whether that floor is the value itself.
 * The canonical text keeps every digit the user gave, so SQL compares the same number.
 */
export function decimalBound(text: string, scale: number): TypedValue | null {
  const m = PLAIN_DECIMAL.exec(text)
  if (!m) return null
  const neg = (m[1] ?? m[4]) === '-'
  const intPart = (m[2] ?? '0').replace(/^0+(?=\d)/, '') || '0'
  const frac = (m[3] ?? m[5] ?? '').replace(/0+$/, '')
  const canonical = `${neg ? '-' : ''}${intPart}${frac ? `.${frac}` : ''}`
  const digits = BigInt(intPart + frac) * (neg ? -1n : 1n)
  let units: bigint
  let exact: boolean
  if (frac.length <= scale) {
    units = digits * 10n ** BigInt(scale - frac.length)
    exact = true
  } else {
    const div = 10n ** BigInt(frac.length - scale)
    units = digits / div
    exact = digits % div === 0n
    if (!exact && digits < 0n) units -= 1n // BigInt division truncates toward zero; we want the floor
  }
  return { key: Number(units), exact, text: canonical === '-0' ? '0' : canonical }
}

/** LIKE pattern → anchored RegExp; `\` escapes the next character (PostgreSQL's default escape). */
export function likePattern(pattern: string, where = 'like'): RegExp {
  let re = ''
  const chars = Array.from(pattern)
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i]
    if (ch === '\\') {
      if (i + 1 >= chars.length) throw invalid(`${where}: a LIKE pattern must not end with the escape character \\`)
      re += escapeRegExp(chars[++i])
    } else if (ch === '%') re += '.*'
    else if (ch === '_') re += '.'
    else re += escapeRegExp(ch)
  }
  return new RegExp(`^${re}$`, 'su')
}

function escapeRegExp(ch: string): string {
  return /[\\^$.*+?()[\]{}|]/.test(ch) ? `\\${ch}` : ch
}

// ---- evaluation over columns ---------------------------------------------------------------

/** Rows of `table` that satisfy every condition, in table order. */
export function selectRows(table: Table, conditions: ResolvedCondition[]): Int32Array {
  let selection: Int32Array | null = null
  for (const cond of conditions) {
    const test = rowTest(table.data[cond.index], cond)
    const input: Int32Array = selection ?? identity(table.length)
    const out: Int32Array = new Int32Array(input.length)
    let n = 0
    for (let i = 0; i < input.length; i++) {
      const row = input[i]
      if (test(row)) out[n++] = row
    }
    selection = out.subarray(0, n)
  }
  return selection ?? identity(table.length)
}

function identity(n: number): Int32Array {
  const rows = new Int32Array(n)
  for (let i = 0; i < n; i++) rows[i] = i
  return rows
}

type RowTest = (row: number) => boolean

function rowTest(col: Column, cond: ResolvedCondition): RowTest {
  const notNull = (t: RowTest): RowTest => (col.valid === null ? t : (row) => !isNull(col, row) && t(row))
  if (col.type === 'string') {
    if (cond.op === 'like') {
      const re = cond.pattern!
      const decoder = new TextDecoder()
      return notNull((row) => re.test(decoder.decode(col.data.subarray(col.offsets[row], col.offsets[row + 1]))))
    }
    const cmp = (row: number, v: TypedValue) =>
      compareBytes(col.data, col.offsets[row], col.offsets[row + 1], v.key as Uint8Array)
    return notNull(comparisonTest(cond, cmp))
  }
  if (col.type === 'integer' || col.type === 'decimal') {
    return notNull(exactNumericTest(cond, col.values))
  }
  const values = col.values
  return notNull(comparisonTest(cond, (row, v) => compareNumbers(values[row], v.key as number)))
}

function compareNumbers(a: number, b: number): number {
  return a < b ? -1 : a > b ? 1 : 0
}

export function compareBytes(data: Uint8Array, start: number, end: number, key: Uint8Array): number {
  const n = Math.min(end - start, key.length)
  for (let i = 0; i < n; i++) {
    const d = data[start + i] - key[i]
    if (d !== 0) return d
  }
  return end - start - key.length
}

function comparisonTest(cond: ResolvedCondition, cmp: (row: number, v: TypedValue) => number): RowTest {
  const [a, b] = cond.values
  switch (cond.op) {
    case 'eq':
      return (row) => cmp(row, a) === 0
    case 'neq':
      return (row) => cmp(row, a) !== 0
    case 'gt':
      return (row) => cmp(row, a) > 0
    case 'gte':
      return (row) => cmp(row, a) >= 0
    case 'lt':
      return (row) => cmp(row, a) < 0
    case 'lte':
      return (row) => cmp(row, a) <= 0
    case 'between':
      return (row) => cmp(row, a) >= 0 && cmp(row, b) <= 0
    case 'in':
      return (row) => cond.values.some((v) => cmp(row, v) === 0)
    default:
      throw new Error(`unreachable op ${cond.op}`)
  }
}

/** Exact comparison of scaled units against values that may fall between two units (see decimalBound). */
function exactNumericTest(cond: ResolvedCondition, values: Float64Array): RowTest {
  const gt = (v: TypedValue) => (row: number) => values[row] > (v.key as number)
  const gte = (v: TypedValue) => (v.exact ? (row: number) => values[row] >= (v.key as number) : gt(v))
  const lte = (v: TypedValue) => (row: number) => values[row] <= (v.key as number)
  const lt = (v: TypedValue) => (v.exact ? (row: number) => values[row] < (v.key as number) : lte(v))
  const eq = (v: TypedValue) => (v.exact ? (row: number) => values[row] === v.key : () => false)
  const [a, b] = cond.values
  switch (cond.op) {
    case 'eq':
      return eq(a)
    case 'neq': {
      const e = eq(a)
      return (row) => !e(row)
    }
    case 'gt':
      return gt(a)
    case 'gte':
      return gte(a)
    case 'lt':
      return lt(a)
    case 'lte':
      return lte(a)
    case 'between': {
      const lo = gte(a)
      const hi = lte(b)
      return (row) => lo(row) && hi(row)
    }
    case 'in': {
      const keys = new Set(cond.values.filter((v) => v.exact).map((v) => v.key as number))
      return (row) => keys.has(values[row])
    }
    default:
      throw new Error(`unreachable op ${cond.op}`)
  }
}

/** A readable rendering of conditions, for sources filtered in the engine. */
export function describeConditions(conditions: ResolvedCondition[]): string {
  if (conditions.length === 0) return 'all rows'
  return conditions
    .map((c) => {
      const v = c.values.map((x) => JSON.stringify(x.text))
      if (c.op === 'between') return `${c.column.name} between ${v[0]} and ${v[1]}`
      if (c.op === 'in') return `${c.column.name} in (${v.join(', ')})`
      return `${c.column.name} ${c.op} ${v[0]}`
    })
    .join(' and ')
}

export { formatDecimal }
