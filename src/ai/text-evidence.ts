// Free text that carries the link: a payer's name in two banks' memos, abbreviated, reordered or
// misspelt on one side, never equal. Such a column is no equality and no key, but its words tell
// the partner apart from the other records of the sample. Read with the engine's own comparator
// (token_set: words matched equal, as an initial, or at Jaro–Winkler 0.9; rare words weigh more),
// so what the tool observes is what the probabilistic pass it proposes will weigh.

import { TextMeasures } from '../engine/match/text/measures.js'
import { prepareText, Vocabulary } from '../engine/match/text/prepared.js'
import { type Link, textOf } from './links.js'
import { median } from './observations.js'
import type { RowT } from './schemas.js'

export interface FreeText {
  link: Link
  /** token_set of each confirmed pair, in their order. */
  confirmed: number[]
  /** Confirmed pairs whose partner is the left record's most alike right record in the sample (ties count). */
  partnerBest: number
  /** The median token_set of the confirmed left records against the sample's other right records. */
  typical: number
}

/**
 * A confirmed pair is alike when its texts reach this token_set: a name shared among a bank's
 * filler ("CORISZEL REF 4814" for "HOLMAR CORISZEL SAL") weighs about a third.
 */
export const ALIKE = 0.3

/** token_set of every confirmed pair on one text link, and of their left records against the other right records. */
export function freeTextEvidence(
  link: Link,
  rowsA: RowT[],
  rowsB: RowT[],
  pairs: { left: number; right: number }[],
): FreeText {
  const vocabulary = new Vocabulary()
  const left = prepareText(
    rowsA.map((r) => textOf(r[link.a.name])),
    vocabulary,
  )
  const right = prepareText(
    rowsB.map((r) => textOf(r[link.b.name])),
    vocabulary,
  )
  const measures = new TextMeasures(left, right, vocabulary, true)
  const score = (i: number, j: number) => {
    const s = measures.measure('token_set', i, j)
    return Number.isNaN(s) ? 0 : s
  }
  const confirmed: number[] = []
  const others: number[] = []
  let partnerBest = 0
  for (const p of pairs) {
    const own = score(p.left, p.right)
    confirmed.push(own)
    let best = true
    for (let j = 0; j < rowsB.length; j++) {
      if (j === p.right || pairs.some((q) => q.right === j)) continue
      const s = score(p.left, j)
      others.push(s)
      if (s > own) best = false
    }
    if (best && own > 0) partnerBest++
  }
  return { link, confirmed, partnerBest, typical: median(others) }
}

/**
 * Whether a text link carries the link: most confirmed pairs alike (token_set ≥ 0.3) and their
 * partner the most alike record of the sample, while a record and another record typically are
 * not (median below 0.3). Two of three at least, so one odd memo does not hide the signal and one
 * lucky pair does not make it.
 */
export function carriesLink(e: FreeText): boolean {
  const n = e.confirmed.length
  if (n < 2) return false
  const alike = e.confirmed.filter((s) => s >= ALIKE).length
  return alike * 3 >= n * 2 && e.partnerBest * 3 >= n * 2 && e.typical < ALIKE
}
