// Rolling scopes: a schedule binds a recipe parameter to a token — { "rolling": "yesterday" } —
// resolved when it fires, in the schedule's time zone, into the value the run gets. Dates become
// YYYY-MM-DD; for a timestamp parameter, the local midnight that starts that day, as an instant.

import { parseDate } from '../engine/data/values.js'
import { ConcordError } from '../errors.js'
import type { Recipe } from '../recipes/schema.js'
import { instantOf, wallTime } from './cron.js'

export type Binding = string | number | boolean | { rolling: string }

const DAY = 86_400_000

/** The tokens, each a function of today's wall-clock date (a UTC day number's fields). */
const TOKENS: Record<string, (y: number, m: number, d: number) => number> = {
  today: (y, m, d) => Date.UTC(y, m, d),
  yesterday: (y, m, d) => Date.UTC(y, m, d - 1),
  tomorrow: (y, m, d) => Date.UTC(y, m, d + 1),
  week_start: (y, m, d) => Date.UTC(y, m, d - ((new Date(Date.UTC(y, m, d)).getUTCDay() + 6) % 7)),
  last_week_start: (y, m, d) => Date.UTC(y, m, d - ((new Date(Date.UTC(y, m, d)).getUTCDay() + 6) % 7) - 7),
  last_week_end: (y, m, d) => Date.UTC(y, m, d - ((new Date(Date.UTC(y, m, d)).getUTCDay() + 6) % 7) - 1),
  month_start: (y, m) => Date.UTC(y, m, 1),
  month_end: (y, m) => Date.UTC(y, m + 1, 0),
  last_month_start: (y, m) => Date.UTC(y, m - 1, 1),
  last_month_end: (y, m) => Date.UTC(y, m, 0),
  year_start: (y) => Date.UTC(y, 0, 1),
  last_year_start: (y) => Date.UTC(y - 1, 0, 1),
  last_year_end: (y) => Date.UTC(y - 1, 11, 31),
}

export const ROLLING_TOKENS = [...Object.keys(TOKENS), 'today-<n>d', 'today+<n>d']

/** The day (ms of its UTC midnight) a token names, as of `now` in `zone`; null for no such token. */
export function rollingDay(token: string, zone: string, now: number): number | null {
  const wall = new Date(wallTime(zone, now))
  const [y, m, d] = [wall.getUTCFullYear(), wall.getUTCMonth(), wall.getUTCDate()]
  const offset = /^today([+-])(\d{1,4})d$/.exec(token)
  if (offset) return Date.UTC(y, m, d + (offset[1] === '-' ? -1 : 1) * Number(offset[2]))
  return TOKENS[token]?.(y, m, d) ?? null
}

/**
 * The parameter values of one firing: literals as they are, rolling tokens resolved as of `now`
 * in `zone` (a date parameter gets the day, a timestamp one the local midnight starting it).
 */
export function resolveBindings(
  recipe: Recipe,
  bindings: Record<string, Binding>,
  zone: string,
  now: number,
): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {}
  for (const [name, binding] of Object.entries(bindings)) {
    if (typeof binding !== 'object') {
      out[name] = binding
      continue
    }
    const param = recipe.params?.find((p) => p.name === name)
    if (param && param.type !== 'date' && param.type !== 'timestamp')
      throw new ConcordError(
        'invalid_param',
        `parameter "${name}" is a ${param.type}: a rolling token binds a date or timestamp parameter`,
        400,
        'give it a fixed value instead',
      )
    const day = rollingDay(binding.rolling, zone, now)
    if (day === null)
      throw new ConcordError(
        'invalid_param',
        `"${binding.rolling}" is not a rolling token (parameter "${name}")`,
        400,
        `use one of: ${ROLLING_TOKENS.join(', ')}`,
      )
    const date = new Date(day).toISOString().slice(0, 10)
    out[name] = param?.type === 'timestamp' ? new Date(instantOf(zone, parseDate(date)! * DAY)).toISOString() : date
  }
  return out
}
