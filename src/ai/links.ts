// Links: which column of source a is compared with which column of source b, and how sample
// values are read for the comparison. Values are read the way the engine reads them (values.ts):
// decimals as exact scaled units, dates and timestamps as UTC days, text compared exactly or after
// TRIM/UPPER, so what the tools observe on samples is what a recipe will see when it runs.

import { parseDateOrTimestamp, parseDecimal } from '../engine/data/values.js'
import type { ColumnT, MappingT, RowT } from './schemas.js'

/** How a linked pair of columns is compared. */
export type LinkRole = 'amount' | 'date' | 'text'

export interface Link {
  a: ColumnT
  b: ColumnT
  role: LinkRole
}

/** Internal scale of exact amounts: every decimal the engine keeps exactly fits in it. */
export const AMOUNT_SCALE = 9
const DAY_MS = 86_400_000

export function roleOf(col: ColumnT): LinkRole | undefined {
  if (col.type === 'decimal' || col.type === 'integer' || col.type === 'float') return 'amount'
  if (col.type === 'date' || col.type === 'timestamp') return 'date'
  if (col.type === 'string') return 'text'
  return undefined
}

/** An amount as exact units at AMOUNT_SCALE, or null. */
export function amountOf(value: RowT[string] | undefined): bigint | null {
  if (value === null || value === undefined || typeof value === 'boolean') return null
  const d = parseDecimal(String(value).trim())
  if (!d) {
    const n = Number(value)
    return Number.isFinite(n) && String(value).trim() !== '' ? BigInt(Math.round(n * 1e9)) : null
  }
  return BigInt(d.units) * 10n ** BigInt(AMOUNT_SCALE - d.scale)
}

/** Digits after the point of a sample amount ("3637.7" → 1). */
export function amountScale(value: RowT[string] | undefined): number {
  const m = /\.(\d+)$/.exec(String(value ?? '').trim())
  return m ? m[1].length : 0
}

/** A date or timestamp as its UTC day number, or null. */
export function dayOf(value: RowT[string] | undefined): number | null {
  if (typeof value !== 'string') return null
  const ms = parseDateOrTimestamp(value.trim())
  return ms === null ? null : Math.floor(ms / DAY_MS)
}

export function textOf(value: RowT[string] | undefined): string | null {
  if (value === null || value === undefined) return null
  const s = String(value)
  return s === '' ? null : s
}

/** TRIM then UPPER, as a recipe writes it. */
export const normalized = (s: string) => s.trim().toUpperCase()

/** Text values compare: exactly, only after TRIM/UPPER, or not at all. */
export function textAgreement(x: string | null, y: string | null): 'exact' | 'normalized' | 'differ' | 'missing' {
  if (x === null || y === null) return 'missing'
  if (x === y) return 'exact'
  return normalized(x) === normalized(y) ? 'normalized' : 'differ'
}

/** One token with a digit in it: an order number, an invoice id, an authorization code. */
export const isCodeLike = (s: string) => !/\s/.test(s.trim()) && /\d/.test(s)
export const isOneToken = (s: string) => s.trim() !== '' && !/\s/.test(s.trim())

/** The distinct comparison keys of a column in a sample. */
function valueKeys(rows: RowT[], col: ColumnT): Set<string> {
  const role = roleOf(col)
  const out = new Set<string>()
  for (const row of rows) {
    const v = row[col.name]
    const key =
      role === 'amount'
        ? amountOf(v)?.toString()
        : role === 'date'
          ? dayOf(v)?.toString()
          : (() => {
              const t = textOf(v)
              return t === null ? undefined : normalized(t)
            })()
    if (key !== undefined) out.add(key)
  }
  return out
}

export interface LinkSamples {
  schemaA: ColumnT[]
  schemaB: ColumnT[]
  rowsA: RowT[]
  rowsB: RowT[]
}

/**
 * The columns to compare. Mappings when given; otherwise equal names first, then columns of the
 * same role that share values (invoice_id vs reference_number, amount vs paid_amount), then the
 * remaining date columns in the order written. Each column is in at most one link.
 */
export function chooseLinks(s: LinkSamples, mappings?: MappingT[]): Link[] {
  const byName = (schema: ColumnT[], name: string) => schema.find((c) => c.name === name)
  const links: Link[] = []
  const usedA = new Set<string>()
  const usedB = new Set<string>()
  const add = (a: ColumnT, b: ColumnT) => {
    const ra = roleOf(a)
    const rb = roleOf(b)
    if (usedA.has(a.name) || usedB.has(b.name) || !ra || !rb) return
    // a text column mapped onto a number or a date is compared as text
    links.push({ a, b, role: ra === rb ? ra : 'text' })
    usedA.add(a.name)
    usedB.add(b.name)
  }
  if (mappings?.length) {
    for (const m of mappings) {
      const a = byName(s.schemaA, m.field_a)
      const b = byName(s.schemaB, m.field_b)
      if (a && b) add(a, b)
    }
    return links
  }
  for (const a of s.schemaA) {
    const b = s.schemaB.find((c) => c.name.toLowerCase() === a.name.toLowerCase())
    if (b && roleOf(a) === roleOf(b)) add(a, b)
  }
  const overlaps: { a: ColumnT; b: ColumnT; shared: number }[] = []
  for (const a of s.schemaA) {
    if (usedA.has(a.name) || roleOf(a) === 'date') continue
    const ka = valueKeys(s.rowsA, a)
    for (const b of s.schemaB) {
      if (usedB.has(b.name) || roleOf(a) !== roleOf(b)) continue
      const kb = valueKeys(s.rowsB, b)
      let shared = 0
      for (const k of ka) if (kb.has(k)) shared++
      if (shared > 0) overlaps.push({ a, b, shared })
    }
  }
  overlaps.sort((x, y) => y.shared - x.shared)
  for (const o of overlaps) add(o.a, o.b)
  const datesB = s.schemaB.filter((c) => roleOf(c) === 'date' && !usedB.has(c.name))
  for (const a of s.schemaA.filter((c) => roleOf(c) === 'date' && !usedA.has(c.name))) {
    const b = datesB.find((c) => !usedB.has(c.name))
    if (b) add(a, b)
  }
  return links
}

/** "order_id" for a link between equal names, "invoice_id/reference_number" otherwise. */
export const linkName = (l: Link) => (l.a.name === l.b.name ? l.a.name : `${l.a.name}/${l.b.name}`)
