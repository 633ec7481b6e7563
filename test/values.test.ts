// Dates as text: formatDate writes every date a page or an export shows, in integer arithmetic;
// it must agree with the calendar of Date on every day it handles and fall back to it elsewhere.

import t from 'tap'
import { formatDate } from '../src/engine/data/values.js'

const DAY_MS = 86_400_000
const byDate = (days: number) => new Date(days * DAY_MS).toISOString().slice(0, 10)

t.test('formatDate agrees with Date from year 0 to 9999 and beyond', async (t) => {
  let differ = 0
  // every day from 1900 to 2200 (leap years, centuries), then every 97th day across 0000-9999
  for (let d = -25567; d <= 84006; d++) if (formatDate(d) !== byDate(d)) differ++
  for (let d = -719528; d <= 2932896; d += 97) if (formatDate(d) !== byDate(d)) differ++
  t.equal(differ, 0)
  t.equal(formatDate(19782), '2024-02-29')
  t.equal(formatDate(-719528), '0000-01-01')
  t.equal(formatDate(2932896), '9999-12-31')
  t.equal(formatDate(2932897), byDate(2932897), 'outside 0000-9999: what Date wrote')
  t.equal(formatDate(-719529), byDate(-719529))
  t.equal(formatDate(0.5), '1970-01-01', 'a fraction of a day: its day')
  t.throws(() => formatDate(Number.NaN), RangeError)
})
