// The scheduler's cron: parsing with clear errors, the next occurrence checked against a
// minute-by-minute scan on random expressions, zones and instants (fast-check), daylight-saving
// days (a repeated hour fires once, a skipped time fires when the clock has passed it), and the
// rolling tokens a schedule binds parameters to.

import fc from 'fast-check'
import t from 'tap'
import { CronError, instantOf, matchesWall, nextOccurrence, parseCron, wallTime } from '../src/schedules/cron.js'
import { rollingDay } from '../src/schedules/rolling.js'

const MINUTE = 60_000
const ZONES = ['UTC', 'America/New_York', 'Europe/Lisbon', 'Australia/Lord_Howe', 'Asia/Kolkata', 'America/Sao_Paulo']

/** The reference: wall-clock minute after minute from `after`, the first match at its instant. */
function scan(expr: string, zone: string, after: number, horizonDays: number): number | null {
  const c = parseCron(expr)
  let wall = Math.floor(wallTime(zone, after) / MINUTE) * MINUTE + MINUTE
  for (let n = 0; n < horizonDays * 1440; n++, wall += MINUTE) {
    if (!matchesWall(c, wall)) continue
    const at = instantOf(zone, wall)
    if (at > after) return at
  }
  return null
}

const part = (min: number, max: number) =>
  fc.oneof(
    fc.constant('*'),
    fc.integer({ min, max }).map(String),
    fc.tuple(fc.integer({ min, max }), fc.integer({ min, max })).map(([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`),
    fc.integer({ min: 1, max: Math.max(1, max - min) }).map((s) => `*/${s}`),
    fc.uniqueArray(fc.integer({ min, max }), { minLength: 2, maxLength: 4 }).map((xs) => xs.join(',')),
  )
// every month, so a match is never more than two months away
const expression = fc
  .tuple(part(0, 59), part(0, 23), part(1, 31), part(0, 7))
  .map(([m, h, dom, dow]) => `${m} ${h} ${dom} * ${dow}`)

t.test('the next occurrence is the first one a minute-by-minute scan finds', async (t) => {
  fc.assert(
    fc.property(
      expression,
      fc.constantFrom(...ZONES),
      fc.integer({ min: Date.UTC(2024, 0, 1), max: Date.UTC(2026, 11, 1) }),
      (expr, zone, after) => {
        const got = nextOccurrence(parseCron(expr), zone, after)
        const want = scan(expr, zone, after, 64)
        return got === want
      },
    ),
    { numRuns: 150 },
  )
  t.pass('150 random expressions, zones and instants agree')
})

t.test('no occurrence is skipped: every instant between is no first-pass match', async (t) => {
  fc.assert(
    fc.property(
      expression,
      fc.constantFrom(...ZONES),
      fc.integer({ min: Date.UTC(2024, 0, 1), max: Date.UTC(2026, 11, 1) }),
      (expr, zone, after) => {
        const c = parseCron(expr)
        const got = nextOccurrence(c, zone, after)!
        const first = Math.floor(after / MINUTE) * MINUTE + MINUTE
        // checked by instants this time (only up to a day, the scan is slow)
        for (let at = first; at < Math.min(got, first + 1440 * MINUTE); at += MINUTE) {
          const wall = wallTime(zone, at)
          if (matchesWall(c, wall) && instantOf(zone, wall) === at) return false
        }
        return got > after
      },
    ),
    { numRuns: 30 },
  )
  t.pass('30 random cases')
})

t.test('daylight saving: a repeated hour fires once, a skipped time when the clock has passed it', async (t) => {
  const ny = 'America/New_York'
  // 2024-03-10: 02:00 EST becomes 03:00 EDT; 02:30 fires at 03:30 EDT (07:30Z)
  t.equal(
    new Date(nextOccurrence(parseCron('30 2 * * *'), ny, Date.UTC(2024, 2, 10, 0))!).toISOString(),
    '2024-03-10T07:30:00.000Z',
  )
  // 2024-11-03: 01:30 happens at 05:30Z (EDT) and 06:30Z (EST): once, the first
  const c = parseCron('30 1 * * *')
  const first = nextOccurrence(c, ny, Date.UTC(2024, 10, 3, 0))!
  t.equal(new Date(first).toISOString(), '2024-11-03T05:30:00.000Z')
  t.equal(new Date(nextOccurrence(c, ny, first)!).toISOString(), '2024-11-04T06:30:00.000Z')
  // every 15 minutes through the repeated hour: the second pass adds nothing
  const every = parseCron('*/15 * * * *')
  const fired: string[] = []
  for (let at = Date.UTC(2024, 10, 3, 5, 40); fired.length < 4;) {
    at = nextOccurrence(every, ny, at)!
    fired.push(new Date(at).toISOString())
  }
  t.same(fired, [
    '2024-11-03T05:45:00.000Z',
    '2024-11-03T07:00:00.000Z',
    '2024-11-03T07:15:00.000Z',
    '2024-11-03T07:30:00.000Z',
  ])
  // a zone's own "today": 06:00 in São Paulo is 09:00Z
  t.equal(
    new Date(nextOccurrence(parseCron('0 6 * * *'), 'America/Sao_Paulo', Date.UTC(2024, 5, 1, 12))!).toISOString(),
    '2024-06-02T09:00:00.000Z',
  )
})

t.test('parsing: names, macros, Vixie day rules, and errors that say what is wrong', async (t) => {
  const at = Date.UTC(2024, 0, 1) // a Monday
  const next = (expr: string) => new Date(nextOccurrence(parseCron(expr), 'UTC', at)!).toISOString()
  t.equal(next('0 9 * JAN-MAR fri'), '2024-01-05T09:00:00.000Z')
  t.equal(next('@weekly'), '2024-01-07T00:00:00.000Z')
  t.equal(next('@monthly'), '2024-02-01T00:00:00.000Z')
  t.equal(next('0 0 15 * 7'), '2024-01-07T00:00:00.000Z', 'day 15 or any Sunday (both restricted: either)')
  t.equal(next('5/20 * * * *'), '2024-01-01T00:05:00.000Z')
  t.equal(nextOccurrence(parseCron('0 0 31 2 *'), 'UTC', at), null, 'February 31st never comes')
  for (const [expr, message] of [
    ['0 6 * *', /five fields.*has 4/],
    ['60 6 * * *', /minute: 60 is outside 0-59/],
    ['0 6 * * MON-', /day of week: "" is not a number or a name/],
    ['0 6 */0 * *', /step .* must be a positive number/],
    ['0 9-5 * * *', /hour: the range "9-5" runs backwards/],
    ['0 6 * FOO *', /month: "FOO" is not a number or a name/],
  ] as const)
    t.match(refusal(expr), message, expr)
})

function refusal(expr: string): string {
  try {
    parseCron(expr)
  } catch (err) {
    if (err instanceof CronError) return err.message
    throw err
  }
  return 'accepted'
}

t.test('rolling tokens are days in the schedule zone', async (t) => {
  const day = (token: string, zone: string, now: string) => {
    const d = rollingDay(token, zone, Date.parse(now))
    return d === null ? null : new Date(d).toISOString().slice(0, 10)
  }
  // 02:00Z on the 1st of March is still the 29th of February in São Paulo
  t.equal(day('today', 'America/Sao_Paulo', '2024-03-01T02:00:00Z'), '2024-02-29')
  t.equal(day('today', 'UTC', '2024-03-01T02:00:00Z'), '2024-03-01')
  t.equal(day('yesterday', 'UTC', '2024-03-01T02:00:00Z'), '2024-02-29')
  t.equal(day('last_month_start', 'UTC', '2024-03-15T12:00:00Z'), '2024-02-01')
  t.equal(day('last_month_end', 'UTC', '2024-03-15T12:00:00Z'), '2024-02-29')
  t.equal(day('month_end', 'UTC', '2024-02-10T12:00:00Z'), '2024-02-29')
  t.equal(
    day('week_start', 'UTC', '2024-03-17T12:00:00Z'),
    '2024-03-11',
    'a Sunday belongs to the week of Monday the 11th',
  )
  t.equal(day('last_week_start', 'UTC', '2024-03-13T12:00:00Z'), '2024-03-04')
  t.equal(day('last_week_end', 'UTC', '2024-03-13T12:00:00Z'), '2024-03-10')
  t.equal(day('today-7d', 'UTC', '2024-03-05T12:00:00Z'), '2024-02-27')
  t.equal(day('last_year_end', 'UTC', '2024-03-05T12:00:00Z'), '2023-12-31')
  t.equal(day('someday', 'UTC', '2024-03-05T12:00:00Z'), null)
})
