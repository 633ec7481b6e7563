// Row groups skipped by their statistics: a group is read only when some value between its column
// chunk's min and max could satisfy every condition. Pruning only ever skips groups that cannot
// hold a selected row; the rows of the groups read are then filtered in the engine with the one
// filter semantics (load/filter.ts), so a source reads the same rows with or without statistics.
//
// Which statistics are trusted:
// - min_value/max_value (the current fields; a writer that truncates long strings keeps them
//   bounds). The deprecated min/max only for signed numbers: old writers compared bytes and
//   unsigned integers as signed, so for those they are no bounds at all.
// - Strings, integers, dates and timestamps compare exactly (the footer is parsed into the engine's
//   units, file.ts). Decimal statistics come as float64 from hyparquet: they are scaled back and
//   widened by one unit, and not used beyond 2^50 units. Floats and booleans are not pruned by
//   value (NaN sorts above every number in the filter's semantics and is absent from statistics).
// - A group whose column is all NULL is skipped by any condition on that column (a NULL never
//   satisfies a condition).

import type { Statistics } from 'hyparquet'
import { compareBytes, type ResolvedCondition, type TypedValue } from '../filter.js'
import { bytesToUnits } from './read.js'
import type { ParquetColumn, ParquetFile } from './file.js'

type Bound = number | Uint8Array

interface Range {
  min: Bound | undefined
  max: Bound | undefined
}

const SAFE_DECIMAL = 2 ** 50

function signedNumeric(column: ParquetColumn): boolean {
  return !column.unsigned && (column.physical === 'INT32' || column.physical === 'INT64')
}

/** A statistic in the engine's units for `column`, or undefined when it cannot serve as a bound. */
function engineBound(column: ParquetColumn, v: unknown, widen: -1 | 1): Bound | undefined {
  switch (column.kind) {
    case 'string':
      return v instanceof Uint8Array ? v : undefined
    case 'integer':
      if (typeof v === 'bigint') return v > -(2n ** 53n) && v < 2n ** 53n ? Number(v) : undefined
      return typeof v === 'number' && Number.isSafeInteger(v) ? v : undefined
    case 'date':
    case 'timestamp':
      return typeof v === 'number' && Number.isFinite(v) ? v : undefined
    case 'decimal': {
      const scale = column.info.scale ?? 0
      const units =
        v instanceof Uint8Array ? bytesToUnits(v) : typeof v === 'number' ? Math.round(v * 10 ** scale) + widen : null
      return units !== null && Number.isFinite(units) && Math.abs(units) < SAFE_DECIMAL ? units : undefined
    }
    default:
      return undefined
  }
}

function rangeOf(column: ParquetColumn, stats: Statistics): Range {
  const deprecatedOk = signedNumeric(column)
  return {
    min: engineBound(column, stats.min_value ?? (deprecatedOk ? stats.min : undefined), -1),
    max: engineBound(column, stats.max_value ?? (deprecatedOk ? stats.max : undefined), 1),
  }
}

function compare(a: Bound, b: Bound): number {
  if (typeof a === 'number') return a < (b as number) ? -1 : a > (b as number) ? 1 : 0
  return compareBytes(a, 0, a.length, b as Uint8Array)
}

function key(v: TypedValue): Bound {
  return v.key
}

/** Could a value within `range` be at least (above, when strict) `lo`? */
function reachesUp(range: Range, lo: Bound, strict: boolean): boolean {
  if (range.max === undefined) return true
  const c = compare(range.max, lo)
  return c > 0 || (c === 0 && !strict)
}

/** Could a value within `range` be at most (below, when strict) `hi`? */
function reachesDown(range: Range, hi: Bound, strict: boolean): boolean {
  if (range.min === undefined) return true
  const c = compare(range.min, hi)
  return c < 0 || (c === 0 && !strict)
}

function within(range: Range, v: TypedValue): boolean {
  return v.exact && reachesUp(range, key(v), false) && reachesDown(range, key(v), false)
}

// Integer and decimal values may lie between two units (decimalBound): `gte 2.5` on an integer is
// `> 2`, `lt 2.5` is `<= 2`. Every other value is exact.
const gte = (r: Range, v: TypedValue) => reachesUp(r, key(v), !v.exact)
const gt = (r: Range, v: TypedValue) => reachesUp(r, key(v), true)
const lte = (r: Range, v: TypedValue) => reachesDown(r, key(v), false)
const lt = (r: Range, v: TypedValue) => reachesDown(r, key(v), v.exact)

/** The literal bytes a LIKE pattern's matches all start with ("" when it starts with a wildcard). */
export function likePrefix(pattern: string): string {
  let out = ''
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]
    if (ch === '%' || ch === '_') break
    if (ch === '\\') {
      if (i + 1 < pattern.length) out += pattern[++i]
      continue
    }
    out += ch
  }
  return out
}

function startsWith(bytes: Uint8Array, prefix: Uint8Array): boolean {
  if (bytes.length < prefix.length) return false
  for (let i = 0; i < prefix.length; i++) if (bytes[i] !== prefix[i]) return false
  return true
}

function couldMatch(range: Range, cond: ResolvedCondition): boolean {
  const [a, b] = cond.values
  switch (cond.op) {
    case 'eq':
      return within(range, a)
    case 'in':
      return cond.values.some((v) => within(range, v))
    case 'neq':
      return !(
        a.exact &&
        range.min !== undefined &&
        range.max !== undefined &&
        compare(range.min, key(a)) === 0 &&
        compare(range.max, key(a)) === 0
      )
    case 'gt':
      return gt(range, a)
    case 'gte':
      return gte(range, a)
    case 'lt':
      return lt(range, a)
    case 'lte':
      return lte(range, a)
    case 'between':
      return gte(range, a) && lte(range, b)
    case 'like': {
      const prefix = new TextEncoder().encode(likePrefix(String(a.text)))
      if (prefix.length === 0) return true
      if (range.max !== undefined && compare(range.max, prefix) < 0) return false
      const min = range.min as Uint8Array | undefined
      return !(min !== undefined && compare(min, prefix) > 0 && !startsWith(min, prefix))
    }
  }
}

export interface Pruning {
  /** Row groups to read, ascending. */
  groups: number[]
  /** Rows in the groups to read. */
  rows: number
}

/** The row groups of `file` that may hold rows satisfying every condition. */
export function pruneRowGroups(file: ParquetFile, conditions: ResolvedCondition[]): Pruning {
  const groups: number[] = []
  let rows = 0
  file.metadata.row_groups.forEach((group, g) => {
    const keep = conditions.every((cond) => {
      const column = file.columns[cond.index]
      if (column.leaf === null) return true
      const chunk = group.columns[column.leaf]
      const stats = chunk?.meta_data?.statistics
      if (!stats) return true
      if (stats.null_count !== undefined && Number(stats.null_count) === file.groups[g].rows) return false
      return couldMatch(rangeOf(column, stats), cond)
    })
    if (keep) {
      groups.push(g)
      rows += file.groups[g].rows
    }
  })
  return { groups, rows }
}
