// Pairs: how alike two sample rows are, and the best pairs chosen greedily. Equal references
// count most, weighted by how rare the value is (a currency shared by every row proves little);
// close amounts and dates add; an id-like reference that disagrees halves the score.

import {
  amountOf,
  dayOf,
  isCodeLike,
  type Link,
  type LinkSamples,
  linkName,
  normalized,
  textAgreement,
  textOf,
} from './links.js'
import type { RowT } from './schemas.js'

export interface ScoredPair {
  left: number
  right: number
  confidence: number
  reason: string
}

interface TextStats {
  freqA: Map<string, number>
  freqB: Map<string, number>
  lowVariety: boolean
  idLike: boolean
}

/** Amounts within this relative difference still add to a pair's score. */
const AMOUNT_CLOSE = 0.05
/** Dates further apart than this add nothing. */
const DAYS_CLOSE = 15
/** A pair below this confidence is not worth proposing. */
const MIN_CONFIDENCE = 0.3

function frequencies(rows: RowT[], column: string): Map<string, number> {
  const out = new Map<string, number>()
  for (const row of rows) {
    const t = textOf(row[column])
    if (t !== null) out.set(normalized(t), (out.get(normalized(t)) ?? 0) + 1)
  }
  return out
}

function textStats(s: LinkSamples, link: Link): TextStats {
  const freqA = frequencies(s.rowsA, link.a.name)
  const freqB = frequencies(s.rowsB, link.b.name)
  const values = [...freqA.keys(), ...freqB.keys()]
  // few distinct values over many rows on either side: currency, status, a country
  const repetitive = (freq: Map<string, number>) => {
    const count = [...freq.values()].reduce((x, y) => x + y, 0)
    return count >= 4 && freq.size * 2 <= count
  }
  const lowVariety = repetitive(freqA) || repetitive(freqB)
  const idLike = !lowVariety && values.length > 0 && values.filter(isCodeLike).length * 2 > values.length
  return { freqA, freqB, lowVariety, idLike }
}

/** Units at AMOUNT_SCALE as plain decimal text, trailing zeros after two decimals dropped. */
export function unitsText(units: bigint, scale = 2): string {
  const neg = units < 0n
  const digits = (neg ? -units : units).toString().padStart(10, '0')
  const int = digits.slice(0, -9).replace(/^0+(?=\d)/, '')
  let frac = digits.slice(-9).replace(/0+$/, '')
  if (frac.length < scale) frac = frac.padEnd(scale, '0')
  return `${neg ? '-' : ''}${int}${frac ? `.${frac}` : ''}`
}

const abs = (x: bigint) => (x < 0n ? -x : x)

export function scorePairs(s: LinkSamples, links: Link[]): ScoredPair[] {
  const stats = new Map(links.filter((l) => l.role === 'text').map((l) => [l, textStats(s, l)]))
  const out: ScoredPair[] = []
  for (let i = 0; i < s.rowsA.length; i++) {
    for (let j = 0; j < s.rowsB.length; j++) {
      const ra = s.rowsA[i]
      const rb = s.rowsB[j]
      let score = 0
      let attainable = 0
      let halve = false
      let referenceAgrees = false
      const reasons: string[] = []
      for (const link of links) {
        if (link.role === 'text') {
          const st = stats.get(link)!
          const x = textOf(ra[link.a.name])
          const y = textOf(rb[link.b.name])
          const agreement = textAgreement(x, y)
          if (agreement === 'missing') continue
          const weight = st.lowVariety ? 0.25 : 1
          attainable += weight
          if (agreement === 'differ') {
            if (st.idLike) halve = true
            continue
          }
          const v = normalized(x!)
          const rarity = st.lowVariety ? 1 : 1 / Math.max(st.freqA.get(v) ?? 1, st.freqB.get(v) ?? 1)
          score += weight * rarity
          if (!st.lowVariety) {
            referenceAgrees = true
            reasons.push(
              `same ${linkName(link)} ${x!.trim()}${agreement === 'normalized' ? ' (ignoring case and spaces)' : ''}`,
            )
          }
        } else if (link.role === 'amount') {
          const x = amountOf(ra[link.a.name])
          const y = amountOf(rb[link.b.name])
          if (x === null || y === null) continue
          attainable += 1
          const diff = abs(x - y)
          const size = abs(x) > abs(y) ? abs(x) : abs(y)
          if (diff === 0n) {
            score += 1
            reasons.push(
              links.filter((l) => l.role === 'amount').length > 1 ? `${linkName(link)} equal` : 'amounts equal',
            )
          } else if (size > 0n && x < 0n === y < 0n) {
            const rel = Number(diff) / Number(size)
            if (rel < AMOUNT_CLOSE) {
              score += 0.8 * (1 - rel / AMOUNT_CLOSE)
              reasons.push(`amounts ${unitsText(diff)} apart`)
            }
          }
        } else {
          const x = dayOf(ra[link.a.name])
          const y = dayOf(rb[link.b.name])
          if (x === null || y === null) continue
          attainable += 0.5
          const days = Math.abs(y - x)
          if (days < DAYS_CLOSE) {
            score += 0.5 * (1 - days / DAYS_CLOSE)
            reasons.push(days === 0 ? 'same day' : `${days} day${days === 1 ? '' : 's'} apart`)
          }
        }
      }
      if (attainable === 0 || score === 0) continue
      let confidence = score / attainable
      if (halve) confidence /= 2
      // without an agreeing reference, closeness alone is weak evidence
      if (!referenceAgrees) confidence *= 0.8
      if (confidence < MIN_CONFIDENCE) continue
      out.push({ left: i, right: j, confidence: Math.round(confidence * 100) / 100, reason: reasons.join('; ') })
    }
  }
  return out
}

/** Best first, each row at most once: a sale, not its chargeback, gets the settlement. */
export function chooseGreedily(scored: ScoredPair[], limit: number): ScoredPair[] {
  const sorted = [...scored].sort((x, y) => y.confidence - x.confidence || x.left - y.left || x.right - y.right)
  const usedA = new Set<number>()
  const usedB = new Set<number>()
  const out: ScoredPair[] = []
  for (const p of sorted) {
    if (out.length >= limit) break
    if (usedA.has(p.left) || usedB.has(p.right)) continue
    usedA.add(p.left)
    usedB.add(p.right)
    out.push(p)
  }
  return out
}
