// What inference observes on pairs of rows, shared by the 1:1 rules, the split rules and the
// sample evidence: which text links agree (exactly, or after TRIM/UPPER), at what scale amounts
// are written, and how a list of words reads in a description.

import { amountScale, dayOf, type Link, type LinkSamples, textAgreement, textOf } from './links.js'
import { dateWindow } from './rules.js'
import type { RowT } from './schemas.js'

/** A text link equal on every observed pair, exactly or only after TRIM/UPPER. */
export interface Equal {
  link: Link
  exact: boolean
}

export const abs = (x: bigint) => (x < 0n ? -x : x)

/** Text links equal on every pair, exactly or only after normalising. */
export function equalLinks(links: Link[], pairs: [RowT, RowT][]): Equal[] {
  const out: Equal[] = []
  for (const link of links) {
    if (link.role !== 'text' || pairs.length === 0) continue
    const agreements = pairs.map(([a, b]) => textAgreement(textOf(a[link.a.name]), textOf(b[link.b.name])))
    if (agreements.every((g) => g === 'exact')) out.push({ link, exact: true })
    else if (agreements.every((g) => g === 'exact' || g === 'normalized')) out.push({ link, exact: false })
  }
  return out
}

/** The decimal places of a link's amounts: as declared, or the most seen in the samples. */
export function scaleOf(link: Link, s: LinkSamples): number {
  const declared = Math.max(link.a.scale ?? 0, link.b.scale ?? 0)
  const seen = [...s.rowsA.map((r) => amountScale(r[link.a.name])), ...s.rowsB.map((r) => amountScale(r[link.b.name]))]
  return Math.max(declared, ...seen, 0)
}

/** The median of numbers (the upper one of an even count), 0 when there are none. */
export function median(xs: number[]): number {
  if (!xs.length) return 0
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]
}

/** "a, b and c". */
export const joinWords = (words: string[]) =>
  words.length <= 1 ? words.join('') : `${words.slice(0, -1).join(', ')} and ${words[words.length - 1]}`

/** "1 confirmed pair", "3 confirmed pairs". */
export const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`

/** b's day minus a's on each pair, null where either date is missing. */
export function lagsOf(link: Link, pairs: [RowT, RowT][]): (number | null)[] {
  return pairs.map(([a, b]) => {
    const x = dayOf(a[link.a.name])
    const y = dayOf(b[link.b.name])
    return x === null || y === null ? null : y - x
  })
}

/**
 * The window of each date link every pair has both dates of, the narrowest first (`first`, a
 * glossary's date link, before all).
 */
export function dateWindows(
  links: Link[],
  pairs: [RowT, RowT][],
  first?: Link,
): { link: Link; window: [number, number] }[] {
  return links
    .filter((l) => l.role === 'date')
    .flatMap((link) => {
      const lags = lagsOf(link, pairs)
      return lags.some((d) => d === null) ? [] : [{ link, window: dateWindow(lags as number[]) }]
    })
    .sort((x, y) =>
      x.link === first ? -1 : y.link === first ? 1 : x.window[1] - x.window[0] - (y.window[1] - y.window[0]),
    )
}
