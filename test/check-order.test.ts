// Cheap conjuncts first changes how much is computed, never what comes out. On random tables
// and recipes mixing hash and band passes with costly conjuncts (similarity(), levenshtein(), a
// LIKE pattern built from the row), a run with the ordered, lazy checks gives the same matches,
// scores, pass reports and nearest misses as one that evaluates every conjunct of every pair in
// the order written. And a similarity is computed once per pair that needs it: the candidate
// check's value serves the score, and the evidence reuses the join's.

import fc from 'fast-check'
import t from 'tap'
import { tableFromRows } from '../src/engine/load/json.js'
import { similarityComputed, trigramSimilarity } from '../src/engine/plan/runtime.js'
import { reconcile, type RunResult } from '../src/engine/reconcile.js'
import type { RecipePass } from '../src/recipes/schema.js'
import { type Row, recipeOf } from './helpers/engine.js'

const WORDS = ['ACME', 'NORTH', 'WIND', 'RENT', 'INVOICE', 'SMITH', 'JOHN', 'TRADING', 'LTD', 'SMYTH']

interface Rec {
  ref: string | null
  cents: number | null
  day: number
  memo: string[] | null
}
const recArb = fc.record({
  ref: fc.option(fc.constantFrom('A', 'B', 'C'), { nil: null, freq: 8 }),
  cents: fc.option(fc.integer({ min: -3000, max: 3000 }), { nil: null, freq: 10 }),
  day: fc.integer({ min: 0, max: 12 }),
  memo: fc.option(fc.array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 4 }), { nil: null, freq: 10 }),
})
const rows = (recs: Rec[], p: string): Row[] =>
  // a first fixed record types every column, whatever the random ones hold
  [{ ref: 'A', cents: 1000, day: 0, memo: ['ACME'] }, ...recs].map((r, k) => ({
    id: `${p}${k}`,
    ref: r.ref,
    amount: r.cents === null ? null : (r.cents / 100).toFixed(2),
    date: `2024-03-${String(r.day + 1).padStart(2, '0')}`,
    memo: r.memo === null ? null : r.memo.join(' '),
    word: r.memo === null ? null : r.memo[0].slice(0, 3),
  }))

const PASSES: RecipePass[] = [
  {
    name: 'named',
    pattern: '1:1',
    when: 'l.ref = r.ref AND similarity(l.memo, r.memo) >= 0.4 AND ABS(l.amount - r.amount) <= 5.00',
  },
  {
    name: 'banded',
    pattern: '1:1',
    when: "ABS(l.amount - r.amount) <= 0.1 * ABS(l.amount) AND r.date BETWEEN l.date AND l.date + INTERVAL '5 days' AND similarity(l.memo, r.memo) >= 0.3",
  },
  {
    name: 'prefixed',
    pattern: '1:1',
    when: "l.ref = r.ref AND r.memo LIKE l.word || '%' AND r.date >= l.date",
  },
  {
    name: 'edited',
    pattern: '1:1',
    when: 'r.date BETWEEN l.date - 2 AND l.date + 2 AND levenshtein(l.memo, r.memo) <= 8 AND l.amount >= r.amount',
  },
  {
    name: 'split',
    pattern: '1:N',
    when: 'l.ref = r.ref AND similarity(l.memo, r.memo) >= 0.2',
    aggregate: { sum: 'r.amount', equals: 'l.amount', tolerance: 0.05, max_group: 3 },
  },
]

/** Right records made from left ones (a word changed, the amount and date moved a little). */
const tablesArb = fc.array(recArb, { minLength: 1, maxLength: 20 }).chain((left) =>
  fc
    .array(
      fc.oneof(
        recArb,
        fc
          .record({
            n: fc.nat(left.length - 1),
            dc: fc.integer({ min: -300, max: 300 }),
            dd: fc.integer({ min: -2, max: 6 }),
            w: fc.constantFrom(...WORDS),
          })
          .map(({ n, dc, dd, w }) => ({
            ...left[n],
            cents: left[n].cents === null ? null : left[n].cents + dc,
            day: Math.max(0, left[n].day + dd),
            memo: left[n].memo === null ? null : [...left[n].memo.slice(1), w],
          })),
      ),
      { minLength: 1, maxLength: 20 },
    )
    .map((right) => ({ left, right })),
)

const recipeArb = fc
  .subarray(PASSES, { minLength: 1, maxLength: 3 })
  .chain((passes) => fc.shuffledSubarray(passes, { minLength: passes.length, maxLength: passes.length }))

/** Everything a run produces but its timings. */
function outcome(r: RunResult) {
  const m = r.matches
  const list = (a: ArrayLike<number>, n = m.count) => Array.from(a).slice(0, n)
  return {
    matches: {
      pass: list(m.pass),
      score: list(m.score),
      ambiguous: list(m.ambiguous),
      amount: list(m.amountDelta).map(String),
      days: list(m.daysDelta).map(String),
      left: [list(m.leftStart, m.count + 1), Array.from(m.leftRows)],
      right: [list(m.rightStart, m.count + 1), Array.from(m.rightRows)],
    },
    unmatched: [r.unmatchedLeft, r.unmatchedRight].map((u) => ({
      rows: Array.from(u.rows),
      candidate: Array.from(u.candidate),
      pass: Array.from(u.pass),
      conjunct: Array.from(u.conjunct),
      taken: Array.from(u.candidateTaken),
    })),
    passes: r.summary.passes.map(({ ms: _, ...p }) => p),
  }
}

t.test('ordered, lazy checks give what evaluating every conjunct as written gives', async (t) => {
  let compared = 0
  let nearMisses = 0
  fc.assert(
    fc.property(tablesArb, recipeArb, ({ left, right }, passes) => {
      const recipe = recipeOf(passes.map((p, k) => ({ ...p, after: k ? [passes[k - 1].name] : [] })))
      const run = (cheapFirst: boolean) =>
        reconcile(recipe, tableFromRows(rows(left, 'L')), tableFromRows(rows(right, 'R')), { cheapFirst })
      const lazy = run(true)
      const full = run(false)
      if (lazy.summary.status !== 'completed') throw new Error(JSON.stringify(lazy.summary.passes))
      t.strictSame(outcome(lazy), outcome(full))
      compared++
      nearMisses += Array.from(lazy.unmatchedLeft.candidate).filter((c) => c >= 0).length
    }),
    { numRuns: 200 },
  )
  t.equal(compared, 200)
  t.ok(nearMisses > 200, `${nearMisses} nearest misses compared`)
})

t.test(
  'a band pass computes a similarity once per pair within its cheap conjuncts, and its scores reuse them',
  async (t) => {
    const left = rows(
      Array.from({ length: 60 }, (_, k) => ({
        ref: null,
        cents: 1000 + (k % 7) * 30,
        day: k % 10,
        memo: [WORDS[k % WORDS.length], WORDS[(k * 3) % WORDS.length]],
      })),
      'L',
    )
    const right = rows(
      Array.from({ length: 60 }, (_, k) => ({
        ref: null,
        cents: 1000 + (k % 5) * 40,
        day: (k * 7) % 12,
        memo: [WORDS[(k * 7) % WORDS.length], WORDS[k % WORDS.length], 'REF'],
      })),
      'R',
    )
    const banded = PASSES[1]
    // pairs within amount ±10% and the 5-day window, counted here in cents and days
    const cents = (x: Row) => (x.amount === null ? null : Math.round(Number(x.amount) * 100))
    const dayOf = (x: Row) => Number(String(x.date).slice(8))
    let within = 0
    let satisfied = 0
    for (const l of left)
      for (const r of right) {
        const a = cents(l)
        const b = cents(r)
        if (a === null || b === null || Math.abs(a - b) * 10 > Math.abs(a)) continue
        if (dayOf(r) < dayOf(l) || dayOf(r) > dayOf(l) + 5) continue
        within++
        if (l.memo !== null && r.memo !== null && trigramSimilarity(String(l.memo), String(r.memo)) >= 0.3) satisfied++
      }
    const before = similarityComputed.count
    const result = reconcile(recipeOf([banded]), tableFromRows(left), tableFromRows(right))
    const computed = similarityComputed.count - before
    t.equal(result.summary.passes[0].band!.candidates, satisfied)
    t.ok(result.summary.matches > 10 && result.unmatchedLeft.rows.length > 5, 'both matches and misses to explain')
    // the check's, and nothing more: the scores of the candidates and the evidence add none
    t.equal(computed, within, `${computed} similarities for ${within} pairs in both ranges`)
    const again = similarityComputed.count
    reconcile(recipeOf([banded]), tableFromRows(left), tableFromRows(right), { cheapFirst: false })
    t.ok(similarityComputed.count - again > within, 'evaluating everything as written computes more')
  },
)
