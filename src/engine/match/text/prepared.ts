// Free text prepared once per column for fast comparisons: every value normalized (upper case,
// accents dropped, runs of anything but letters and digits one space) into one Uint16Array of
// code units, split into tokens interned in a vocabulary shared by both sides (each row's token
// ids sorted, so two rows' common tokens are a merge), and, when asked, into pg_trgm trigrams.
// Comparing then reads typed arrays only: no strings, sets or regular expressions per pair.

/** Tokens of both sides of a comparison, interned, with how many records hold each. */
export class Vocabulary {
  private readonly ids = new Map<string, number>()
  /** Code units of every token, token k at codes[start[k], start[k + 1]). */
  codes = new Uint16Array(1024)
  start: number[] = [0]
  /** Records (of both sides) holding each token. */
  df: number[] = []
  /** Records prepared, both sides. */
  records = 0
  private weights: Float64Array | null = null

  get size(): number {
    return this.df.length
  }

  /** The id of a token given as code units codes[from, to). */
  intern(text: string): number {
    let id = this.ids.get(text)
    if (id === undefined) {
      id = this.df.length
      this.ids.set(text, id)
      const end = this.start[id]
      if (end + text.length > this.codes.length) {
        const bigger = new Uint16Array(Math.max(this.codes.length * 2, end + text.length))
        bigger.set(this.codes)
        this.codes = bigger
      }
      for (let k = 0; k < text.length; k++) this.codes[end + k] = text.charCodeAt(k)
      this.start.push(end + text.length)
      this.df.push(0)
      this.weights = null
    }
    return id
  }

  idOf(token: string): number | undefined {
    return this.ids.get(token)
  }

  tokenLength(id: number): number {
    return this.start[id + 1] - this.start[id]
  }

  /**
   * Inverse document frequency of each token, ln(records / records holding it): a token every
   * record holds weighs nothing, a name held by two records weighs most. Term-frequency
   * adjustment for token comparisons (a shared "REF" or "FROM" proves little, a shared surname much).
   */
  idf(): Float64Array {
    if (this.weights === null) {
      const w = new Float64Array(this.df.length)
      const n = Math.max(1, this.records)
      for (let k = 0; k < w.length; k++) w[k] = Math.log(n / Math.max(1, this.df[k]))
      this.weights = w
    }
    return this.weights
  }
}

/** One side's values of a text comparison, prepared. */
export interface PreparedText {
  length: number
  /** 1 where the value is NULL or has no letter or digit: such a pair is no evidence either way. */
  empty: Uint8Array
  /** Normalized text of row r: codes[start[r], start[r + 1]). */
  codes: Uint16Array
  start: Int32Array
  /** Token ids of row r, ascending and distinct: tokens[tokenStart[r], tokenStart[r + 1]). */
  tokens: Int32Array
  tokenStart: Int32Array
  /** Trigram ids, as tokens (only when prepared with trigrams). */
  trigrams?: Int32Array
  trigramStart?: Int32Array
}

const SPACE = 32

/** A value's letters and digits in upper case, accents dropped, other runs one space, trimmed. */
export function normalizeText(s: string): string {
  let ascii = true
  for (let k = 0; k < s.length; k++) {
    if (s.charCodeAt(k) > 127) {
      ascii = false
      break
    }
  }
  const upper = ascii
    ? s.toUpperCase()
    : s
        .normalize('NFKD')
        .replace(/\p{M}+/gu, '')
        .toUpperCase()
  let out = ''
  let gap = false
  for (let k = 0; k < upper.length; k++) {
    const c = upper.charCodeAt(k)
    const word = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c > 127 && isWordChar(upper[k]))
    if (word) {
      if (gap && out.length > 0) out += ' '
      out += upper[k]
      gap = false
    } else gap = true
  }
  return out
}

const WORD = /[\p{L}\p{N}]/u
const wordChars = new Map<string, boolean>()
function isWordChar(ch: string): boolean {
  let known = wordChars.get(ch)
  if (known === undefined) {
    known = WORD.test(ch)
    if (wordChars.size < 65_536) wordChars.set(ch, known)
  }
  return known
}

/**
 * Prepares one side's values: normalized text, token ids (interned in `vocabulary`, whose record
 * counts it updates) and, with `trigrams`, pg_trgm trigram ids (interned in `trigramIds`).
 */
export function prepareText(
  values: ArrayLike<string | null>,
  vocabulary: Vocabulary,
  options: { trigrams?: Map<number | string, number> } = {},
): PreparedText {
  const n = values.length
  const empty = new Uint8Array(n)
  const start = new Int32Array(n + 1)
  const tokenStart = new Int32Array(n + 1)
  let codes = new Uint16Array(Math.max(16, n * 12))
  let tokens = new Int32Array(Math.max(16, n * 3))
  let used = 0
  let tokenCount = 0
  const grams = options.trigrams
  const trigramStart = grams ? new Int32Array(n + 1) : undefined
  let trigrams = grams ? new Int32Array(Math.max(16, n * 12)) : undefined
  let gramCount = 0
  const rowTokens: number[] = []
  const rowGrams: number[] = []
  vocabulary.records += n
  for (let r = 0; r < n; r++) {
    const raw = values[r]
    const text = raw === null ? '' : normalizeText(raw)
    if (text.length === 0) empty[r] = 1
    if (used + text.length > codes.length) codes = grow16(codes, used + text.length)
    for (let k = 0; k < text.length; k++) codes[used + k] = text.charCodeAt(k)
    used += text.length
    start[r + 1] = used
    rowTokens.length = 0
    let from = 0
    for (let k = 0; k <= text.length; k++) {
      if (k === text.length || text.charCodeAt(k) === SPACE) {
        if (k > from) rowTokens.push(vocabulary.intern(text.slice(from, k)))
        from = k + 1
      }
    }
    rowTokens.sort((a, b) => a - b)
    let distinct = 0
    for (let k = 0; k < rowTokens.length; k++) {
      if (k > 0 && rowTokens[k] === rowTokens[k - 1]) continue
      rowTokens[distinct++] = rowTokens[k]
    }
    if (tokenCount + distinct > tokens.length) tokens = grow32(tokens, tokenCount + distinct)
    for (let k = 0; k < distinct; k++) {
      tokens[tokenCount++] = rowTokens[k]
      vocabulary.df[rowTokens[k]]++
    }
    tokenStart[r + 1] = tokenCount
    if (grams && trigramStart && trigrams) {
      trigramsOf(raw, grams, rowGrams)
      let into: Int32Array<ArrayBuffer> = trigrams
      if (gramCount + rowGrams.length > into.length) into = trigrams = grow32(into, gramCount + rowGrams.length)
      for (const g of rowGrams) into[gramCount++] = g
      trigramStart[r + 1] = gramCount
    }
  }
  const out: PreparedText = {
    length: n,
    empty,
    codes: codes.subarray(0, used),
    start,
    tokens: tokens.subarray(0, tokenCount),
    tokenStart,
  }
  if (trigrams && trigramStart) {
    out.trigrams = trigrams.subarray(0, gramCount)
    out.trigramStart = trigramStart
  }
  return out
}

/**
 * pg_trgm's trigrams of a value, as ids ascending and distinct: lower case, words of letters and
 * digits, each padded with two spaces before and one after (as runtime.ts's trigramSimilarity).
 */
function trigramsOf(value: string | null, ids: Map<number | string, number>, out: number[]): void {
  out.length = 0
  if (value === null) return
  for (const word of value.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (!word) continue
    const chars = [...`  ${word} `].map((c) => c.codePointAt(0)!)
    for (let k = 0; k + 3 <= chars.length; k++) {
      // three code units of the basic plane in one exact number (below 2^48); beyond it, text
      const [a, b, c] = [chars[k], chars[k + 1], chars[k + 2]]
      const key = a < 65_536 && b < 65_536 && c < 65_536 ? (a * 65_536 + b) * 65_536 + c : `${a},${b},${c}`
      let id = ids.get(key)
      if (id === undefined) {
        id = ids.size
        ids.set(key, id)
      }
      out.push(id)
    }
  }
  out.sort((a, b) => a - b)
  let distinct = 0
  for (let k = 0; k < out.length; k++) if (k === 0 || out[k] !== out[k - 1]) out[distinct++] = out[k]
  out.length = distinct
}

function grow16(a: Uint16Array<ArrayBuffer>, need: number): Uint16Array<ArrayBuffer> {
  const b = new Uint16Array(Math.max(need, a.length * 2))
  b.set(a)
  return b
}

function grow32(a: Int32Array<ArrayBuffer>, need: number): Int32Array<ArrayBuffer> {
  const b = new Int32Array(Math.max(need, a.length * 2))
  b.set(a)
  return b
}
