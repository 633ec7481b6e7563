// Calendar periods in words ("January 2026", "last month", "last 7 days") and the filters that
// scope a source to one. A date column takes the inclusive `between`; a timestamp column takes
// `gte` the first day and `lt` the day after the last, so the whole last day is in.

import type { ColumnInfo } from '../engine/data/types.js'
import type { FilterT } from './schemas.js'

/** Inclusive, as YYYY-MM-DD. */
export interface Period {
  first: string
  last: string
}

export const MONTHS = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
]

/** "jan", "sept", "january" → 0..11. */
export function monthIndex(word: string): number | undefined {
  const w = word.toLowerCase().replace(/\.$/, '')
  if (w.length < 3) return undefined
  const i = MONTHS.findIndex((m) => m.startsWith(w))
  return i < 0 ? undefined : i
}

const pad = (n: number) => String(n).padStart(2, '0')
const iso = (d: Date) => `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`

export function parseDay(text: string): Date | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return undefined
  const d = new Date(`${text}T00:00:00Z`)
  return Number.isNaN(d.getTime()) || iso(d) !== text ? undefined : d
}

export function addDays(day: string, n: number): string {
  const d = parseDay(day)
  if (!d) throw new Error(`not a day: ${day}`)
  d.setUTCDate(d.getUTCDate() + n)
  return iso(d)
}

export function monthPeriod(year: number, month: number): Period {
  const first = new Date(Date.UTC(year, month, 1))
  const last = new Date(Date.UTC(year, month + 1, 0))
  return { first: iso(first), last: iso(last) }
}

export const todayIso = () => iso(new Date())

/** "YYYY-MM" of a day or timestamp text, if it starts with a date. */
export function monthOf(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined
  const m = /^(\d{4}-\d{2})-\d{2}/.exec(value)
  return m ? m[1] : undefined
}

/** Consecutive whole months "2026-01".."2026-02" as one period. */
export function monthsPeriod(months: string[]): Period {
  const sorted = [...months].sort()
  const [fy, fm] = sorted[0].split('-').map(Number)
  const [ly, lm] = sorted[sorted.length - 1].split('-').map(Number)
  return { first: monthPeriod(fy, fm - 1).first, last: monthPeriod(ly, lm - 1).last }
}

export function describePeriod(p: Period): string {
  return p.first === p.last ? p.first : `${p.first}..${p.last}`
}

/** The filters that keep one period of a source, on its date or timestamp column. */
export function periodFilters(source: 'a' | 'b', column: ColumnInfo | { name: string; type: string }, p: Period) {
  const filters: FilterT[] =
    column.type === 'timestamp'
      ? [
          { source, column: column.name, op: 'gte', value: p.first },
          { source, column: column.name, op: 'lt', value: addDays(p.last, 1) },
        ]
      : [{ source, column: column.name, op: 'between', value: [p.first, p.last] }]
  return filters
}
