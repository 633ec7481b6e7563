// Lookup tables in the recipe language: lookup('name', 'column', key values…[, as_of]) reads
// another source inside a predicate. The three uses it is for (a fee schedule per card brand, FX
// rates by currency and date, a tolerance per currency), exactness, key semantics, a key held by
// two rows, the index built once per run, type-checking and explain, on tables made here.

import t from 'tap'
import { lookupBuilds } from '../src/engine/data/lookup.js'
import { generated } from '../src/engine/plan/compile.js'
import { tableFromRows } from '../src/engine/load/json.js'
import { reconcile } from '../src/engine/reconcile.js'
import type { ColumnInfo } from '../src/engine/data/types.js'
import { ConcordError } from '../src/errors.js'
import { parsePredicate } from '../src/language/predicate.js'
import { type Schemas, TypeChecker } from '../src/language/types.js'
import { explainRecipe } from '../src/recipes/explain.js'
import { lookupSchemas } from '../src/recipes/lookups.js'
import type { Recipe, RecipeLookup, RecipePass } from '../src/recipes/schema.js'
import { validateRecipe } from '../src/recipes/validate.js'
import { pushdownProblem } from '../connectors/postgres/pushdown.js'
import { type Evidence, evidence, pairs, partitionProblems, type Row } from './helpers/engine.js'

function recipeWith(lookups: Record<string, RecipeLookup>, passes: RecipePass[]): Recipe {
  return {
    name: 'lookups',
    left: { source: 'left', key: ['id'] },
    right: { source: 'right', key: ['id'] },
    lookups,
    passes,
  }
}

function run(recipe: Recipe, left: Row[], right: Row[], lookups: Record<string, Row[]>): Evidence {
  const tables = Object.fromEntries(Object.entries(lookups).map(([name, rows]) => [name, tableFromRows(rows)]))
  return evidence(recipe, tableFromRows(left), tableFromRows(right), { lookups: tables })
}

const FEES = { fees: { source: 'fee_schedule', key: ['brand'] } }
const feeSchedule = [
  { brand: 'VISA', rate: '0.029', fixed: '0.30' },
  { brand: 'AMEX', rate: '0.035', fixed: '0.25' },
  { brand: 'MC', rate: '0.014', fixed: '0.10' },
]
const NET = "r.amount = l.amount - l.amount * lookup('fees', 'rate', l.brand) - lookup('fees', 'fixed', l.brand)"

t.test('a fee schedule per card brand: the net payout matches exactly to the cent', async (t) => {
  const sales = [
    { id: 'S1', brand: 'VISA', amount: '1010.00' }, // 1010.00 - 29.29 - 0.30 = 980.41 (980.4100000000001 in floats)
    { id: 'S2', brand: 'AMEX', amount: '40.00' }, // 40.00 - 1.40 - 0.25 = 38.35
    { id: 'S3', brand: 'MC', amount: '80.00' }, // 80.00 - 1.12 - 0.10 = 78.78
    { id: 'S4', brand: 'VISA', amount: '120.00' }, // 116.22, but paid a cent short
    { id: 'S5', brand: 'DISC', amount: '70.00' }, // no fee for the brand: NULL, never a match
  ]
  const payouts = [
    { id: 'P1', amount: '980.41' },
    { id: 'P2', amount: '38.35' },
    { id: 'P3', amount: '78.78' },
    { id: 'P4', amount: '116.21' },
    { id: 'P5', amount: '70.00' },
  ]
  const recipe = recipeWith(FEES, [{ name: 'net', pattern: '1:1', when: NET }])
  const e = run(recipe, sales, payouts, { fees: feeSchedule })
  t.same(pairs(e), ['S1|P1', 'S2|P2', 'S3|P3'])
  t.same(
    e.matches.map((m) => m.deltas.amount),
    ['29.59', '1.65', '1.22'],
    'the delta is the fee, exact',
  )
  t.same(
    e.unmatchedLeft.map((u) => u.record_key),
    ['S4', 'S5'],
  )
  t.same(partitionProblems(e, 5, 5), [])

  // the same equation rounded to the cent (ROUND is half away from zero, on exact units)
  const rounded = recipeWith(FEES, [
    {
      name: 'net',
      pattern: '1:1',
      when: "r.amount = ROUND(l.amount - l.amount * lookup('fees', 'rate', l.brand) - lookup('fees', 'fixed', l.brand), 2)",
    },
  ])
  const r = run(
    rounded,
    [
      { id: 'S1', brand: 'VISA', amount: '123.45' }, // 123.45 - 3.58005 - 0.30 = 119.56995 → 119.57
      { id: 'S2', brand: 'AMEX', amount: '19.99' }, // 19.99 - 0.69965 - 0.25 = 19.04035 → 19.04
    ],
    [
      { id: 'P1', amount: '119.57' },
      { id: 'P2', amount: '19.04' },
    ],
    { fees: feeSchedule },
  )
  t.same(pairs(r), ['S1|P1', 'S2|P2'])
})

t.test('the fee equation is a hash key; explain names the lookup the pass reads', async (t) => {
  const recipe = recipeWith(FEES, [
    { name: 'net', pattern: '1:1', when: NET },
    { name: 'gross', pattern: '1:1', when: 'l.amount = r.amount' },
  ])
  const cols = (rows: Row[]) => tableFromRows(rows).columns
  const schemas: Schemas = {
    l: cols([{ id: 'S1', brand: 'VISA', amount: '1.00' }]),
    r: cols([{ id: 'P1', amount: '1.00' }]),
    lookups: lookupSchemas(recipe, () => cols(feeSchedule)),
  }
  const reply = explainRecipe(recipe, schemas)
  t.equal(reply.passes[0].join, 'hash')
  t.same(reply.passes[0].hash_keys, [
    {
      left: "(l.amount - (l.amount * LOOKUP('fees', 'rate', l.brand))) - LOOKUP('fees', 'fixed', l.brand)",
      right: 'r.amount',
    },
  ])
  t.same(reply.passes[0].lookups, [{ name: 'fees', source: 'fee_schedule', key: ['brand'], as_of: null }])
  t.same(reply.passes[1].lookups, [], 'a pass that reads no lookup lists none')
  t.match(reply.text, /lookup fees: fee_schedule by brand \(hash index, built once per run\)/)
})

const FX = { fx: { source: 'fx_rates', key: ['currency'], as_of: 'rate_date' } }
const fxRates = [
  { currency: 'EUR', rate_date: '2024-01-01', rate: '1.1000' },
  { currency: 'EUR', rate_date: '2024-01-05', rate: '1.1200' },
  { currency: 'GBP', rate_date: '2024-01-01', rate: '1.2700' },
  { currency: 'EUR', rate_date: '2024-01-10', rate: '1.0950' }, // written out of order: found by date, not by row
]
const CONVERTED = "ABS(l.amount * lookup('fx', 'rate', l.currency, l.booked) - r.usd) <= 0.01"

t.test('FX by currency and date: the latest rate on or before the booking date', async (t) => {
  const payments = [
    { id: 'L1', ref: 'A', currency: 'EUR', amount: '100.00', booked: '2024-01-03' }, // 1.10 → 110.00
    { id: 'L2', ref: 'B', currency: 'EUR', amount: '100.00', booked: '2024-01-05' }, // on the day: 1.12 → 112.00
    { id: 'L3', ref: 'C', currency: 'EUR', amount: '100.00', booked: '2024-01-04' }, // 1.10, not the 5th's 1.12
    { id: 'L4', ref: 'D', currency: 'GBP', amount: '50.00', booked: '2024-01-20' }, // 1.27 → 63.50
    { id: 'L5', ref: 'E', currency: 'EUR', amount: '100.00', booked: '2023-12-31' }, // before any rate: NULL
    { id: 'L6', ref: 'F', currency: 'EUR', amount: '10.00', booked: '2024-01-12' }, // 1.095 → 10.95
  ]
  const usd = [
    { id: 'R1', ref: 'A', usd: '110.00' },
    { id: 'R2', ref: 'B', usd: '112.00' },
    { id: 'R3', ref: 'C', usd: '112.00' },
    { id: 'R4', ref: 'D', usd: '63.50' },
    { id: 'R5', ref: 'E', usd: '110.00' },
    { id: 'R6', ref: 'F', usd: '10.95' },
  ]
  const keyed = run(
    recipeWith(FX, [{ name: 'fx', pattern: '1:1', when: `l.ref = r.ref AND ${CONVERTED}` }]),
    payments,
    usd,
    {
      fx: fxRates,
    },
  )
  t.same(pairs(keyed), ['L1|R1', 'L2|R2', 'L4|R4', 'L6|R6'])
  const l3 = keyed.unmatchedLeft.find((u) => u.record_key === 'L3')!
  t.match(l3, { closest_candidate: 'R3', failed: { pass: 'fx', conjunct: CONVERTED } })
  t.same(
    keyed.unmatchedLeft.map((u) => u.record_key),
    ['L3', 'L5'],
  )

  // with no reference, the converted amount is a band: r.usd within l's converted amount ± 0.01
  const band = recipeWith(FX, [{ name: 'fx', pattern: '1:1', when: CONVERTED }])
  const plan = explainRecipe(band, {
    l: tableFromRows(payments).columns,
    r: tableFromRows(usd).columns,
    lookups: lookupSchemas(band, () => tableFromRows(fxRates).columns),
  }).passes[0]
  t.equal(plan.join, 'band')
  t.equal(plan.band?.column, 'r.usd')
  const banded = run(
    band,
    payments.filter((p) => p.id !== 'L3'),
    usd.filter((u) => u.id !== 'R3' && u.id !== 'R5'),
    { fx: fxRates },
  )
  t.same(pairs(banded), ['L1|R1', 'L2|R2', 'L4|R4', 'L6|R6'])
  t.same(
    banded.unmatchedLeft.map((u) => u.record_key),
    ['L5'],
  )
})

t.test('FX: a timestamp finds the rate of its day; a timestamp as_of orders within a day', async (t) => {
  const recipe = recipeWith(FX, [{ name: 'fx', pattern: '1:1', when: `l.ref = r.ref AND ${CONVERTED}` }])
  const e = run(
    recipe,
    [
      { id: 'L1', ref: 'A', currency: 'EUR', amount: '100.00', booked: '2024-01-05T23:59:59Z' },
      { id: 'L2', ref: 'B', currency: 'EUR', amount: '100.00', booked: '2024-01-04T23:59:59Z' },
    ],
    [
      { id: 'R1', ref: 'A', usd: '112.00' },
      { id: 'R2', ref: 'B', usd: '110.00' },
    ],
    { fx: fxRates },
  )
  t.same(pairs(e), ['L1|R1', 'L2|R2'])

  const intraday = recipeWith({ fx: { source: 'fx_ticks', key: ['currency'], as_of: 'at' } }, recipe.passes)
  const ticks = [
    { currency: 'EUR', at: '2024-01-05T09:00:00Z', rate: '1.1000' },
    { currency: 'EUR', at: '2024-01-05T15:00:00Z', rate: '1.2000' },
  ]
  const i = run(
    intraday,
    [
      { id: 'L1', ref: 'A', currency: 'EUR', amount: '100.00', booked: '2024-01-05T14:59:59Z' },
      { id: 'L2', ref: 'B', currency: 'EUR', amount: '100.00', booked: '2024-01-05T15:00:00Z' },
      { id: 'L3', ref: 'C', currency: 'EUR', amount: '100.00', booked: '2024-01-06' }, // a date: its midnight
    ],
    [
      { id: 'R1', ref: 'A', usd: '110.00' },
      { id: 'R2', ref: 'B', usd: '120.00' },
      { id: 'R3', ref: 'C', usd: '120.00' },
    ],
    { fx: ticks },
  )
  t.same(pairs(i), ['L1|R1', 'L2|R2', 'L3|R3'])
})

t.test('a tolerance per currency', async (t) => {
  const recipe = recipeWith({ tol: { source: 'tolerances', key: ['currency'] } }, [
    {
      name: 'within',
      pattern: '1:1',
      when: "l.ref = r.ref AND l.currency = r.currency AND ABS(l.amount - r.amount) <= lookup('tol', 'tolerance', l.currency)",
    },
  ])
  const tolerances = [
    { currency: 'USD', tolerance: '0.01' },
    { currency: 'EUR', tolerance: '0.05' },
    { currency: 'JPY', tolerance: '1' },
  ]
  const e = run(
    recipe,
    [
      { id: 'L1', ref: 'A', currency: 'USD', amount: '100.00' },
      { id: 'L2', ref: 'B', currency: 'USD', amount: '100.00' },
      { id: 'L3', ref: 'C', currency: 'EUR', amount: '100.00' },
      { id: 'L4', ref: 'D', currency: 'JPY', amount: '15000' },
      { id: 'L5', ref: 'E', currency: 'CHF', amount: '100.00' },
    ],
    [
      { id: 'R1', ref: 'A', currency: 'USD', amount: '100.01' },
      { id: 'R2', ref: 'B', currency: 'USD', amount: '100.02' },
      { id: 'R3', ref: 'C', currency: 'EUR', amount: '99.95' },
      { id: 'R4', ref: 'D', currency: 'JPY', amount: '14999' },
      { id: 'R5', ref: 'E', currency: 'CHF', amount: '100.00' },
    ],
    { tol: tolerances },
  )
  // USD 0.02 is past its cent; EUR 0.05 and JPY 1 are within theirs; CHF has no tolerance: NULL
  t.same(pairs(e), ['L1|R1', 'L3|R3', 'L4|R4'])
  t.same(
    e.unmatchedLeft.map((u) => u.record_key),
    ['L2', 'L5'],
  )
})

t.test('keys compare as = does: exact values, strings by bytes, NULL finds nothing', async (t) => {
  const recipe = recipeWith({ codes: { source: 'codes', key: ['code', 'region'] } }, [
    { name: 'p', pattern: '1:1', when: "l.id = r.id AND lookup('codes', 'label', l.code, l.region) = r.label" },
  ])
  const codes = [
    { code: '7', region: 'Zürich', label: 'seven' },
    { code: '12.50', region: 'x', label: 'twelve and a half' },
    { code: '1', region: 'a', label: 'lower' },
    { code: '1', region: 'A', label: 'upper' },
    { code: null, region: 'x', label: 'never' },
  ]
  const e = run(
    recipe,
    [
      { id: '1', code: '7.00', region: 'Zürich' }, // 7.00 = 7
      { id: '2', code: '12.5', region: 'x' }, // 12.5 = 12.50
      { id: '3', code: '7', region: 'Zu\u0308rich' }, // the same word, other bytes: not equal
      { id: '4', code: '1', region: 'A' },
      { id: '5', code: null, region: 'x' },
      { id: '6', code: '7.001', region: 'Zürich' }, // finer than any key: equals none
    ],
    [
      { id: '1', label: 'seven' },
      { id: '2', label: 'twelve and a half' },
      { id: '3', label: 'seven' },
      { id: '4', label: 'upper' },
      { id: '5', label: 'never' },
      { id: '6', label: 'seven' },
    ],
    { codes },
  )
  t.same(pairs(e), ['1|1', '2|2', '4|4'])
})

t.test('a lookup whose key is held by two rows fails the run, naming the key', async (t) => {
  const recipe = recipeWith(FEES, [{ name: 'net', pattern: '1:1', when: NET }])
  const left = tableFromRows([{ id: 'S1', brand: 'VISA', amount: '10.00' }])
  const right = tableFromRows([{ id: 'P1', amount: '9.41' }])
  const twice = tableFromRows([...feeSchedule, { brand: 'AMEX', rate: '0.030', fixed: '0.25' }])
  const err = (() => {
    try {
      reconcile(recipe, left, right, { lookups: { fees: twice } })
    } catch (e) {
      return e
    }
  })()
  t.ok(err instanceof ConcordError)
  t.match(err, {
    code: 'lookup_not_unique',
    message: 'lookup "fees": source "fee_schedule" has more than one row with brand = "AMEX" (its rows 2 and 4)',
    suggestion: /one row per key/,
  })

  // with as_of, a key may repeat on other dates, not on one
  const fx = recipeWith(FX, [{ name: 'fx', pattern: '1:1', when: `l.id = r.id AND ${CONVERTED}` }])
  const sameDay = tableFromRows([...fxRates, { currency: 'EUR', rate_date: '2024-01-05', rate: '1.1300' }])
  const l = tableFromRows([{ id: '1', currency: 'EUR', amount: '1.00', booked: '2024-01-06' }])
  const r = tableFromRows([{ id: '1', usd: '1.12' }])
  t.throws(() => reconcile(fx, l, r, { lookups: { fx: sameDay } }), {
    code: 'lookup_not_unique',
    message: /currency = "EUR", rate_date = "2024-01-05" \(its rows 2 and 5\)/,
  })
  t.equal(reconcile(fx, l, r, { lookups: { fx: tableFromRows(fxRates) } }).summary.matches, 1)

  t.throws(() => reconcile(fx, l, r), { code: 'lookup_not_loaded', message: /lookup "fx" \(source "fx_rates"\)/ })
})

t.test('the index is built once per lookup per run, and code once per pass, whatever the size', async (t) => {
  const recipe = recipeWith(FEES, [
    { name: 'net', pattern: '1:1', when: NET },
    {
      name: 'near',
      pattern: '1:1',
      when: "l.id = r.id AND ABS(r.amount - (l.amount - lookup('fees', 'fixed', l.brand))) <= 1",
    },
  ])
  const brands = ['VISA', 'AMEX', 'MC']
  const rows = (n: number) => ({
    left: Array.from({ length: n }, (_, k) => ({ id: `S${k}`, brand: brands[k % 3], amount: `${100 + k}.00` })),
    right: Array.from({ length: n }, (_, k) => ({ id: `S${k}`, amount: `${90 + k}.00` })),
  })
  const counts = (n: number) => {
    const { left, right } = rows(n)
    const builds = lookupBuilds.count
    const functions = generated.functions
    const result = reconcile(recipe, tableFromRows(left), tableFromRows(right), {
      lookups: { fees: tableFromRows(feeSchedule) },
    })
    t.equal(result.summary.status, 'completed')
    return { builds: lookupBuilds.count - builds, functions: generated.functions - functions }
  }
  const small = counts(200)
  const large = counts(20_000)
  t.equal(small.builds, 1)
  t.same(large, small)
})

const cols = (spec: Record<string, string>): ColumnInfo[] =>
  Object.entries(spec).map(([name, type]) => {
    const [t, scale] = type.split(':')
    return { name, type: t as ColumnInfo['type'], nullable: true, ...(scale ? { scale: Number(scale) } : {}) }
  })

const SCHEMAS: Schemas = {
  l: cols({ id: 'string', brand: 'string', currency: 'string', amount: 'decimal:2', booked: 'date', n: 'integer' }),
  r: cols({ id: 'string', amount: 'decimal:2' }),
  lookups: {
    fx: {
      source: 'fx_rates',
      key: ['currency'],
      as_of: 'rate_date',
      columns: cols({ currency: 'string', rate_date: 'date', rate: 'decimal:4' }),
    },
    fees: {
      source: 'fee_schedule',
      key: ['brand'],
      columns: cols({ brand: 'string', rate: 'decimal:3', fixed: 'decimal:2' }),
    },
  },
}

t.test('lookup() is typed by its column: decimals keep their scale', async (t) => {
  const type = (text: string) => {
    const checker = new TypeChecker(SCHEMAS)
    const out = checker.check(parsePredicate(text))
    t.same(checker.issues, [], text)
    return out
  }
  t.same(type("lookup('fx', 'rate', l.currency, l.booked)"), { kind: 'decimal', scale: 4 })
  t.same(type("l.amount * lookup('fx', 'rate', l.currency, l.booked)"), { kind: 'decimal', scale: 6 })
  t.same(type("lookup('fx', 'rate_date', l.currency, l.booked)"), { kind: 'date' })
  t.same(type("lookup('fees', 'fixed', 'VISA')"), { kind: 'decimal', scale: 2 })
})

t.test('validation: every lookup problem with a code, a position and the nearest names', async (t) => {
  const issues = (when: string, lookups: Schemas['lookups'] = SCHEMAS.lookups) => {
    const recipe = recipeWith(
      {
        fx: { source: 'fx_rates', key: ['currency'], as_of: 'rate_date' },
        fees: { source: 'fee_schedule', key: ['brand'] },
      },
      [{ name: 'p', pattern: '1:1', when: `l.id = r.id AND ${when}` }],
    )
    return validateRecipe(recipe, { ...SCHEMAS, lookups }).issues.map((i) => ({
      code: i.code,
      message: i.message,
      at: i.position ? `l.id = r.id AND ${when}`.slice(i.position.start, i.position.end) : undefined,
      suggestion: i.suggestion,
    }))
  }
  t.match(issues("lookup('fxx', 'rate', l.currency, l.booked) > 1"), [
    {
      code: 'unknown_lookup',
      message: 'the recipe has no lookup table "fxx"',
      at: "'fxx'",
      suggestion: "did you mean 'fx'?",
    },
  ])
  t.match(issues("lookup('fx', 'rates', l.currency, l.booked) > 1"), [
    {
      code: 'unknown_column',
      message: 'lookup "fx" (source "fx_rates") has no column "rates"',
      at: "'rates'",
      suggestion: "did you mean 'rate'",
    },
  ])
  t.match(issues("lookup('fx', 'rate', l.currency) > 1"), [
    {
      code: 'wrong_arguments',
      message: "lookup('fx', …) takes 2 values after the column (currency, rate_date (on or before)), not 1",
    },
  ])
  t.match(issues("lookup('fx', 'rate', l.n, l.booked) > 1"), [
    {
      code: 'type_mismatch',
      message: "value 1 of lookup('fx', …) is compared with key column currency (string), not a integer",
      at: 'l.n',
    },
  ])
  t.match(issues("lookup('fx', 'rate', l.currency, l.amount) > 1"), [
    { code: 'type_mismatch', message: /the last value of lookup\('fx', …\) is a date or timestamp/, at: 'l.amount' },
  ])
  t.match(issues("lookup(l.brand, 'rate', l.brand) > 1"), [{ code: 'invalid_argument', at: 'l.brand' }])
  t.match(issues("lookup('fees', 'rate', l.brand) = 'x'"), [
    { code: 'type_mismatch', message: 'cannot compare decimal with string' },
  ])
  t.same(issues("lookup('fees', 'rate', l.brand) > 0.01 AND lookup('fx', 'rate', l.currency, l.booked) > 1"), [])

  // the declarations: columns that are not there, an as_of that is not a date
  const declared = validateRecipe(
    recipeWith(
      { fx: { source: 'fx_rates', key: ['curency'], as_of: 'rate' }, fees: { source: 'fee_schedule', key: ['brand'] } },
      [{ name: 'p', pattern: '1:1', when: 'l.id = r.id' }],
    ),
    SCHEMAS,
  )
  t.match(declared.issues, [
    {
      pass: null,
      code: 'unknown_column',
      message: 'lookup "fx": key column "curency" is not in source "fx_rates"',
      suggestion: 'did you mean "currency"?',
    },
    {
      pass: null,
      code: 'type_mismatch',
      message: 'lookup "fx": as_of column "rate" is decimal, not a date or timestamp',
    },
  ])
  t.equal(declared.issues.length, 2)
})

t.test('the PostgreSQL engine refuses a recipe with lookups, saying why', async (t) => {
  const pg = (alias: string) => ({
    alias,
    type: 'postgres',
    config: { connection_string: 'postgresql://u@127.0.0.1:5432/db', table: alias },
  })
  const recipe = recipeWith(FEES, [{ name: 'net', pattern: '1:1', when: NET }])
  t.match(pushdownProblem(recipe, { left: pg('sales'), right: pg('payouts') }), /lookup tables \(fees\)/)
  t.equal(
    pushdownProblem(
      { ...recipe, lookups: undefined, passes: [{ name: 'p', pattern: '1:1', when: 'l.id = r.id' }] },
      {
        left: pg('sales'),
        right: pg('payouts'),
      },
    ),
    null,
  )
})
