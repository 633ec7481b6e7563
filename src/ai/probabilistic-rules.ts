// The probabilistic pass an expert writes when free text carries the link and no key does: block
// on a shared word of the text, or on amount × date closeness; weigh the text's likeness, the
// amounts' relative difference and the lag in levels; let the engine learn each level's weight
// from the data (EM), anchored by the confirmed pairs. Five confirmed pairs are too few to draw
// hard limits from: a 1.2% fee seen on one pair says nothing of the FX drift on the next. So the
// levels stay soft and the blocking generous — at least 10% on amounts, three weeks on dates, more
// when the pairs show more — and the data's own weights decide what a difference is worth.

import type { RecipeComparison } from '../recipes/schema.js'
import { amountOf, type Link } from './links.js'
import { abs, type Equal, joinWords, lagsOf } from './observations.js'
import { col, windowSql, windowWords } from './rules.js'
import type { FreeText } from './text-evidence.js'
import type { RowT, RuleT } from './schemas.js'

/**
 * Relative blocking widths, and lag windows in days: the first that holds what the pairs show,
 * with room. Three weeks at least: slow transfers take that long, and it stays short of a month,
 * so a monthly payer's next transfer is not a candidate (a 31-day window cost recall on
 * transfers/ for that reason, and a 14-day one lost the 15–21-day lags of bench/gen-unkeyed.ts).
 */
const RELATIVE_WIDTHS = [0.1, 0.2, 0.5]
const WINDOW_DAYS = [21, 31, 45, 62, 92, 183, 366]
const LAG_LADDER: [number, number][] = [
  [0, 0],
  [1, 1],
  [2, 3],
  [4, 7],
  [8, 14],
  [15, 21],
  [22, 31],
  [32, 62],
  [63, 366],
]

const firstAtLeast = (ladder: number[], x: number) => ladder.find((w) => w >= x) ?? ladder[ladder.length - 1]

/** |a − b| / max(|a|, |b|) of a pair's amounts, as the engine's `relative` comparison reads it. */
function relativeDiff(a: bigint, b: bigint): number {
  const m = abs(a) > abs(b) ? abs(a) : abs(b)
  return m === 0n ? 0 : Number(abs(a - b)) / Number(m)
}

export interface FreeTextPair {
  a: RowT
  b: RowT
}

/** The lag levels within [from, to]: the ladder's ranges cut to the window, negative lags one level. */
export function lagLevels([from, to]: [number, number]): [number, number][] {
  const levels: [number, number][] = []
  for (const [lo, hi] of LAG_LADDER) {
    if (lo > to) break
    levels.push([lo, Math.min(hi, to)])
  }
  if (from < 0) levels.push([from, -1])
  return levels
}

export function probabilisticRule(opts: {
  texts: FreeText[]
  amount?: Link
  date?: Link
  attributes: Equal[]
  pairs: FreeTextPair[]
  /** Record keys of the confirmed pairs, when each side has a one-column key. */
  anchors: { left: string; right: string }[]
  seen: string
}): Omit<RuleT, 'confidence'> {
  const { texts, amount, date, attributes, pairs } = opts
  const block: string[] = texts.map((t) => `shares_token(${col('l', t.link.a)}, ${col('r', t.link.b)})`)
  const compare: RecipeComparison[] = texts.map((t) => ({
    name: t.link.a.name === t.link.b.name ? t.link.a.name : `${t.link.a.name}_${t.link.b.name}`,
    text: [col('l', t.link.a), col('r', t.link.b)],
    levels: ['token_set >= 0.95', 'token_set >= 0.85', 'token_set >= 0.7', 'token_set >= 0.5', 'token_set >= 0.3'],
  }))
  const words = [`${joinWords(texts.map((t) => t.link.a.name))} alike (words shared, abbreviated or misspelt)`]
  const band: string[] = []
  if (amount) {
    const diffs = pairs.flatMap(({ a, b }) => {
      const x = amountOf(a[amount.a.name])
      const y = amountOf(b[amount.b.name])
      return x === null || y === null ? [] : [relativeDiff(x, y)]
    })
    const width = firstAtLeast(RELATIVE_WIDTHS, 1.5 * Math.max(0, ...diffs))
    band.push(`ABS(${col('l', amount.a)} - ${col('r', amount.b)}) <= ${width} * ABS(${col('l', amount.a)})`)
    compare.push({
      name: 'amount',
      relative: [col('l', amount.a), col('r', amount.b)],
      levels: [0, 0.005, 0.025, width].filter((x, k, xs) => x <= width && xs.indexOf(x) === k),
    })
    words.push(`amounts within ${Math.round(width * 100)}%`)
  }
  if (date) {
    const lags = lagsOf(
      date,
      pairs.map(({ a, b }) => [a, b]),
    ).filter((d) => d !== null)
    const lo = Math.min(0, ...lags)
    const hi = Math.max(0, ...lags)
    const window: [number, number] = [
      lo < 0 ? -firstAtLeast(WINDOW_DAYS, Math.ceil(1.5 * -lo)) : 0,
      firstAtLeast(WINDOW_DAYS, Math.ceil(1.5 * hi)),
    ]
    band.push(windowSql(date, window))
    compare.push({ name: 'lag', days: [col('l', date.a), col('r', date.b)], levels: lagLevels(window) })
    words.push(windowWords(window))
  }
  if (band.length === 2) block.push(band.join(' AND '))
  for (const e of attributes)
    compare.push({
      name: e.link.a.name === e.link.b.name ? e.link.a.name : `${e.link.a.name}_${e.link.b.name}`,
      exact: [col('l', e.link.a), col('r', e.link.b)],
    })
  if (attributes.length) words.push(`same ${joinWords(attributes.map((e) => e.link.a.name))}`)
  return {
    name: 'free_text',
    sql: '',
    block,
    compare,
    ...(opts.anchors.length ? { train: { confirmed: opts.anchors } } : {}),
    description: `no shared key; ${joinWords(words)} weigh each candidate, their weights learned from the data: the text carried the link on the ${opts.seen}`,
    pattern: '1:1',
  }
}
