// Values read straight from CSV bytes, without a string in between: dates, booleans, and where
// a plain field ends. Each runs once per value, so no closures, arrays or allocations here.

const QUOTE = 0x22
const LF = 0x0a
const CR = 0x0d

/** The ASCII bytes String.prototype.trim removes (non-ASCII edges take the slow path). */
export const SPACE = new Uint8Array(256)
for (const b of [0x20, 0x09, 0x0a, 0x0b, 0x0c, 0x0d]) SPACE[b] = 1

/** The index of the delimiter or LF after a plain field that stopped at buf[q] (a CR before an LF is skipped), or -1. */
export function terminator(buf: Buffer, q: number, end: number, stops: Uint8Array): number {
  if (q >= end) return -1
  const t = buf[q]
  if (stops[t] === 0 || t === QUOTE) return -1
  if (t === CR) return q + 1 < end && buf[q + 1] === LF ? q + 1 : -1
  return q
}

/** What dateAt returns for bytes that are not a calendar date (no date is this far from 1970). */
export const NOT_A_DATE = -0x80000000

/** Days since 1970-01-01 of the YYYY-MM-DD at buf[s, s + 10), or NOT_A_DATE. */
export function dateAt(buf: Buffer, s: number): number {
  if (buf[s + 4] !== 0x2d || buf[s + 7] !== 0x2d) return NOT_A_DATE
  const y0 = buf[s] - 0x30
  const y1 = buf[s + 1] - 0x30
  const y2 = buf[s + 2] - 0x30
  const y3 = buf[s + 3] - 0x30
  const m0 = buf[s + 5] - 0x30
  const m1 = buf[s + 6] - 0x30
  const d0 = buf[s + 8] - 0x30
  const d1 = buf[s + 9] - 0x30
  if (
    (y0 | y1 | y2 | y3 | m0 | m1 | d0 | d1) < 0 ||
    y0 > 9 ||
    y1 > 9 ||
    y2 > 9 ||
    y3 > 9 ||
    m0 > 9 ||
    m1 > 9 ||
    d0 > 9 ||
    d1 > 9
  )
    return NOT_A_DATE
  const y = y0 * 1000 + y1 * 100 + y2 * 10 + y3
  const m = m0 * 10 + m1
  const d = d0 * 10 + d1
  if (y < 1 || m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m)) return NOT_A_DATE
  const month = y * 12 + m - 1 - FIRST_CACHED_MONTH
  return month >= 0 && month < MONTH_STARTS.length ? MONTH_STARTS[month] + d - 1 : civilToDays(y, m, d)
}

/** 1 for true, 0 for false (any case) at buf[s, e), else -1. */
export function booleanAt(buf: Buffer, s: number, e: number): number {
  const n = e - s
  const c0 = buf[s] | 0x20
  if (
    n === 4 &&
    c0 === 0x74 &&
    (buf[s + 1] | 0x20) === 0x72 &&
    (buf[s + 2] | 0x20) === 0x75 &&
    (buf[s + 3] | 0x20) === 0x65
  )
    return 1
  if (
    n === 5 &&
    c0 === 0x66 &&
    (buf[s + 1] | 0x20) === 0x61 &&
    (buf[s + 2] | 0x20) === 0x6c &&
    (buf[s + 3] | 0x20) === 0x73 &&
    (buf[s + 4] | 0x20) === 0x65
  )
    return 0
  return -1
}

function daysInMonth(y: number, m: number): number {
  if (m === 2) return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28
  return m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31
}

/** Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
export function civilToDays(y: number, m: number, d: number): number {
  y -= m <= 2 ? 1 : 0
  const era = Math.floor(y / 400)
  const yoe = y - era * 400
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
}

// Days of the first of each month from 1900 to 2199: a date is then one lookup and an add.
const FIRST_CACHED_MONTH = 1900 * 12
const MONTH_STARTS = new Int32Array(300 * 12)
for (let i = 0; i < MONTH_STARTS.length; i++) {
  const month = FIRST_CACHED_MONTH + i
  MONTH_STARTS[i] = civilToDays(Math.floor(month / 12), (month % 12) + 1, 1)
}
