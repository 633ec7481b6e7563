// Similarity measures between a left and a right row of prepared text (prepared.ts), each in
// 0..1 and allocation-free per pair:
//   exact          the normalized texts are equal
//   jaro_winkler   Jaro–Winkler of the normalized texts (jaro: without the prefix bonus)
//   token_jaccard  weight of the tokens both hold over the weight of the tokens either holds
//   token_overlap  weight of the tokens both hold over the lighter side's weight
//   token_set      tokens matched fuzzily (Monge–Elkan style, as SoftTF-IDF): each token of one
//                  side takes its best partner on the other — 1 when equal, 1 for an initial
//                  ("H" and "HOLMAR"), the Jaro–Winkler similarity when at least 0.9 (a typo or
//                  a swapped letter), else 0 — averaged by weight; the better of the two directions
//   trigram        pg_trgm's similarity (shared trigrams over all trigrams)
// Token weights are the vocabulary's inverse document frequencies when `tf` is on (a shared
// surname outweighs a shared "REF"), else 1.

import { jaro, jaroWinkler } from './jaro.js'
import type { PreparedText, Vocabulary } from './prepared.js'

export const TEXT_MEASURES = [
  'exact',
  'jaro_winkler',
  'jaro',
  'token_jaccard',
  'token_overlap',
  'token_set',
  'trigram',
] as const
export type TextMeasure = (typeof TEXT_MEASURES)[number]

/** Jaro–Winkler at or above which two tokens count as the same token spelled differently. */
export const FUZZY_TOKEN = 0.9

export class TextMeasures {
  private readonly weight: Float64Array
  /** Jaro–Winkler of token pairs already compared (the same names recur across pairs). */
  private readonly fuzzy = new Map<number, number>()

  constructor(
    readonly left: PreparedText,
    readonly right: PreparedText,
    readonly vocabulary: Vocabulary,
    tf: boolean,
  ) {
    this.weight = tf ? vocabulary.idf() : new Float64Array(vocabulary.size).fill(1)
  }

  /** The measure for left row i and right row j; NaN when either is empty (no evidence). */
  measure(m: TextMeasure, i: number, j: number): number {
    const l = this.left
    const r = this.right
    if (l.empty[i] === 1 || r.empty[j] === 1) return Number.NaN
    switch (m) {
      case 'exact':
        return this.exact(i, j) ? 1 : 0
      case 'jaro_winkler':
        return jaroWinkler(
          l.codes,
          l.start[i],
          l.start[i + 1] - l.start[i],
          r.codes,
          r.start[j],
          r.start[j + 1] - r.start[j],
        )
      case 'jaro':
        return jaro(l.codes, l.start[i], l.start[i + 1] - l.start[i], r.codes, r.start[j], r.start[j + 1] - r.start[j])
      case 'token_jaccard':
        return this.tokenShare(i, j, false)
      case 'token_overlap':
        return this.tokenShare(i, j, true)
      case 'token_set':
        return this.tokenSet(i, j)
      case 'trigram':
        return this.trigram(i, j)
    }
  }

  exact(i: number, j: number): boolean {
    const l = this.left
    const r = this.right
    const a = l.start[i]
    const n = l.start[i + 1] - a
    const b = r.start[j]
    if (r.start[j + 1] - b !== n) return false
    for (let k = 0; k < n; k++) if (l.codes[a + k] !== r.codes[b + k]) return false
    return true
  }

  /** Shared token weight over the union's (jaccard) or over the lighter side's (overlap). */
  private tokenShare(i: number, j: number, overlap: boolean): number {
    const w = this.weight
    const a = this.left.tokens
    const b = this.right.tokens
    let x = this.left.tokenStart[i]
    const xe = this.left.tokenStart[i + 1]
    let y = this.right.tokenStart[j]
    const ye = this.right.tokenStart[j + 1]
    let shared = 0
    let onlyA = 0
    let onlyB = 0
    while (x < xe && y < ye) {
      const ta = a[x]
      const tb = b[y]
      if (ta === tb) {
        shared += w[ta]
        x++
        y++
      } else if (ta < tb) {
        onlyA += w[ta]
        x++
      } else {
        onlyB += w[tb]
        y++
      }
    }
    while (x < xe) onlyA += w[a[x++]]
    while (y < ye) onlyB += w[b[y++]]
    const denominator = overlap ? Math.min(shared + onlyA, shared + onlyB) : shared + onlyA + onlyB
    return denominator > 0 ? shared / denominator : shared > 0 ? 1 : 0
  }

  private tokenSet(i: number, j: number): number {
    const l = this.left
    const r = this.right
    return Math.max(
      this.fuzzyShare(l.tokens, l.tokenStart[i], l.tokenStart[i + 1], r.tokens, r.tokenStart[j], r.tokenStart[j + 1]),
      this.fuzzyShare(r.tokens, r.tokenStart[j], r.tokenStart[j + 1], l.tokens, l.tokenStart[i], l.tokenStart[i + 1]),
    )
  }

  /** Weighted share of tokens xs[x0, x1) that have a partner among ys[y0, y1). */
  private fuzzyShare(xs: Int32Array, x0: number, x1: number, ys: Int32Array, y0: number, y1: number): number {
    const w = this.weight
    const v = this.vocabulary
    let total = 0
    let matched = 0
    for (let x = x0; x < x1; x++) {
      const t = xs[x]
      total += w[t]
      let best = 0
      const tLen = v.tokenLength(t)
      for (let y = y0; y < y1 && best < 1; y++) {
        const u = ys[y]
        if (u === t) best = 1
        else if (tLen === 1) {
          if (v.codes[v.start[u]] === v.codes[v.start[t]]) best = 1
        } else if (v.tokenLength(u) > 1) {
          const s = this.tokenSimilarity(t, u)
          if (s >= FUZZY_TOKEN && s > best) best = s
        }
      }
      matched += w[t] * best
    }
    return total > 0 ? matched / total : 0
  }

  private tokenSimilarity(t: number, u: number): number {
    const key = t < u ? t * 67_108_864 + u : u * 67_108_864 + t
    let s = this.fuzzy.get(key)
    if (s === undefined) {
      const v = this.vocabulary
      s = jaroWinkler(v.codes, v.start[t], v.tokenLength(t), v.codes, v.start[u], v.tokenLength(u))
      if (this.fuzzy.size > 4_000_000) this.fuzzy.clear()
      this.fuzzy.set(key, s)
    }
    return s
  }

  private trigram(i: number, j: number): number {
    const a = this.left.trigrams
    const b = this.right.trigrams
    const as = this.left.trigramStart
    const bs = this.right.trigramStart
    if (!a || !b || !as || !bs) throw new Error('trigram similarity needs text prepared with trigrams')
    let x = as[i]
    const xe = as[i + 1]
    let y = bs[j]
    const ye = bs[j + 1]
    const total = xe - x + (ye - y)
    let shared = 0
    while (x < xe && y < ye) {
      if (a[x] === b[y]) {
        shared++
        x++
        y++
      } else if (a[x] < b[y]) x++
      else y++
    }
    return total === 0 ? 0 : shared / (total - shared)
  }
}
