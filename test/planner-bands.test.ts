// The planner's bands: which conjuncts become band options (relative tolerances included, with
// the right column sorted), which option a run chooses on the data, and that a band only prunes —
// it never drops a pair the predicate accepts, negative amounts and floats included.

import fc from 'fast-check'
import t from 'tap'
import { nlToSql } from '../src/ai/tools/nl_to_sql.js'
import type { ColumnT } from '../src/ai/schemas.js'
import { tableFromRows } from '../src/engine/load/json.js'
import { PROBE_SAMPLE, SORTED_SAMPLE } from '../src/engine/match/band-choice.js'
import { bandJoin } from '../src/engine/match/bandpass.js'
import { bandPairs } from '../src/engine/match/join.js'
import { preparePass } from '../src/engine/match/pass.js'
import { planPass } from '../src/engine/plan/plan.js'
import { reconcile } from '../src/engine/reconcile.js'
import { parsePredicate } from '../src/language/predicate.js'
import { printExpr } from '../src/language/print.js'
import { explainRecipe } from '../src/recipes/explain.js'
import { validateRecipe } from '../src/recipes/validate.js'
import type { ColumnInfo } from '../src/engine/data/types.js'
import { type Row, recipeOf } from './helpers/engine.js'

const columns = (spec: string): ColumnInfo[] =>
  spec.split(' ').map((c) => {
    const [name, type] = c.split(':')
    return { name, type: type as ColumnInfo['type'], nullable: true, ...(type === 'decimal' ? { scale: 2 } : {}) }
  })
const schemas = {
  l: columns('id:string a:decimal d:date memo:string'),
  r: columns('id:string a:decimal d:date memo:string'),
}
const typeOf = (side: 'l' | 'r', c: string) => schemas[side].find((x) => x.name === c)?.type

/** The band options of a predicate, as text. */
function bands(when: string): string[] {
  return planPass(parsePredicate(when), when, typeOf).bands.map((b) => {
    const lo = b.lo ? `${b.loStrict ? '(' : '['}${printExpr(b.lo)}` : '(-∞'
    const hi = b.hi ? `${printExpr(b.hi)}${b.hiStrict ? ')' : ']'}` : '+∞)'
    return `${b.side}.${b.column} in ${lo}, ${hi}`
  })
}

t.test('relative tolerances are bands on the column whose bounds read only the other side', async (t) => {
  t.same(bands('ABS(l.a - r.a) <= 0.1 * ABS(l.a)'), ['r.a in [l.a - (0.1 * ABS(l.a)), l.a + (0.1 * ABS(l.a))]'])
  t.same(bands('ABS(r.a - l.a) <= 0.1 * ABS(l.a)'), ['r.a in [l.a - (0.1 * ABS(l.a)), l.a + (0.1 * ABS(l.a))]'])
  // relative to the right amount: only the left column can be sorted, each right record probes it
  t.same(bands('ABS(r.a - l.a) <= 0.02 * ABS(r.a)'), ['l.a in [r.a - (0.02 * ABS(r.a)), r.a + (0.02 * ABS(r.a))]'])
  t.same(bands('ABS(l.a - r.a) <= 0.02 * ABS(r.a)'), ['l.a in [r.a - (0.02 * ABS(r.a)), r.a + (0.02 * ABS(r.a))]'])
  t.same(bands('0.1 * ABS(l.a) >= ABS(l.a - r.a)'), ['r.a in [l.a - (0.1 * ABS(l.a)), l.a + (0.1 * ABS(l.a))]'])
  t.same(bands('ABS(l.a - r.a) < 0.1 * ABS(l.a)'), ['r.a in (l.a - (0.1 * ABS(l.a)), l.a + (0.1 * ABS(l.a)))'])
  t.same(bands('tolerance_match(l.a, r.a, 0.1 * ABS(l.a))'), [
    'r.a in [l.a - (0.1 * ABS(l.a)), l.a + (0.1 * ABS(l.a))]',
  ])
  t.same(bands('r.a BETWEEN l.a * 0.9 AND l.a * 1.1'), ['r.a in [l.a * 0.9, l.a * 1.1]'])
  t.same(bands('r.a <= l.a * 1.1 AND r.a >= l.a * 0.9'), ['r.a in [l.a * 0.9, l.a * 1.1]'])
  t.same(bands('ABS(l.a - r.a) <= 0.01'), ['r.a in [l.a - 0.01, l.a + 0.01]'], 'a constant tolerance, as before')
  // a tolerance reading both sides bounds neither column by the other side alone
  t.same(bands('ABS(l.a - r.a) <= 0.1 * ABS(l.a + r.a)'), [])
  t.same(bands('ABS(l.a - r.a) <= 0.1 * ABS(l.a) AND l.memo = r.memo'), [], 'a key: a hash join, no band')
})

t.test('every column with a range is a band option, in the order written', async (t) => {
  t.same(bands("r.d BETWEEN l.d AND l.d + INTERVAL '21 days' AND ABS(l.a - r.a) <= 0.1 * ABS(l.a)"), [
    "r.d in [l.d, l.d + INTERVAL '21 days']",
    'r.a in [l.a - (0.1 * ABS(l.a)), l.a + (0.1 * ABS(l.a))]',
  ])
  t.same(bands('r.a >= l.a * 0.9 AND similarity(l.memo, r.memo) >= 0.3 AND r.d > l.d'), [
    'r.a in [l.a * 0.9, +∞)',
    'r.d in (l.d, +∞)',
    'l.d in (-∞, r.d)', // both columns are plain: either side can be sorted
  ])
})

t.test("nl_to_sql's 'within 10%' is accepted by validate, explained as a band and run", async (t) => {
  const bank: ColumnT[] = [
    { name: 'txn_id', type: 'string' },
    { name: 'amount', type: 'decimal', scale: 2 },
  ]
  const invoices: ColumnT[] = [
    { name: 'inv_id', type: 'string' },
    { name: 'total', type: 'decimal', scale: 2 },
  ]
  const { sql } = nlToSql.deterministic({ text: 'amount within 10%', schema_a: bank, schema_b: invoices })
  t.equal(sql, 'ABS(l.amount - r.total) <= 0.1 * ABS(l.amount)')
  const recipe = recipeOf([{ name: 'within', pattern: '1:1', when: sql }], { left: ['txn_id'], right: ['inv_id'] })
  const info = (c: ColumnT): ColumnInfo => ({
    name: c.name,
    type: c.type as ColumnInfo['type'],
    nullable: true,
    scale: c.scale,
  })
  const s = { l: bank.map(info), r: invoices.map(info) }
  t.same(validateRecipe(recipe, s), { valid: true, issues: [], suggestions: [], warnings: [] })
  t.same(explainRecipe(recipe, s).passes[0].bands, [
    {
      column: 'r.total',
      lower: 'l.amount - (0.1 * ABS(l.amount))',
      upper: 'l.amount + (0.1 * ABS(l.amount))',
      lower_inclusive: true,
      upper_inclusive: true,
      from: ['ABS(l.amount - r.total) <= 0.1 * ABS(l.amount)'],
    },
  ])
  const result = reconcile(
    recipe,
    tableFromRows([
      { txn_id: 'T1', amount: '100.00' },
      { txn_id: 'T2', amount: '-250.00' },
      { txn_id: 'T3', amount: '40.00' },
    ]),
    tableFromRows([
      { inv_id: 'I1', total: '-226.00' }, // 9.6% off T2: in
      { inv_id: 'I2', total: '110.00' }, // exactly 10% off T1: in
      { inv_id: 'I3', total: '44.01' }, // 10.025% off T3: out
    ]),
  )
  t.equal(result.summary.status, 'completed')
  t.same(result.summary.passes[0].band, {
    column: 'r.total',
    estimated_pairs: 2,
    pairs: 2,
    candidates: 2,
    options: [{ column: 'r.total', estimated_pairs: 2 }],
  })
  t.equal(result.summary.matches, 2)
  t.same([...result.unmatchedLeft.rows], [2])
  t.same([...result.unmatchedRight.rows], [2])
})

const day = (n: number) => new Date(Date.UTC(2024, 0, 1) + n * 86_400_000).toISOString().slice(0, 10)
const money = (cents: number) => (cents / 100).toFixed(2)
const NATURAL = "r.d BETWEEN l.d AND l.d + INTERVAL '21 days' AND ABS(l.a - r.a) <= 0.1 * ABS(l.a)"

t.test('the band with the fewest estimated pairs is chosen, whatever the order written', async (t) => {
  const run = (when: string, left: Row[], right: Row[]) =>
    reconcile(recipeOf([{ name: 'p', pattern: '1:1', when }]), tableFromRows(left), tableFromRows(right)).summary
      .passes[0].band!
  // one day, amounts spread: the window holds every pair, the amount band few
  const sameDay = (n: number, p: string) =>
    Array.from({ length: n }, (_, k) => ({ id: `${p}${k}`, a: money(1000 + k * 1000), d: day(0) }))
  const byAmount = run(NATURAL, sameDay(200, 'L'), sameDay(200, 'R'))
  t.equal(byAmount.column, 'r.a')
  t.same(
    byAmount.options.map((o) => o.column),
    ['r.d', 'r.a'],
  )
  t.equal(byAmount.options[0].estimated_pairs, 200 * 200, 'the window: every pair')
  // small sides are sampled whole, so the estimate is the count
  t.equal(byAmount.estimated_pairs, byAmount.pairs)
  t.ok(byAmount.pairs < 200 * 20, `${byAmount.pairs} pairs in the amount band`)

  // one amount, a day apart each: the amount band holds every pair, the window 22 per record
  const sameAmount = (n: number, p: string) =>
    Array.from({ length: n }, (_, k) => ({ id: `${p}${k}`, a: money(10_000), d: day(k) }))
  const amountFirst = "ABS(l.a - r.a) <= 0.1 * ABS(l.a) AND r.d BETWEEN l.d AND l.d + INTERVAL '21 days'"
  const byDate = run(amountFirst, sameAmount(200, 'L'), sameAmount(200, 'R'))
  t.equal(byDate.column, 'r.d')
  t.same(byDate.options, [
    { column: 'r.a', estimated_pairs: 40_000 },
    { column: 'r.d', estimated_pairs: byDate.pairs },
  ])
  // records 0..199, each with its next 21 days: 22 each, 22 down to 1 for the last 22
  t.equal(byDate.pairs, 178 * 22 + (22 * 23) / 2)
  t.equal(byDate.candidates, byDate.pairs)
})

t.test('on sides larger than the samples, the estimate is seeded (the same every run) and close', async (t) => {
  const n = Math.max(SORTED_SAMPLE, PROBE_SAMPLE) + 2000
  const rows = (p: string) =>
    Array.from({ length: n }, (_, k) => ({
      id: `${p}${k}`,
      a: money(100 + ((k * 7919) % 1_000_000)),
      d: day(Math.floor(k / 20)),
    }))
  const left = tableFromRows(rows('L'))
  const right = tableFromRows(rows('R'))
  const recipe = recipeOf([{ name: 'p', pattern: '1:1', when: NATURAL }])
  const first = reconcile(recipe, left, right).summary.passes[0].band!
  const second = reconcile(recipe, left, right).summary.passes[0].band!
  t.same(second, first)
  // 20 records a day: a 22-day window holds about 440 per record; the amounts are spread over
  // 10,000.00, so ±10% holds far more
  t.equal(first.column, 'r.d')
  const estimate = first.options.find((o) => o.column === 'r.d')!.estimated_pairs
  t.ok(Math.abs(estimate - first.pairs) / first.pairs < 0.1, `estimated ${estimate}, visited ${first.pairs}`)
})

// ---- a band only prunes ------------------------------------------------------------------------

interface Rec {
  cents: number | null
  day: number
}
const recArb = fc.record({
  cents: fc.option(fc.integer({ min: -50_000, max: 50_000 }), { nil: null, freq: 10 }),
  day: fc.integer({ min: 0, max: 30 }),
})
/** Rows of random records after one fixed record, so the amount column is a decimal even when every random one is NULL. */
const decimalRows = (recs: Rec[], p: string): Row[] =>
  [{ cents: 12_345, day: 40 }, ...recs].map((r, k) => ({
    id: `${p}${k}`,
    a: r.cents === null ? null : money(r.cents),
    d: day(r.day),
  }))

/** The predicates, and what each accepts, in integer cents and days (independent of the compiler). */
const forms: { when: string; accepts: (l: Rec, r: Rec) => boolean }[] = [
  {
    when: 'ABS(l.a - r.a) <= 0.1 * ABS(l.a)',
    accepts: (l, r) => l.cents !== null && r.cents !== null && Math.abs(l.cents - r.cents) * 10 <= Math.abs(l.cents),
  },
  {
    when: 'ABS(r.a - l.a) < 0.05 * ABS(r.a)',
    accepts: (l, r) => l.cents !== null && r.cents !== null && Math.abs(l.cents - r.cents) * 20 < Math.abs(r.cents),
  },
  {
    when: 'r.a BETWEEN l.a * 0.9 AND l.a * 1.1',
    accepts: (l, r) =>
      l.cents !== null && r.cents !== null && r.cents * 10 >= l.cents * 9 && r.cents * 10 <= l.cents * 11,
  },
  {
    when: 'r.a <= l.a * 1.1 AND r.a >= l.a * 0.9 AND r.d >= l.d',
    accepts: (l, r) =>
      l.cents !== null &&
      r.cents !== null &&
      r.cents * 10 <= l.cents * 11 &&
      r.cents * 10 >= l.cents * 9 &&
      r.day >= l.day,
  },
  {
    when: "ABS(l.a - r.a) <= 0.1 * ABS(l.a) AND r.d BETWEEN l.d AND l.d + INTERVAL '3 days'",
    accepts: (l, r) =>
      l.cents !== null &&
      r.cents !== null &&
      Math.abs(l.cents - r.cents) * 10 <= Math.abs(l.cents) &&
      r.day >= l.day &&
      r.day <= l.day + 3,
  },
  {
    when: 'ABS(l.a - r.a) <= l.a * 0.2',
    accepts: (l, r) => l.cents !== null && r.cents !== null && Math.abs(l.cents - r.cents) * 5 <= l.cents,
  },
]

/** Right records near left ones (within a few percent, either sign), so bands are neither empty nor full. */
const tablesArb = fc.array(recArb, { minLength: 1, maxLength: 25 }).chain((left) =>
  fc
    .array(
      fc.oneof(
        recArb,
        fc
          .record({
            n: fc.nat(left.length - 1),
            pct: fc.integer({ min: -12, max: 12 }),
            dd: fc.integer({ min: -1, max: 4 }),
          })
          .map(({ n, pct, dd }) => ({
            cents: left[n].cents === null ? null : left[n].cents + Math.trunc((left[n].cents * pct) / 100),
            day: left[n].day + dd,
          })),
      ),
      { minLength: 1, maxLength: 25 },
    )
    .map((right) => ({ left, right })),
)

t.test('every band option keeps every pair the predicate accepts, negative amounts included', async (t) => {
  let accepted = 0
  fc.assert(
    fc.property(tablesArb, fc.nat(forms.length - 1), ({ left, right }, f) => {
      const form = forms[f]
      const tables = { l: tableFromRows(decimalRows(left, 'L')), r: tableFromRows(decimalRows(right, 'R')) }
      const p = preparePass(0, { name: 'p', pattern: '1:1', when: form.when }, tables)
      const all = (n: number) => Int32Array.from({ length: n }, (_, k) => k)
      const l = [{ cents: 12_345, day: 40 }, ...left]
      const r = [{ cents: 12_345, day: 40 }, ...right]
      const want = new Set<string>()
      for (let i = 0; i < l.length; i++)
        for (let j = 0; j < r.length; j++) if (form.accepts(l[i], r[j])) want.add(`${i}|${j}`)
      accepted += want.size
      for (const option of p.bands) {
        const inBand = new Set<string>()
        bandPairs(option, all(l.length), all(r.length), (i, j) => {
          inBand.add(`${i}|${j}`)
          return true
        })
        const dropped = [...want].filter((pair) => !inBand.has(pair))
        if (dropped.length) throw new Error(`${form.when}: band ${option.name} drops ${dropped.join(', ')}`)
      }
      // and the pass's candidates are exactly the accepted pairs
      const found: string[] = []
      const free = (n: number) => new Uint8Array(n).fill(1)
      bandJoin(p.bands, p.checks, free(l.length), free(r.length), (i, j) => found.push(`${i}|${j}`))
      if (found.length !== want.size || found.some((pair) => !want.has(pair)))
        throw new Error(`${form.when}: candidates ${found.sort().join(' ')} != ${[...want].sort().join(' ')}`)
    }),
    { numRuns: 300 },
  )
  t.ok(accepted > 300, `${accepted} accepted pairs over the runs`)
})

t.test('float bands are widened, not narrowed, by rounding', async (t) => {
  // in floats, |a - b| <= t can hold while b > a + t: a - b rounds down when a is tiny next to b
  const a = 0.0008163054525387459
  const b = 6.97968645433597
  const tolerance = 6.978870148883431
  t.ok(Math.abs(a - b) <= tolerance && b > a + tolerance, 'the predicate accepts what a + t excludes')
  const left = tableFromRows([{ id: 'L', a, d: day(0) }])
  const right = tableFromRows([{ id: 'R', a: b, d: day(0) }])
  t.equal(left.columns.find((c) => c.name === 'a')!.type, 'float')
  const when = `ABS(l.a - r.a) <= ${tolerance}`
  const result = reconcile(recipeOf([{ name: 'p', pattern: '1:1', when }]), left, right)
  t.equal(result.summary.matches, 1)
  t.equal(result.summary.passes[0].band!.pairs, 1)
})

t.test("a band's scan skips pairs outside the other bands on its side, to the same result", async (t) => {
  // amount within 10% and a 21-day window, both on the right side: the join sorts one and skips
  // pairs outside the other in its scan. Written so the planner cannot make the window a band
  // (compared to TRUE), the same predicate runs with every pair of the band checked: the same
  // matches, unmatched records and reasons.
  const rand = fc.sample(fc.integer({ min: 0, max: 2 ** 30 }), { seed: 15, numRuns: 1600 })
  let k = 0
  const next = () => rand[k++ % rand.length]
  const rows = (p: string, n: number): Row[] =>
    Array.from({ length: n }, (_, x) => ({
      id: `${p}${x}`,
      a: money(1000 + (next() % 20000)),
      d: day(next() % 120),
      memo: `M${next() % 40}`,
    }))
  const left = tableFromRows(rows('L', 400))
  const right = tableFromRows(rows('R', 400))
  const window = 'r.d BETWEEN l.d AND l.d + 21'
  const natural = `r.a BETWEEN l.a * 0.9 AND l.a * 1.1 AND ${window}`
  for (const when of [natural, `${natural} AND l.memo <> r.memo`]) {
    const reference = when.replace(window, `(${window}) = TRUE`)
    const run = (w: string) => reconcile(recipeOf([{ name: 'p', pattern: '1:1', when: w }]), left, right)
    const a = run(when)
    const b = run(reference)
    t.same(
      a.summary.passes[0].band?.options.map((o) => o.column),
      ['r.a', 'r.d'],
      'two band options on the right side',
    )
    t.same(
      b.summary.passes[0].band?.options.map((o) => o.column),
      ['r.a'],
      'the reference has one',
    )
    t.same([...a.matches.leftRows], [...b.matches.leftRows])
    t.same([...a.matches.rightRows], [...b.matches.rightRows])
    t.same(a.unmatchedLeft, b.unmatchedLeft)
    t.same(a.unmatchedRight, b.unmatchedRight)
    t.ok(a.matches.count > 20, `${a.matches.count} matches`)
  }
})
