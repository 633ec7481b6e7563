// propose_match and infer_rules, deterministic: unit behaviour, then end to end on the shared
// datasets (see their README for the ground truth): rules inferred from three confirmed pairs,
// assembled by build_recipe, run by the engine and scored for precision and recall.

import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { ColumnT, MappingT, RowT } from '../src/ai/schemas.js'
import { buildRecipe } from '../src/ai/tools/build_recipe.js'
import { inferRules } from '../src/ai/tools/infer_rules.js'
import { proposeMatch } from '../src/ai/tools/propose_match.js'
import { jsonValue } from '../src/engine/builder.js'
import { loadCsv } from '../src/engine/csv/index.js'
import { loadJson } from '../src/engine/json.js'
import type { Table } from '../src/engine/table.js'
import type { Recipe } from '../src/recipes/schema.js'
import { datasetsDir, datasetsSkip } from './helpers/datasets.js'
import { evidence, partitionProblems, runRows } from './helpers/engine.js'

const map = (pairs: [string, string][]): MappingT[] =>
  pairs.map(([field_a, field_b]) => ({ field_a, field_b, confidence: 0.9, reason: 'test' }))

const ledgerSchema: ColumnT[] = [
  { name: 'ledger_tx_id', type: 'string' },
  { name: 'order_id', type: 'string' },
  { name: 'amount', type: 'decimal', scale: 2 },
  { name: 'currency', type: 'string' },
  { name: 'occurred_at', type: 'timestamp' },
  { name: 'auth', type: 'string' },
]
const settlementSchema: ColumnT[] = [
  { name: 'acq_id', type: 'string' },
  { name: 'order_id', type: 'string' },
  { name: 'gross', type: 'decimal', scale: 2 },
  { name: 'currency', type: 'string' },
  { name: 'settled_on', type: 'date' },
  { name: 'auth', type: 'string' },
]
const ledgerRows: RowT[] = [
  {
    ledger_tx_id: 'L1',
    order_id: 'ORD-1',
    amount: '100.00',
    currency: 'BRL',
    occurred_at: '2026-01-05T23:30:00.000Z',
    auth: 'A-11',
  },
  {
    ledger_tx_id: 'L2',
    order_id: 'ORD-1',
    amount: '-100.00',
    currency: 'BRL',
    occurred_at: '2026-01-20T10:00:00.000Z',
    auth: 'A-11',
  },
  {
    ledger_tx_id: 'L3',
    order_id: 'ORD-2',
    amount: '55.10',
    currency: 'BRL',
    occurred_at: '2026-01-06T10:00:00.000Z',
    auth: 'A-12',
  },
  {
    ledger_tx_id: 'L4',
    order_id: 'ORD-3',
    amount: '80.00',
    currency: 'USD',
    occurred_at: '2026-01-07T10:00:00.000Z',
    auth: 'A-13',
  },
  {
    ledger_tx_id: 'L5',
    order_id: 'ORD-4',
    amount: '20.00',
    currency: 'BRL',
    occurred_at: '2026-01-08T10:00:00.000Z',
    auth: 'A-14',
  },
]
const settlementRows: RowT[] = [
  { acq_id: 'S1', order_id: 'ORD-1', gross: '100.00', currency: 'BRL', settled_on: '2026-01-06', auth: 'A-11' },
  { acq_id: 'S2', order_id: ' ord-2', gross: '55.13', currency: 'BRL', settled_on: '2026-01-08', auth: 'A-12' },
  { acq_id: 'S3', order_id: 'ORD-3', gross: '80.00', currency: 'USD', settled_on: '2026-01-09', auth: 'A-13' },
  { acq_id: 'S4', order_id: 'ORD-9', gross: '20.00', currency: 'BRL', settled_on: '2026-01-09', auth: 'A-99' },
]

t.test('propose_match: the sale, not its chargeback, gets the settlement; reasons name the evidence', async (t) => {
  const { proposals } = proposeMatch.deterministic({
    rows_a: ledgerRows,
    rows_b: settlementRows,
    schemas: { a: ledgerSchema, b: settlementSchema },
  })
  const byLeft = new Map(proposals.map((p) => [p.left, p]))
  t.equal(byLeft.get(0)?.right, 0, 'L1 (sale) ↔ S1')
  t.notOk(byLeft.has(1), 'the chargeback L2 is left out')
  t.equal(byLeft.get(0)?.reason, 'same order_id ORD-1; same auth A-11; amounts equal; 1 day apart')
  t.equal(byLeft.get(2)?.right, 1, 'ORD-2 matches " ord-2" after TRIM/UPPER')
  t.match(byLeft.get(2)?.reason, /ignoring case.*amounts 0\.03 apart; 2 days apart/)
  t.equal(byLeft.get(3)?.right, 2)
  const differing = proposals.find((p) => p.right === 3)
  t.ok(!differing || differing.confidence < 0.5, 'disagreeing id-like references halve the score')
  t.same(
    proposeMatch.check!(
      { proposals },
      { rows_a: ledgerRows, rows_b: settlementRows, schemas: { a: ledgerSchema, b: settlementSchema } },
    ),
    [],
  )
  t.ok(
    proposals.every((p, i) => i === 0 || proposals[i - 1].confidence >= p.confidence),
    'best first',
  )
  const limited = proposeMatch.deterministic({
    rows_a: ledgerRows,
    rows_b: settlementRows,
    schemas: { a: ledgerSchema, b: settlementSchema },
    limit: 1,
  })
  t.equal(limited.proposals.length, 1)
})

t.test(
  'propose_match: without mappings, columns sharing values are compared (invoice_id vs reference_number)',
  async (t) => {
    const a: ColumnT[] = [
      { name: 'invoice_id', type: 'string' },
      { name: 'total', type: 'decimal', scale: 2 },
      { name: 'invoice_date', type: 'date' },
    ]
    const b: ColumnT[] = [
      { name: 'payment_id', type: 'string' },
      { name: 'reference_number', type: 'string' },
      { name: 'paid', type: 'decimal', scale: 2 },
      { name: 'paid_on', type: 'date' },
    ]
    const { proposals } = proposeMatch.deterministic({
      rows_a: [
        { invoice_id: 'INV-1', total: '10.00', invoice_date: '2024-01-01' },
        { invoice_id: 'INV-2', total: '20.00', invoice_date: '2024-01-02' },
      ],
      rows_b: [
        { payment_id: 'P-9', reference_number: 'INV-2', paid: '20.00', paid_on: '2024-01-05' },
        { payment_id: 'P-8', reference_number: 'INV-1', paid: '10.00', paid_on: '2024-01-01' },
      ],
      schemas: { a, b },
    })
    t.same(
      proposals.map((p) => [p.left, p.right, p.reason]),
      [
        [0, 1, 'same invoice_id/reference_number INV-1; amounts equal; same day'],
        [1, 0, 'same invoice_id/reference_number INV-2; amounts equal; 3 days apart'],
      ],
    )
  },
)

const ledgerMappings = map([
  ['order_id', 'order_id'],
  ['auth', 'auth'],
  ['currency', 'currency'],
  ['amount', 'gross'],
  ['occurred_at', 'settled_on'],
])

t.test(
  'infer_rules: identifiers, attributes, tolerance and window from confirmed pairs, strictest first',
  async (t) => {
    const input = {
      schema_a: ledgerSchema,
      schema_b: settlementSchema,
      sample_a: ledgerRows,
      sample_b: settlementRows,
      mappings: ledgerMappings,
      confirmed_pairs: [
        { left: 0, right: 0 },
        { left: 2, right: 1 },
        { left: 3, right: 2 },
      ],
    }
    const out = inferRules.deterministic(input)
    t.same(out.primary_keys, { left: ['ledger_tx_id'], right: ['acq_id'] }, 'own ids, not the shared order_id')
    t.equal(out.pattern, '1:1')
    t.same(
      out.rules.map((r) => r.sql),
      [
        'UPPER(TRIM(l.order_id)) = UPPER(TRIM(r.order_id)) AND l.auth = r.auth AND l.currency = r.currency',
        "UPPER(TRIM(l.order_id)) = UPPER(TRIM(r.order_id)) AND l.currency = r.currency AND ABS(l.amount - r.gross) <= 0.04 AND r.settled_on BETWEEN CAST(l.occurred_at AS date) AND CAST(l.occurred_at AS date) + INTERVAL '3 days'",
      ],
      'lags 1..2 widened by a day without crossing zero; 0.03 → 0.04',
    )
    t.ok(out.rules[0].confidence > out.rules[1].confidence)
    t.same(inferRules.check!(out, input), [])
    // the rules find every confirmed pair, and only those, in the engine
    const recipe = buildRecipe.deterministic({
      rules: out.rules,
      sources: { left: 'ledger', right: 'settlement' },
      primary_keys: out.primary_keys,
      pattern: out.pattern,
    }).recipe as unknown as Recipe
    const e = runRows(
      recipe.passes,
      ledgerRows.map((r) => ({ ...r, id: r.ledger_tx_id })),
      settlementRows.map((r) => ({ ...r, id: r.acq_id })),
    )
    t.same(e.matches.map((m) => `${m.left_keys[0]}|${m.right_keys[0]}`).sort(), ['L1|S1', 'L3|S2', 'L4|S3'])
  },
)

t.test('infer_rules: a single identifier gives an amount-and-date rule, then the identifier alone', async (t) => {
  const out = inferRules.deterministic({
    schema_a: ledgerSchema,
    schema_b: settlementSchema,
    sample_a: ledgerRows,
    sample_b: settlementRows,
    mappings: map([
      ['order_id', 'order_id'],
      ['currency', 'currency'],
      ['amount', 'gross'],
      ['occurred_at', 'settled_on'],
    ]),
    confirmed_pairs: [
      { left: 0, right: 0 },
      { left: 3, right: 2 },
    ],
  })
  t.same(
    out.rules.map((r) => [r.name, r.sql]),
    [
      [
        'reference_amount_date',
        "l.order_id = r.order_id AND l.currency = r.currency AND l.amount = r.gross AND r.settled_on BETWEEN CAST(l.occurred_at AS date) AND CAST(l.occurred_at AS date) + INTERVAL '3 days'",
      ],
      ['reference', 'l.order_id = r.order_id'],
    ],
  )
})

t.test('infer_rules: no identifier gives one rule on amount and date; bad rules are dropped', async (t) => {
  const out = inferRules.deterministic({
    schema_a: ledgerSchema,
    schema_b: settlementSchema,
    sample_a: ledgerRows,
    sample_b: settlementRows,
    mappings: map([
      ['amount', 'gross'],
      ['occurred_at', 'settled_on'],
    ]),
    confirmed_pairs: [
      { left: 0, right: 0 },
      { left: 3, right: 2 },
    ],
  })
  t.same(
    out.rules.map((r) => r.sql),
    [
      "l.amount = r.gross AND r.settled_on BETWEEN CAST(l.occurred_at AS date) AND CAST(l.occurred_at AS date) + INTERVAL '3 days'",
    ],
  )
  const check = inferRules.check!(
    { ...out, rules: [{ name: 'x', sql: 'l.amount = r.nope', description: '', confidence: 0.5 }] },
    { schema_a: ledgerSchema, schema_b: settlementSchema, sample_a: [], sample_b: [], mappings: [] },
  )
  t.match(check, [/rule x: right source has no column "nope"/])
})

t.test('infer_rules: the glossary links columns and fixes roles', async (t) => {
  const out = inferRules.deterministic({
    schema_a: ledgerSchema,
    schema_b: settlementSchema,
    sample_a: ledgerRows,
    sample_b: settlementRows,
    mappings: map([['order_id', 'order_id']]),
    confirmed_pairs: [
      { left: 0, right: 0 },
      { left: 3, right: 2 },
    ],
    glossary: {
      terms: [
        { term: 'amount', source: 'a', column: 'amount' },
        { term: 'amount', source: 'b', column: 'gross' },
        { term: 'key', source: 'b', column: 'auth' },
      ],
    },
  })
  t.same(out.primary_keys.right, ['auth'])
  t.match(out.rules[0].sql, /l\.amount = r\.gross/)
})

t.test('infer_rules: a confirmed split becomes a 1:N rule with the reference extended and a sum', async (t) => {
  const a: ColumnT[] = [
    { name: 'invoice_id', type: 'string' },
    { name: 'customer_id', type: 'string' },
    { name: 'amount', type: 'decimal', scale: 2 },
  ]
  const b: ColumnT[] = [
    { name: 'payment_id', type: 'string' },
    { name: 'payer_id', type: 'string' },
    { name: 'reference_number', type: 'string' },
    { name: 'paid_amount', type: 'decimal', scale: 2 },
  ]
  const out = inferRules.deterministic({
    schema_a: a,
    schema_b: b,
    sample_a: [
      { invoice_id: 'INV-1', customer_id: 'C-1', amount: '10.00' },
      { invoice_id: 'INV-2', customer_id: 'C-2', amount: '50.00' },
    ],
    sample_b: [
      { payment_id: 'P-1', payer_id: 'C-1', reference_number: 'INV-1', paid_amount: '10.00' },
      { payment_id: 'P-2', payer_id: 'C-2', reference_number: 'INV-2-PART1', paid_amount: '20.00' },
      { payment_id: 'P-3', payer_id: 'C-2', reference_number: 'INV-2-PART2', paid_amount: '30.00' },
    ],
    mappings: map([
      ['invoice_id', 'reference_number'],
      ['customer_id', 'payer_id'],
      ['amount', 'paid_amount'],
    ]),
    confirmed_pairs: [
      { left: 0, right: 0 },
      { left: 1, right: 1 },
      { left: 1, right: 2 },
    ],
  })
  t.equal(out.pattern, '1:N')
  const split = out.rules.find((r) => r.pattern === '1:N')
  t.equal(split?.sql, "l.customer_id = r.payer_id AND r.reference_number LIKE l.invoice_id || '-%'")
  t.same(split?.aggregate, { sum: 'r.paid_amount', equals: 'l.amount', tolerance: '0.01', max_group: 4 })
})

// ---- end to end on the shared datasets: infer → build_recipe → engine → precision / recall ----

const csv = async (path: string) => (await loadCsv(join(datasetsDir, path))).table
const schemaOf = (table: Table): ColumnT[] => table.columns.map((c) => ({ ...c }))
const rowsOf = (table: Table, n = 20): RowT[] =>
  Array.from({ length: Math.min(n, table.length) }, (_, i) =>
    Object.fromEntries(table.columns.map((c, k) => [c.name, jsonValue(table.data[k], i)])),
  )
const cells = (table: Table, name: string) => {
  const col = table.data[table.columns.findIndex((c) => c.name === name)]
  return Array.from({ length: table.length }, (_, i) => String(jsonValue(col, i)))
}

interface Quality {
  precision: number
  recall: number
  recipe: Recipe
}

/**
 * Infers rules from pairs confirmed as table rows, assembles the recipe, runs it; `correct` judges a
 * matched (left, right) row pair, `population` names the unit of recall a correct pair finds.
 */
function endToEnd(
  left: Table,
  right: Table,
  mappings: MappingT[],
  confirmed: { left: number; right: number }[],
  correct: (l: number, r: number) => boolean,
  population: (l: number, r: number) => number,
  populationSize: number,
): Quality {
  // the sample a person saw: the first 20 rows per side, plus any confirmed row beyond them
  const sampleRows = (table: Table, wanted: number[]) => {
    const rows = Array.from({ length: Math.min(20, table.length) }, (_, i) => i)
    for (const i of wanted) if (!rows.includes(i)) rows.push(i)
    return rows
  }
  const ra = sampleRows(
    left,
    confirmed.map((p) => p.left),
  )
  const rb = sampleRows(
    right,
    confirmed.map((p) => p.right),
  )
  const all = (table: Table, rows: number[]) => {
    const full = rowsOf(table, table.length)
    return rows.map((i) => full[i])
  }
  const inferred = inferRules.deterministic({
    schema_a: schemaOf(left),
    schema_b: schemaOf(right),
    sample_a: all(left, ra),
    sample_b: all(right, rb),
    mappings,
    confirmed_pairs: confirmed.map((p) => ({ left: ra.indexOf(p.left), right: rb.indexOf(p.right) })),
  })
  const built = buildRecipe.deterministic({
    rules: inferred.rules,
    sources: { left: 'a', right: 'b' },
    primary_keys: inferred.primary_keys,
    pattern: inferred.pattern,
  })
  const recipe = built.recipe as unknown as Recipe
  const e = evidence(recipe, left, right)
  if (partitionProblems(e, left.length, right.length).length) throw new Error('partition broken')
  const m = e.result.matches
  let pairsClaimed = 0
  let pairsCorrect = 0
  const found = new Set<number>()
  for (let k = 0; k < m.count; k++) {
    if (m.ambiguous[k]) continue // held for review: neither a claimed match nor a miss
    for (let a = m.leftStart[k]; a < m.leftStart[k + 1]; a++)
      for (let b = m.rightStart[k]; b < m.rightStart[k + 1]; b++) {
        const l = m.leftRows[a]
        const r = m.rightRows[b]
        pairsClaimed++
        if (correct(l, r)) {
          pairsCorrect++
          const unit = population(l, r)
          if (unit >= 0) found.add(unit)
        }
      }
  }
  return { precision: pairsCorrect / pairsClaimed, recall: found.size / populationSize, recipe }
}

const round3 = (x: number) => Math.round(x * 1000) / 1000

t.test(
  'acquirer settlement: rules from 3 confirmed pairs (and from proposals) find the sales',
  { skip: datasetsSkip },
  async (t) => {
    const ledger = await csv('acquirer-settlement/ledger-midaz.csv')
    const settlement = await loadJson(join(datasetsDir, 'acquirer-settlement/acquirer-settlement.json'))
    const lOrder = cells(ledger, 'order_id')
    const lScenario = cells(ledger, 'scenario')
    const rOrder = cells(settlement, 'order_id')
    const rScenario = cells(settlement, 'scenario')
    const settled = new Set(rOrder)
    // population: ledger sales whose order has a settlement
    const sales = new Map<number, number>()
    for (let i = 0; i < ledger.length; i++)
      if (lScenario[i] !== 'ledger_chargeback' && settled.has(lOrder[i])) sales.set(i, sales.size)
    const mappings = map([
      ['order_id', 'order_id'],
      ['authorization_code', 'authorization_code'],
      ['merchant_id', 'merchant_id'],
      ['currency', 'currency'],
      ['amount', 'gross_amount'],
      ['occurred_at', 'settlement_date'],
    ])
    const exact = rowsOf(settlement)
      .map((_, j) => j)
      .filter((j) => rScenario[j] === 'exact_order_and_authorization_match')
      .slice(0, 3)
    const confirmed = exact.map((j) => ({ left: lOrder.indexOf(rOrder[j]), right: j }))
    t.ok(
      confirmed.every((p) => p.left >= 0 && p.left < 20),
      'the confirmed sales are in the ledger sample',
    )
    const correct = (l: number, r: number) => lOrder[l] === rOrder[r] && lScenario[l] !== 'ledger_chargeback'
    const population = (l: number) => sales.get(l) ?? -1

    const q = endToEnd(ledger, settlement, mappings, confirmed, correct, population, sales.size)
    t.comment(`acquirer, confirmed: precision ${round3(q.precision)}, recall ${round3(q.recall)}`)
    t.comment(q.recipe.passes.map((p) => `${p.name}: ${p.when}`).join('\n'))
    t.same(q.recipe.left.key, ['ledger_tx_id'])
    t.same(q.recipe.right.key, ['acquirer_tx_id'])
    t.ok(q.precision >= 0.98, `precision ${q.precision}`)
    t.ok(q.recall >= 0.95, `recall ${q.recall}`)

    const proposed = endToEnd(ledger, settlement, mappings, [], correct, population, sales.size)
    t.comment(`acquirer, proposals: precision ${round3(proposed.precision)}, recall ${round3(proposed.recall)}`)
    t.ok(proposed.precision >= 0.98, `precision ${proposed.precision}`)
    t.ok(proposed.recall >= 0.95, `recall ${proposed.recall}`)
  },
)

const kallaMappings = map([
  ['invoice_id', 'reference_number'],
  ['customer_id', 'payer_id'],
  ['customer_name', 'payer_name'],
  ['currency', 'currency'],
  ['amount', 'paid_amount'],
  ['invoice_date', 'payment_date'],
])

/** kalla's truth: a payment's invoice is the one its reference names, any -PARTn suffix stripped. */
async function kalla(t: Test, folder: string, split: string, expected: [number, number]) {
  const invoices = await csv(`${folder}/invoices.csv`)
  const payments = await csv(`${folder}/payments.csv`)
  const invoiceIds = cells(invoices, 'invoice_id')
  const refs = cells(payments, 'reference_number').map((r) => r.replace(/-PART\d+$/, ''))
  const known = new Set(invoiceIds)
  const payable = new Map<number, number>()
  refs.forEach((ref, j) => {
    if (known.has(ref)) payable.set(j, payable.size)
  })
  const correct = (l: number, r: number) => invoiceIds[l] === refs[r]
  const population = (_l: number, r: number) => payable.get(r) ?? -1
  const clean = [0, 1, 2].map((i) => ({ left: i, right: refs.indexOf(invoiceIds[i]) }))
  const splitLeft = invoiceIds.indexOf(split)
  const parts = refs.map((ref, j) => (ref === split ? j : -1)).filter((j) => j >= 0)
  const withSplit = [...clean, ...parts.map((right) => ({ left: splitLeft, right }))]
  const label = folder.replace(/^kalla\/?/, '') || 'hand-written'
  const q1 = endToEnd(invoices, payments, kallaMappings, clean, correct, population, payable.size)
  const q2 = endToEnd(invoices, payments, kallaMappings, withSplit, correct, population, payable.size)
  t.comment(
    `kalla ${label}: 3 pairs precision ${round3(q1.precision)} recall ${round3(q1.recall)}; with the split (${split}) precision ${round3(q2.precision)} recall ${round3(q2.recall)}`,
  )
  t.comment(q2.recipe.passes.map((p) => `${p.name}: ${p.when}`).join('\n'))
  t.equal(q1.precision, 1)
  t.equal(round3(q1.recall), expected[0])
  t.equal(q2.precision, 1)
  t.equal(round3(q2.recall), expected[1])
}

t.test('kalla/generated: 3 clean pairs, then a confirmed split', { skip: datasetsSkip }, (t) =>
  kalla(t, 'kalla/generated', 'INV-000038', [0.902, 1]),
)
t.test('kalla hand-written: 3 clean pairs, then a confirmed split', { skip: datasetsSkip }, (t) =>
  kalla(t, 'kalla', 'INV-2024-008', [0.8, 1]),
)
