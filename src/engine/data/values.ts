// Text <-> typed value conversions shared by every loader, so "2024-01-05" or "214.16" means
// the same thing whether it came from a CSV field, a JSON string or a filter condition.

/** Decimals beyond this many significant digits are not exact in a float64 of units: keep them as text. */
export const MAX_DECIMAL_DIGITS = 15
/** More fraction digits than this is measurement data, not money: treat as float. */
export const MAX_DECIMAL_SCALE = 9

const DAY_MS = 86_400_000
export const POW10 = [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15]

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/
const TIMESTAMP_RE =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i

/** Days since 1970-01-01 for a valid calendar date "YYYY-MM-DD", else null. */
export function parseDate(s: string): number | null {
  const m = DATE_RE.exec(s)
  if (!m) return null
  return civilDays(+m[1], +m[2], +m[3])
}

function civilDays(y: number, mo: number, d: number): number | null {
  if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo)) return null
  const ms = Date.UTC(y, mo - 1, d)
  // Date.UTC maps years 0-99 to 1900-1999; fix those up.
  const fixed = y < 100 ? new Date(ms).setUTCFullYear(y) : ms
  return Math.round(fixed / DAY_MS)
}

function daysInMonth(y: number, m: number): number {
  if (m === 2) return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28
  return m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31
}

/**
 * Milliseconds since the epoch (UTC) for "YYYY-MM-DD[T ]HH:MM[:SS[.fff]][Z|±HH[:MM]]", else null.
 * A timestamp without a zone is read as UTC. Precision is the millisecond.
 */
export function parseTimestamp(s: string): number | null {
  const m = TIMESTAMP_RE.exec(s)
  if (!m) return null
  const days = civilDays(+m[1], +m[2], +m[3])
  const h = +m[4]
  const mi = +m[5]
  const sec = m[6] === undefined ? 0 : +m[6]
  if (days === null || h > 23 || mi > 59 || sec > 59) return null
  const ms = m[7] === undefined ? 0 : Math.floor(+`${m[7]}000`.slice(0, 3))
  let offsetMin = 0
  const z = m[8]
  if (z && z.toUpperCase() !== 'Z') {
    const digits = z.slice(1).replace(':', '')
    const oh = +digits.slice(0, 2)
    const om = digits.length > 2 ? +digits.slice(2) : 0
    if (oh > 23 || om > 59) return null
    offsetMin = (z[0] === '-' ? -1 : 1) * (oh * 60 + om)
  }
  return days * DAY_MS + ((h * 60 + mi) * 60 + sec) * 1000 + ms - offsetMin * 60_000
}

/** A date or timestamp text as milliseconds (a date is its midnight UTC), else null. */
export function parseDateOrTimestamp(s: string): number | null {
  const d = parseDate(s)
  return d !== null ? d * DAY_MS : parseTimestamp(s)
}

/**
 * A day number's calendar date as y * 10000 + m * 100 + d, in integers (Hinnant's
 * civil_from_days, proleptic Gregorian): lists and exports write every date through it, where a
 * Date and its ISO string cost several times as much. -1 outside the years 0-9999, and for a
 * fraction or NaN.
 */
export function civilDate(days: number): number {
  if (!Number.isInteger(days)) return -1
  const z = days + 719468
  const era = Math.floor(z / 146097)
  const doe = z - era * 146097
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365)
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100))
  const mp = Math.floor((5 * doy + 2) / 153)
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1
  const m = mp < 10 ? mp + 3 : mp - 9
  const y = yoe + era * 400 + (m <= 2 ? 1 : 0)
  return y < 0 || y > 9999 ? -1 : y * 10000 + m * 100 + d
}

/** YYYY-MM-DD; other years, fractions and NaN as Date writes them (and its RangeError). */
export function formatDate(days: number): string {
  const ymd = civilDate(days)
  if (ymd < 0) return new Date(days * DAY_MS).toISOString().slice(0, 10)
  const y = Math.floor(ymd / 10000)
  const md = ymd % 10000
  const m = Math.floor(md / 100)
  const d = md % 100
  return `${y < 1000 ? String(y).padStart(4, '0') : y}-${m < 10 ? '0' : ''}${m}-${d < 10 ? '0' : ''}${d}`
}

export function formatTimestamp(ms: number): string {
  return new Date(ms).toISOString()
}

export interface DecimalText {
  /** Scaled units at `scale` (exact: at most MAX_DECIMAL_DIGITS significant digits). */
  units: number
  scale: number
  /** Digits before the point, without leading zeros. */
  intDigits: number
}

const DECIMAL_RE = /^([+-]?)(\d+)(?:\.(\d+))?$/

/**
 * Parses plain decimal text ("-12.50", "7") exactly into scaled units, or null when it is not
 * plain decimal notation or has too many digits to stay exact.
 */
export function parseDecimal(s: string): DecimalText | null {
  const m = DECIMAL_RE.exec(s)
  if (!m) return null
  const intPart = m[2].replace(/^0+(?=\d)/, '')
  const frac = m[3] ?? ''
  const intDigits = intPart === '0' ? 0 : intPart.length
  if (intDigits + frac.length > MAX_DECIMAL_DIGITS) return null
  const units = Number(intPart + frac)
  return { units: m[1] === '-' && units !== 0 ? -units : units, scale: frac.length, intDigits }
}

/** Units at `scale` for a decimal known to have at most `scale` fraction digits. */
export function rescaleUnits(d: DecimalText, scale: number): number {
  return d.scale === scale ? d.units : d.units * POW10[scale - d.scale]
}

export function formatDecimal(units: number, scale: number): string {
  const neg = units < 0
  const digits = String(Math.abs(units))
  if (scale === 0) return neg ? `-${digits}` : digits
  const padded = digits.padStart(scale + 1, '0')
  const s = `${padded.slice(0, -scale)}.${padded.slice(-scale)}`
  return neg ? `-${s}` : s
}

/** The decimal notation of a JS number as written (shortest round-trip form), or null if it has an exponent. */
export function numberText(n: number): string | null {
  const s = String(n)
  return /e/i.test(s) || !Number.isFinite(n) ? null : s
}
