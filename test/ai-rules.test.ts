// propose_match and infer_rules, deterministic: unit behaviour, then end to end on the shared
// datasets (see their README for the ground truth): rules inferred from three confirmed pairs,
// assembled by build_recipe, run by the engine and scored for precision and recall.

import { join } from 'node:path'
import t from 'tap'
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
        "l.order_id = r.order_id AND l.amount = r.gross AND r.settled_on BETWEEN CAST(l.occurred_at AS date) AND CAST(l.occurred_at AS date) + INTERVAL '3 days'",
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
