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

const CACHE_BITS = 18

/** A letter's bit (A-Z: 0-25); digits share bits 26-29, anything else bit 30: a superset, never fewer. */
function letterBit(c: number): number {
  if (c >= 65 && c <= 90) return 1 << (c - 65)
  if (c >= 48 && c <= 57) return 1 << (26 + ((c - 48) & 3))
  return 1 << 30
}

function bitCount(x: number): number {
  x = x - ((x >>> 1) & 0x55555555)
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333)
  return (Math.imul((x + (x >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24) & 63
}

export class TextMeasures {
  private readonly weight: Float64Array
  private bestX = new Float64Array(16)
  private bestY = new Float64Array(16)
  /** The vocabulary's tokens as typed arrays: where each starts, its length, its first unit. */
  private readonly tokenCodes: Uint16Array
  private readonly tokenStart: Int32Array
  private readonly tokenLength: Int32Array
  private readonly tokenFirst: Uint16Array
  /** Which letters each token holds (bit c - 'A'; digits, and anything else, share bits). */
  private readonly tokenLetters: Int32Array
  private readonly cacheA = new Int32Array(1 << CACHE_BITS).fill(-1)
  private readonly cacheB = new Int32Array(1 << CACHE_BITS).fill(-1)
  private readonly cacheS = new Float64Array(1 << CACHE_BITS)

  constructor(
    readonly left: PreparedText,
    readonly right: PreparedText,
    readonly vocabulary: Vocabulary,
    tf: boolean,
  ) {
    this.weight = tf ? vocabulary.idf() : new Float64Array(vocabulary.size).fill(1)
    const n = vocabulary.size
    this.tokenCodes = vocabulary.codes
    this.tokenStart = Int32Array.from(vocabulary.start)
    this.tokenLength = new Int32Array(n)
    this.tokenFirst = new Uint16Array(n)
    this.tokenLetters = new Int32Array(n)
    for (let t = 0; t < n; t++) {
      this.tokenLength[t] = vocabulary.start[t + 1] - vocabulary.start[t]
      this.tokenFirst[t] = vocabulary.codes[vocabulary.start[t]]
      let letters = 0
      for (let k = vocabulary.start[t]; k < vocabulary.start[t + 1]; k++) letters |= letterBit(vocabulary.codes[k])
      this.tokenLetters[t] = letters
    }
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

  /**
   * Both directions at once: equal tokens are found by merging the two sorted lists, then every
   * other token pair is compared once (pairs where both tokens already have an equal partner are
   * skipped), each token keeping its best partner; the better weighted share wins.
   */
  private tokenSet(i: number, j: number): number {
    const l = this.left
    const r = this.right
    const x0 = l.tokenStart[i]
    const nx = l.tokenStart[i + 1] - x0
    const y0 = r.tokenStart[j]
    const ny = r.tokenStart[j + 1] - y0
    if (this.bestX.length < nx) this.bestX = new Float64Array(nx * 2)
    if (this.bestY.length < ny) this.bestY = new Float64Array(ny * 2)
    const bestX = this.bestX
    const bestY = this.bestY
    bestX.fill(0, 0, nx)
    bestY.fill(0, 0, ny)
    const xs = l.tokens
    const ys = r.tokens
    for (let x = 0, y = 0; x < nx && y < ny;) {
      const t = xs[x0 + x]
      const u = ys[y0 + y]
      if (t === u) {
        bestX[x++] = 1
        bestY[y++] = 1
      } else if (t < u) x++
      else y++
    }
    const len = this.tokenLength
    const first = this.tokenFirst
    for (let x = 0; x < nx; x++) {
      const t = xs[x0 + x]
      const tl = len[t]
      for (let y = 0; y < ny; y++) {
        if (bestX[x] === 1 && bestY[y] === 1) continue
        const u = ys[y0 + y]
        if (u === t) continue
        const ul = len[u]
        if (tl === 1 || ul === 1) {
          // an initial: it is matched by the name it begins, the name is not matched by it
          if (tl !== ul && first[t] === first[u]) {
            if (tl === 1) bestX[x] = 1
            else bestY[y] = 1
          }
          continue
        }
        if (!this.mayBeAlike(t, u, tl, ul)) continue
        const s = this.fuzzy(t, u)
        if (s > bestX[x]) bestX[x] = s
        if (s > bestY[y]) bestY[y] = s
      }
    }
    const w = this.weight
    let totalX = 0
    let matchedX = 0
    for (let x = 0; x < nx; x++) {
      const t = xs[x0 + x]
      totalX += w[t]
      matchedX += w[t] * bestX[x]
    }
    let totalY = 0
    let matchedY = 0
    for (let y = 0; y < ny; y++) {
      const u = ys[y0 + y]
      totalY += w[u]
      matchedY += w[u] * bestY[y]
    }
    return Math.max(totalX > 0 ? matchedX / totalX : 0, totalY > 0 ? matchedY / totalY : 0)
  }

  /**
   * Whether two tokens can reach Jaro–Winkler FUZZY_TOKEN at all: that needs Jaro >= 0.83 (a
   * shared prefix adds at most 0.4 of the rest), so (m/a + m/b + 1) / 3 >= 0.83 with m the
   * characters they share; m is at most a token's length less one for each letter it holds that
   * the other lacks. Most pairs of different names fail this on their letters alone, with no
   * Jaro–Winkler and no cache lookup.
   */
  private mayBeAlike(t: number, u: number, tl: number, ul: number): boolean {
    const a = this.tokenLetters[t]
    const b = this.tokenLetters[u]
    const m = Math.min(tl - bitCount(a & ~b), ul - bitCount(b & ~a))
    return m > 0 && m / tl + m / ul >= 1.5 - 1e-9
  }

  /**
   * Jaro–Winkler of two tokens when at least FUZZY_TOKEN, else 0, cached per token pair in a
   * direct-mapped table: the same names meet again and again.
   */
  private fuzzy(t: number, u: number): number {
    const a = t < u ? t : u
    const b = t < u ? u : t
    const slot = (Math.imul(a, 0x9e3779b1) ^ Math.imul(b, 0x85ebca6b)) >>> (32 - CACHE_BITS)
    if (this.cacheA[slot] === a && this.cacheB[slot] === b) return this.cacheS[slot]
    const codes = this.tokenCodes
    const start = this.tokenStart
    const jw = jaroWinkler(codes, start[a], this.tokenLength[a], codes, start[b], this.tokenLength[b])
    const s = jw >= FUZZY_TOKEN ? jw : 0
    this.cacheA[slot] = a
    this.cacheB[slot] = b
    this.cacheS[slot] = s
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
