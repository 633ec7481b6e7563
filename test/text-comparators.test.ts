// The text comparators of probabilistic passes (src/engine/match/text/) against references:
// Jaro and Jaro–Winkler against DuckDB's jaro_similarity / jaro_winkler_similarity, trigram
// similarity against runtime.ts's pg_trgm-style trigramSimilarity, token measures against plain
// Set arithmetic, on random strings (fast-check) and on cases written out.

import { DuckDBInstance } from '@duckdb/node-api'
import fc from 'fast-check'
import t from 'tap'
import { codesOf, jaro, jaroWinkler } from '../src/engine/match/text/jaro.js'
import { TextMeasures } from '../src/engine/match/text/measures.js'
import { normalizeText, prepareText, Vocabulary } from '../src/engine/match/text/prepared.js'
import { trigramSimilarity } from '../src/engine/plan/runtime.js'

const SEED = Number(process.env.SEED ?? 1524)
const close = (a: number, b: number) => Math.abs(a - b) < 1e-9

const jw = (a: string, b: string) => {
  const x = codesOf(a)
  const y = codesOf(b)
  return jaroWinkler(x, 0, x.length, y, 0, y.length)
}
const j = (a: string, b: string) => {
  const x = codesOf(a)
  const y = codesOf(b)
  return jaro(x, 0, x.length, y, 0, y.length)
}

t.test('Jaro–Winkler on textbook cases', async (t) => {
  t.ok(close(j('MARTHA', 'MARHTA'), 0.9444444444444445), 'MARTHA/MARHTA jaro')
  t.ok(close(jw('MARTHA', 'MARHTA'), 0.9611111111111111), 'MARTHA/MARHTA')
  t.ok(close(jw('DIXON', 'DICKSONX'), 0.8133333333333332), 'DIXON/DICKSONX')
  t.ok(close(jw('DWAYNE', 'DUANE'), 0.84), 'DWAYNE/DUANE')
  t.equal(jw('', ''), 0, 'empty strings share nothing (as DuckDB)')
  t.equal(jw('A', ''), 0)
  t.equal(jw('ABC', 'XYZ'), 0)
  t.equal(jw('CORISZEL', 'CORISZEL'), 1)
})

t.test('Jaro and Jaro–Winkler equal DuckDB on random ASCII strings', async (t) => {
  const db = await DuckDBInstance.create(':memory:')
  const conn = await db.connect()
  t.teardown(() => {
    conn.closeSync()
    db.closeSync()
  })
  // small alphabets make matches, transpositions and shared prefixes common; ASCII only, as
  // DuckDB compares UTF-8 bytes where Concord compares characters
  const word = fc.string({ unit: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'A', ' '), maxLength: 14 })
  // past 32 characters the comparison scans windows instead of using bit masks: both are checked
  const long = fc.string({ unit: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'A', ' '), minLength: 20, maxLength: 70 })
  const pairs = [
    ...fc.sample(fc.tuple(word, word), { seed: SEED, numRuns: 3000 }),
    ...fc.sample(fc.tuple(long, long), { seed: SEED, numRuns: 1000 }),
    ...fc.sample(fc.tuple(word, long), { seed: SEED, numRuns: 1000 }),
  ]
  pairs.push(['CRATE', 'TRACE'], ['abcdefgh', 'hgfedcba'], ['a', 'a'], ['ab', 'ba'], ['aaaa', 'aaab'])
  const values = pairs.map(([a, b]) => `(${sql(a)}, ${sql(b)})`).join(', ')
  const reader = await conn.runAndReadAll(
    `SELECT jaro_similarity(a, b), jaro_winkler_similarity(a, b) FROM (VALUES ${values}) v(a, b)`,
  )
  const rows = reader.getRows() as [number, number][]
  let differing = 0
  const examples: string[] = []
  pairs.forEach(([a, b], k) => {
    const [dj, djw] = rows[k]
    if (!close(j(a, b), dj) || !close(jw(a, b), djw)) {
      differing++
      if (examples.length < 5) examples.push(`${JSON.stringify([a, b])}: ${j(a, b)}/${jw(a, b)} vs ${dj}/${djw}`)
    }
  })
  t.equal(differing, 0, `every pair agrees (seed ${SEED}); ${examples.join('; ')}`)
})

const sql = (s: string) => `'${s.replace(/'/g, "''")}'`

function prepared(left: (string | null)[], right: (string | null)[], tf = false) {
  const vocabulary = new Vocabulary()
  const trigrams = new Map<number | string, number>()
  const l = prepareText(left, vocabulary, { trigrams })
  const r = prepareText(right, vocabulary, { trigrams })
  return new TextMeasures(l, r, vocabulary, tf)
}

t.test('normalization: case, accents, punctuation and spaces', async (t) => {
  t.equal(normalizeText('  from  Ferval-Deca / ref:75828 '), 'FROM FERVAL DECA REF 75828')
  t.equal(normalizeText('Café Müller'), 'CAFE MULLER')
  t.equal(normalizeText('---'), '')
  const m = prepared(['Ferval, Deca', null, '***'], ['FERVAL DECA', 'x', 'y'])
  t.equal(m.measure('exact', 0, 0), 1)
  t.ok(Number.isNaN(m.measure('jaro_winkler', 1, 1)), 'NULL is no evidence')
  t.ok(Number.isNaN(m.measure('token_set', 2, 2)), 'text without a letter or digit is no evidence')
})

t.test('trigram similarity equals the pg_trgm-style reference', async (t) => {
  const word = fc.string({
    unit: fc.constantFrom('a', 'b', 'C', 'd', ' ', '-', '1', 'ü', '𝔸'),
    minLength: 1,
    maxLength: 16,
  })
  const pairs = fc.sample(fc.tuple(word, word), { seed: SEED, numRuns: 2000 })
  const m = prepared(
    pairs.map((p) => p[0]),
    pairs.map((p) => p[1]),
  )
  let differing = 0
  pairs.forEach(([a, b], k) => {
    const got = m.measure('trigram', k, k)
    if (Number.isNaN(got)) return // no letter or digit on one side: no evidence
    if (!close(got, trigramSimilarity(a, b))) differing++
  })
  t.equal(differing, 0)
})

t.test('token measures equal Set arithmetic, with and without idf weights', async (t) => {
  const token = fc.constantFrom('ref', 'from', 'holmar', 'coriszel', 'h', 'sal', 'corizsel', 'x1')
  const text = fc.array(token, { minLength: 1, maxLength: 5 }).map((ts) => ts.join(' '))
  const pairs = fc.sample(fc.tuple(text, text), { seed: SEED, numRuns: 1500 })
  const left = pairs.map((p) => p[0])
  const right = pairs.map((p) => p[1])
  for (const tf of [false, true]) {
    const m = prepared(left, right, tf)
    // reference weights from the same document frequencies, computed from the strings
    const df = new Map<string, number>()
    for (const s of [...left, ...right])
      for (const w of new Set(s.toUpperCase().split(' '))) df.set(w, (df.get(w) ?? 0) + 1)
    const n = left.length + right.length
    const weight = (w: string) => (tf ? Math.log(n / df.get(w)!) : 1)
    const sum = (ws: Iterable<string>) => [...ws].reduce((a, w) => a + weight(w), 0)
    let differing = 0
    pairs.forEach(([a, b], k) => {
      const A = new Set(a.toUpperCase().split(' '))
      const B = new Set(b.toUpperCase().split(' '))
      const both = [...A].filter((w) => B.has(w))
      const union = new Set([...A, ...B])
      const jac = sum(union) > 0 ? sum(both) / sum(union) : both.length > 0 ? 1 : 0
      const lighter = Math.min(sum(A), sum(B))
      const over = lighter > 0 ? sum(both) / lighter : both.length > 0 ? 1 : 0
      if (!close(m.measure('token_jaccard', k, k), jac)) differing++
      if (!close(m.measure('token_overlap', k, k), over)) differing++
      // token_set: each token's best partner (equal, initial, or Jaro–Winkler ≥ 0.9)
      const best = (w: string, other: Set<string>) => {
        let s = 0
        for (const o of other) {
          if (o === w) return 1
          if (w.length === 1) {
            if (o[0] === w) s = 1
          } else if (o.length > 1) {
            const v = jw(w, o)
            if (v >= 0.9) s = Math.max(s, v)
          }
        }
        return s
      }
      const share = (X: Set<string>, Y: Set<string>) => {
        const total = sum(X)
        return total > 0 ? [...X].reduce((a, w) => a + weight(w) * best(w, Y), 0) / total : 0
      }
      if (!close(m.measure('token_set', k, k), Math.max(share(A, B), share(B, A)))) differing++
    })
    t.equal(differing, 0, `tf ${tf}`)
  }
})

t.test('token_set reads abbreviated, reordered and misspelt names as the same name', async (t) => {
  const m = prepared(
    ['H CORISZEL sal', 'ROSZELCOR D rent', 'XANEL ULXAN'],
    ['FROM CORISZEL HOLMAR', 'FROM DEYOR ROZSELCOR', 'X ULXAN'],
  )
  t.ok(m.measure('token_set', 0, 0) > 0.6, 'initial and reordered surname')
  t.ok(m.measure('token_set', 1, 1) > 0.5, 'a swapped letter')
  t.equal(m.measure('token_set', 2, 2), 1, 'X is the initial of XANEL')
  t.ok(m.measure('token_set', 0, 1) < 0.1, 'different people')
})

t.test('token_set finds every pair of words at Jaro–Winkler 0.9 or more (its letter filter drops none)', async (t) => {
  // each word against a copy with a letter swapped, changed, dropped or added: many pairs near 0.9
  const letter = fc.constantFrom('A', 'B', 'C', 'D', 'E', 'K', 'R', 'S', '1', '5', '9')
  const word = fc.string({ unit: letter, minLength: 3, maxLength: 12 })
  const edit = fc
    .tuple(word, fc.nat(), letter, fc.constantFrom('swap', 'change', 'drop', 'add'))
    .map(([w, at, c, op]) => {
      const k = at % w.length
      const b =
        op === 'swap' && k + 1 < w.length
          ? w.slice(0, k) + w[k + 1] + w[k] + w.slice(k + 2)
          : op === 'change'
            ? w.slice(0, k) + c + w.slice(k + 1)
            : op === 'drop'
              ? w.slice(0, k) + w.slice(k + 1)
              : w.slice(0, k) + c + w.slice(k)
      return [w, b] as [string, string]
    })
  const pairs = fc.sample(edit, { seed: SEED, numRuns: 4000 })
  const m = prepared(
    pairs.map((p) => p[0]),
    pairs.map((p) => p[1]),
  )
  let fuzzy = 0
  let differing = 0
  pairs.forEach(([a, b], k) => {
    const s = jw(a, b)
    const want = a === b ? 1 : s >= 0.9 ? s : 0
    if (want > 0 && want < 1) fuzzy++
    if (!close(m.measure('token_set', k, k), want)) differing++
  })
  t.equal(differing, 0)
  t.ok(fuzzy > 100, `${fuzzy} pairs alike but not equal`)
})
