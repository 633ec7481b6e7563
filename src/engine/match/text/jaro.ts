// Jaro and Jaro–Winkler similarity over UTF-16 code units held in one typed array per side
// (text/prepared.ts), without allocating per comparison: the matched-flags scratch is reused.
// The definitions are the standard ones (Winkler 1990) as DuckDB's jaro_winkler_similarity
// computes them: match window max(|a|, |b|) / 2 - 1, transpositions halved, a common prefix of up
// to 4 characters scaled by 0.1, the prefix applied only when the Jaro similarity exceeds 0.7.
// test/text-comparators.test.ts checks both against DuckDB on random ASCII strings (DuckDB
// compares UTF-8 bytes, Concord characters: they differ where a character takes several bytes).

let flagsA = new Uint8Array(64)
let flagsB = new Uint8Array(64)
/** Per code unit, the positions where it occurs in the longer string (bit k = position k). */
const positions = new Int32Array(65_536)

/** Jaro similarity of a[aStart, aStart + aLen) and b[bStart, bStart + bLen), in 0..1. */
export function jaro(
  a: Uint16Array,
  aStart: number,
  aLen: number,
  b: Uint16Array,
  bStart: number,
  bLen: number,
): number {
  if (aLen === 0 || bLen === 0) return 0 // as DuckDB: nothing to match
  // the shorter one first: its characters look for partners in the longer one's window
  if (aLen > bLen) return jaro(b, bStart, bLen, a, aStart, aLen)
  if (aLen === bLen && equalRange(a, aStart, b, bStart, aLen)) return 1
  return bLen <= 32 ? jaroBits(a, aStart, aLen, b, bStart, bLen) : jaroScan(a, aStart, aLen, b, bStart, bLen)
}

/**
 * Jaro with the longer string (at most 32 units) as bit masks: a character's partner is the
 * lowest free position of the same character inside its window, one AND and one lowest-bit per
 * character instead of a scan of the window. Same matches as the scan, so the same result.
 */
function jaroBits(a: Uint16Array, aStart: number, aLen: number, b: Uint16Array, bStart: number, bLen: number): number {
  const window = Math.max(0, (bLen >> 1) - 1)
  for (let j = 0; j < bLen; j++) positions[b[bStart + j]] |= 1 << j
  let takenB = 0
  let matches = 0
  let matchedA = 0 // bit i: a[i] found a partner (a has at most bLen <= 32 units)
  for (let i = 0; i < aLen; i++) {
    const lo = i > window ? i - window : 0
    const hi = Math.min(bLen - 1, i + window)
    if (lo > hi) break
    const span = hi - lo + 1
    const inWindow = span >= 32 ? -1 : ((1 << span) - 1) << lo
    const free = positions[a[aStart + i]] & ~takenB & inWindow
    if (free !== 0) {
      takenB |= free & -free
      matchedA |= 1 << i
      matches++
    }
  }
  for (let j = 0; j < bLen; j++) positions[b[bStart + j]] = 0
  if (matches === 0) return 0
  // transpositions: the k-th matched character of a against the k-th matched of b
  let transposed = 0
  let restB = takenB
  for (let i = 0; i < aLen; i++) {
    if ((matchedA & (1 << i)) === 0) continue
    const j = 31 - Math.clz32(restB & -restB)
    restB &= restB - 1
    if (a[aStart + i] !== b[bStart + j]) transposed++
  }
  const t = transposed >> 1
  return (matches / aLen + matches / bLen + (matches - t) / matches) / 3
}

/** Jaro by scanning each window (strings longer than 32 units). */
function jaroScan(a: Uint16Array, aStart: number, aLen: number, b: Uint16Array, bStart: number, bLen: number): number {
  const window = Math.max(0, (bLen >> 1) - 1)
  if (flagsA.length < aLen) flagsA = new Uint8Array(aLen * 2)
  if (flagsB.length < bLen) flagsB = new Uint8Array(bLen * 2)
  const fa = flagsA
  const fb = flagsB
  fa.fill(0, 0, aLen)
  fb.fill(0, 0, bLen)
  let matches = 0
  for (let i = 0; i < aLen; i++) {
    const c = a[aStart + i]
    const lo = i > window ? i - window : 0
    const hi = Math.min(bLen, i + window + 1)
    for (let j = lo; j < hi; j++) {
      if (fb[j] === 0 && b[bStart + j] === c) {
        fa[i] = 1
        fb[j] = 1
        matches++
        break
      }
    }
  }
  if (matches === 0) return 0
  let transposed = 0
  for (let i = 0, j = 0; i < aLen; i++) {
    if (fa[i] === 0) continue
    while (fb[j] === 0) j++
    if (a[aStart + i] !== b[bStart + j]) transposed++
    j++
  }
  const t = transposed >> 1
  return (matches / aLen + matches / bLen + (matches - t) / matches) / 3
}

/** Jaro–Winkler similarity: Jaro raised by a shared prefix (at most 4 characters, weight 0.1). */
export function jaroWinkler(
  a: Uint16Array,
  aStart: number,
  aLen: number,
  b: Uint16Array,
  bStart: number,
  bLen: number,
): number {
  const sim = jaro(a, aStart, aLen, b, bStart, bLen)
  if (sim <= 0.7) return sim
  const max = Math.min(4, aLen, bLen)
  let prefix = 0
  while (prefix < max && a[aStart + prefix] === b[bStart + prefix]) prefix++
  return sim + prefix * 0.1 * (1 - sim)
}

function equalRange(a: Uint16Array, aStart: number, b: Uint16Array, bStart: number, n: number): boolean {
  for (let k = 0; k < n; k++) if (a[aStart + k] !== b[bStart + k]) return false
  return true
}

/** Code units of a JS string, for comparing strings that are not in a prepared column. */
export function codesOf(s: string): Uint16Array {
  const out = new Uint16Array(s.length)
  for (let k = 0; k < s.length; k++) out[k] = s.charCodeAt(k)
  return out
}
