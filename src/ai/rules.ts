// Rules as recipe predicates: equalities, amount tolerances and date windows written in the
// recipe language (DESIGN §2), and the validator every inferred rule passes before it is returned.

import type { Recipe, RecipePass } from '../recipes/schema.js'
import { validateRecipe } from '../recipes/validate.js'
import { AMOUNT_SCALE, type Link } from './links.js'
import type { ColumnT, RuleT } from './schemas.js'

/** `l.amount`: a column as a recipe names it. */
export const col = (side: 'l' | 'r', c: ColumnT) => `${side}.${c.name}`

/** `l.x = r.y`, or `UPPER(TRIM(l.x)) = UPPER(TRIM(r.y))` when the values agree only after normalising. */
export function equalitySql(link: Link, exact: boolean): string {
  return exact
    ? `${col('l', link.a)} = ${col('r', link.b)}`
    : `UPPER(TRIM(${col('l', link.a)})) = UPPER(TRIM(${col('r', link.b)}))`
}

const ceilDiv = (x: bigint, y: bigint) => (x + y - 1n) / y

/**
 * A tolerance a quarter above the largest observed difference, rounded up to two significant
 * digits and to the amounts' scale, as exact decimal text: 0.03 → 0.0375 → 0.038 → 0.04.
 */
export function toleranceText(maxDiff: bigint, scale: number): string {
  let t = ceilDiv(maxDiff * 5n, 4n)
  const digits = t.toString().length
  if (digits > 2) {
    const unit = 10n ** BigInt(digits - 2)
    t = ceilDiv(t, unit) * unit
  }
  const s = Math.min(Math.max(scale, 0), AMOUNT_SCALE)
  const unit = 10n ** BigInt(AMOUNT_SCALE - s)
  t = ceilDiv(t, unit) * unit
  return decimalText(t / unit, s)
}

/** Units at `scale` as decimal text with exactly `scale` fraction digits. */
export function decimalText(units: bigint, scale: number): string {
  const neg = units < 0n
  const digits = (neg ? -units : units).toString().padStart(scale + 1, '0')
  const text = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`
  return neg ? `-${text}` : text
}

export function amountSql(link: Link, maxDiff: bigint, scale: number): string {
  if (maxDiff === 0n) return `${col('l', link.a)} = ${col('r', link.b)}`
  return `ABS(${col('l', link.a)} - ${col('r', link.b)}) <= ${toleranceText(maxDiff, scale)}`
}

/**
 * The observed lag range (b's day minus a's) widened on each side by the gap expected beyond the
 * extremes of n draws, spread / (n − 1) (a quarter of it from five lags, half from three), at
 * least one day, not crossing zero when the lags were all on one side of it.
 */
export function dateWindow(lags: number[]): [number, number] {
  const lo = Math.min(...lags)
  const hi = Math.max(...lags)
  const widen = Math.max(1, Math.ceil((hi - lo) / Math.max(1, lags.length - 1)))
  let from = lo - widen
  let to = hi + widen
  // lags all on one side stay there; lags all zero say nothing of the direction a day's booking
  // lag takes, so the window opens a day both ways (a 0..0 window lost every one-day booking)
  if (lo >= 0 && hi > 0) from = Math.max(0, from)
  if (hi <= 0 && lo < 0) to = Math.min(0, to)
  return [from, to]
}

// timestamps compare as their UTC day; the engine's date minus/plus whole days stays a date
const day = (side: 'l' | 'r', c: ColumnT) => (c.type === 'timestamp' ? `CAST(${col(side, c)} AS date)` : col(side, c))
const shifted = (base: string, days: number) =>
  days === 0 ? base : `${base} ${days > 0 ? '+' : '-'} INTERVAL '${Math.abs(days)} days'`

export function windowSql(link: Link, [from, to]: [number, number]): string {
  const l = day('l', link.a)
  return `${day('r', link.b)} BETWEEN ${shifted(l, from)} AND ${shifted(l, to)}`
}

export function windowWords([from, to]: [number, number]): string {
  const d = (n: number) => `${Math.abs(n)} day${Math.abs(n) === 1 ? '' : 's'}`
  if (from >= 0) return `b's date ${from} to ${d(to)} after a's`
  if (to <= 0) return `b's date ${Math.abs(to)} to ${d(from)} before a's`
  return `b's date from ${d(from)} before to ${d(to)} after a's`
}

/** What a rule puts in its pass besides the name and pattern: `when`, or blocking and comparisons. */
export function passOf(rule: RuleT): Omit<RecipePass, 'name' | 'pattern'> {
  if (rule.compare?.length)
    return {
      ...(rule.sql.trim() ? { when: rule.sql } : {}),
      block: rule.block ?? [],
      compare: rule.compare,
      ...(rule.threshold !== undefined ? { threshold: rule.threshold } : {}),
      ...(rule.train?.confirmed.length ? { train: { confirmed: rule.train.confirmed } } : {}),
    }
  return { when: rule.sql, ...(rule.aggregate ? { aggregate: rule.aggregate } : {}) }
}

/** The problems the recipe validator finds in a rule run as a pass of its own (parse, types, usable join). */
export function ruleIssues(rule: RuleT, schemaA: ColumnT[], schemaB: ColumnT[]): string[] {
  const pattern = rule.pattern ?? '1:1'
  const recipe: Recipe = {
    name: 'rule-check',
    left: { source: 'a', key: [] },
    right: { source: 'b', key: [] },
    passes: [{ name: 'rule', pattern, ...passOf(rule) }],
  }
  const schemas = {
    l: schemaA.map((c) => ({ ...c, nullable: c.nullable ?? true })),
    r: schemaB.map((c) => ({ ...c, nullable: c.nullable ?? true })),
  }
  return validateRecipe(recipe, schemas).issues.map((i) => i.message)
}
