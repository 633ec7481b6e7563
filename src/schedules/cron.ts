// Five-field cron expressions (minute hour day-of-month month day-of-week) and their next
// occurrence in an IANA time zone. Hand-written rather than a library: the scheduler needs one
// question answered — the first occurrence after an instant — and the usual library brings a
// date library (luxon) for it; this is ~200 lines, checked by property tests against a
// minute-by-minute scan (test/schedules-cron.test.ts).
//
// Syntax: `*`, `n`, `a-b`, `*/s`, `a-b/s`, `n/s`, lists `a,b-c`; month and weekday names (JAN,
// MON, case-insensitive); weekday 0 and 7 are Sunday; @hourly @daily @midnight @weekly @monthly
// @yearly @annually. As in Vixie cron, when both day-of-month and day-of-week are restricted a
// day matching either fires. Occurrences are wall-clock times in the zone: a time the clock
// passes twice (the hour repeated when daylight saving ends) fires once, at its first pass; a
// time the clock skips (the hour lost when it begins) fires when the clock has passed it (02:30
// fires at 03:30).

export interface Cron {
  text: string
  minutes: boolean[]
  hours: boolean[]
  days: boolean[]
  months: boolean[]
  weekdays: boolean[]
  /** Whether day-of-month / day-of-week were restricted (not `*`). */
  anyDay: boolean
  anyWeekday: boolean
}

export class CronError extends Error {}

const MACROS: Record<string, string> = {
  '@hourly': '0 * * * *',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@weekly': '0 0 * * 0',
  '@monthly': '0 0 1 * *',
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC']
const WEEKDAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT']

const FIELDS = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTHS, base: 1 },
  { name: 'day of week', min: 0, max: 7, names: WEEKDAYS, base: 0 },
] as const

function field(text: string, f: (typeof FIELDS)[number]): boolean[] {
  const set = new Array<boolean>(f.max + 1).fill(false)
  const value = (s: string): number => {
    const names: readonly string[] | undefined = 'names' in f ? f.names : undefined
    const named = names?.indexOf(s.toUpperCase()) ?? -1
    // month names count from 1, weekday names from 0 (Sunday)
    if (names && named >= 0) return named + ('base' in f ? f.base : 0)
    if (!/^\d+$/.test(s)) throw new CronError(`${f.name}: "${s}" is not a number${names ? ' or a name' : ''}`)
    const n = Number(s)
    if (n < f.min || n > f.max) throw new CronError(`${f.name}: ${n} is outside ${f.min}-${f.max}`)
    return n
  }
  for (const part of text.split(',')) {
    const [range, stepText, extra] = part.split('/')
    if (extra !== undefined || range === '') throw new CronError(`${f.name}: "${part}" is not a value, range or step`)
    let step = 1
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText) || Number(stepText) === 0)
        throw new CronError(`${f.name}: the step in "${part}" must be a positive number`)
      step = Number(stepText)
    }
    let lo: number
    let hi: number
    if (range === '*') [lo, hi] = [f.min, f.max]
    else if (range.includes('-')) {
      const [a, b] = range.split('-')
      ;[lo, hi] = [value(a), value(b)]
      if (lo > hi) throw new CronError(`${f.name}: the range "${range}" runs backwards`)
    } else {
      lo = value(range)
      // `n/s` is n, n+s, … up to the end of the field
      hi = stepText === undefined ? lo : f.max
    }
    for (let v = lo; v <= hi; v += step) set[v] = true
  }
  return set
}

export function parseCron(input: string): Cron {
  const text = input.trim()
  const expanded = MACROS[text.toLowerCase()] ?? text
  const parts = expanded.split(/\s+/)
  if (parts.length !== 5)
    throw new CronError(
      `a cron expression has five fields (minute hour day-of-month month day-of-week), "${text}" has ${parts.length}`,
    )
  const [minutes, hours, days, months, weekdays] = parts.map((p, n) => field(p, FIELDS[n]))
  // Sunday is 0 and 7
  if (weekdays[7]) weekdays[0] = true
  weekdays.length = 7
  return { text, minutes, hours, days, months, weekdays, anyDay: parts[2] === '*', anyWeekday: parts[4] === '*' }
}

/** Whether a calendar day (UTC fields of a day number) is one the expression fires on. */
function dayMatches(c: Cron, year: number, month: number, day: number): boolean {
  if (!c.months[month]) return false
  const weekday = new Date(Date.UTC(year, month - 1, day)).getUTCDay()
  if (c.anyDay && c.anyWeekday) return true
  if (c.anyDay) return c.weekdays[weekday]
  if (c.anyWeekday) return c.days[day]
  return c.days[day] || c.weekdays[weekday]
}

const MINUTE = 60_000
const DAY = 86_400_000

/** Wall-clock fields of an instant in a zone, as a "naive" UTC millisecond count. */
export function wallTime(zone: string, instant: number): number {
  const parts = formatter(zone).formatToParts(new Date(instant))
  const get = (type: string) => Number(parts.find((p) => p.type === type)!.value)
  return Date.UTC(get('year'), get('month') - 1, get('day'), get('hour') % 24, get('minute'), get('second'))
}

const formatters = new Map<string, Intl.DateTimeFormat>()
function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone)
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    })
    formatters.set(zone, f)
  }
  return f
}

/** Throws a RangeError for a zone Intl does not know. */
export function checkZone(zone: string): void {
  formatter(zone)
}

/**
 * The instant a wall-clock time has in the zone: the first of two in a repeated hour, and for a
 * skipped time the instant the clock passes it (the gap's length later).
 */
export function instantOf(zone: string, wall: number): number {
  // the zone's offsets half a day either side: a transition falls between them at most once
  const before = wallTime(zone, wall - DAY / 2) - (wall - DAY / 2)
  const after = wallTime(zone, wall + DAY / 2) - (wall + DAY / 2)
  const candidates = [wall - before, wall - after].filter((t) => wallTime(zone, t) === wall).sort((a, b) => a - b)
  return candidates.length ? candidates[0] : wall - before
}

/** The first occurrence strictly after `after` (ms), or null when there is none within five years. */
export function nextOccurrence(c: Cron, zone: string, after: number): number | null {
  const startWall = wallTime(zone, after)
  // from the next whole minute of wall time
  let wall = Math.floor(startWall / MINUTE) * MINUTE + MINUTE
  const limit = wall + 5 * 366 * DAY
  while (wall < limit) {
    const d = new Date(wall)
    const [y, mo, day] = [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate()]
    if (!dayMatches(c, y, mo, day)) {
      wall = Date.UTC(y, mo - 1, day + 1)
      continue
    }
    const dayStart = Date.UTC(y, mo - 1, day)
    let found: number | null = null
    for (let m = Math.floor((wall - dayStart) / MINUTE); m < 1440; m++) {
      if (c.hours[Math.floor(m / 60)] && c.minutes[m % 60]) {
        const at = instantOf(zone, dayStart + m * MINUTE)
        // the first pass of a repeated hour may lie before `after`: look on
        if (at > after) {
          found = at
          break
        }
      }
    }
    if (found !== null) return found
    wall = dayStart + DAY
  }
  return null
}

/** Whether an instant is an occurrence (its wall-clock minute matches), for the property tests. */
export function matchesWall(c: Cron, wall: number): boolean {
  const d = new Date(wall)
  return (
    d.getUTCSeconds() === 0 &&
    dayMatches(c, d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate()) &&
    c.hours[d.getUTCHours()] &&
    c.minutes[d.getUTCMinutes()]
  )
}

export const CRON_HINT =
  'five fields: minute hour day-of-month month day-of-week, e.g. "0 6 * * *" (06:00 every day), "30 7 * * 1-5" ' +
  '(07:30 on weekdays), "0 */4 * * *" (every four hours), "0 8 1 * *" (08:00 on the 1st); or @daily, @hourly, @weekly, @monthly'
