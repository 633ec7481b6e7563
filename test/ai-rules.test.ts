// propose_match and infer_rules, deterministic: unit behaviour, then end to end on the shared
// datasets (see their README for the ground truth): rules inferred from three confirmed pairs,
// assembled by build_recipe, run by the engine and scored for precision and recall.

import t from 'tap'
import type { ColumnT, MappingT, RowT } from '../src/ai/schemas.js'
import { buildRecipe } from '../src/ai/tools/build_recipe.js'
import { inferRules } from '../src/ai/tools/infer_rules.js'
import { proposeMatch } from '../src/ai/tools/propose_match.js'
import { jsonValue } from '../src/engine/data/builder.js'
import type { Table } from '../src/engine/data/table.js'
import type { Recipe } from '../src/recipes/schema.js'
import { datasetsSkip } from './helpers/datasets.js'
import { evidence, partitionProblems, runRows } from './helpers/engine.js'
import { acquirerJudge, cells, kallaGeneratedStatsProblems, kallaJudge, type Links } from './helpers/truth.js'

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
        'UPPER(TRIM(l.order_id)) = UPPER(TRIM(r.order_id)) AND l.auth = r.auth AND l.currency = r.currency AND ABS(l.amount - r.gross) <= 0.04',
        "UPPER(TRIM(l.order_id)) = UPPER(TRIM(r.order_id)) AND l.currency = r.currency AND ABS(l.amount - r.gross) <= 0.04 AND r.settled_on BETWEEN CAST(l.occurred_at AS date) AND CAST(l.occurred_at AS date) + INTERVAL '3 days'",
      ],
      'amounts kept even with every identifier; lags 1..2 widened by a day without crossing zero; 0.03 → 0.04',
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

t.test('infer_rules: a single identifier gives an amount-and-date rule, then identifier and amount', async (t) => {
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
        'order_id_amount_date',
        "l.order_id = r.order_id AND l.currency = r.currency AND l.amount = r.gross AND r.settled_on BETWEEN CAST(l.occurred_at AS date) AND CAST(l.occurred_at AS date) + INTERVAL '3 days'",
      ],
      ['order_id_amount', 'l.order_id = r.order_id AND l.currency = r.currency AND l.amount = r.gross'],
    ],
    'never the identifier alone: equal amounts on the confirmed pairs stay a condition',
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
  t.same(split?.aggregate, { sum: 'SUM(r.paid_amount)', equals: 'l.amount', tolerance: '0.01', max_group: 4 })
})

/** Sale and settlement rows for the sample-evidence tests: order, amount, and the settled gross. */
function salesSample(rows: [string, string, string][]) {
  const a: ColumnT[] = [
    { name: 'tx', type: 'string' },
    { name: 'order_id', type: 'string' },
    { name: 'amount', type: 'decimal', scale: 2 },
  ]
  const b: ColumnT[] = [
    { name: 'acq', type: 'string' },
    { name: 'order_id', type: 'string' },
    { name: 'gross', type: 'decimal', scale: 2 },
  ]
  return {
    schema_a: a,
    schema_b: b,
    sample_a: rows.map(([order, amount], i) => ({ tx: `T${i}`, order_id: order, amount })),
    sample_b: rows.map(([order, , gross], i) => ({ acq: `S${i}`, order_id: order, gross })),
    mappings: map([
      ['order_id', 'order_id'],
      ['amount', 'gross'],
    ]),
    confirmed_pairs: [0, 1, 2].map((i) => ({ left: i, right: i })),
  }
}

t.test(
  'infer_rules: near pairs in the sample give a tolerance pass; a difference of another size does not',
  async (t) => {
    const input = salesSample([
      ['O-1', '100.00', '100.00'],
      ['O-2', '250.00', '250.00'],
      ['O-3', '80.00', '80.00'],
      ['O-4', '1223.68', '1223.71'],
      ['O-5', '431.10', '431.13'],
      ['O-6', '1380.00', '1387.25'],
    ])
    const out = inferRules.deterministic(input)
    t.same(
      out.rules.map((r) => [r.name, r.sql]),
      [
        ['order_id_amount_date', 'l.order_id = r.order_id AND l.amount = r.gross'],
        ['order_id_amount', 'l.order_id = r.order_id AND l.amount = r.gross'],
        ['near_amounts', 'l.order_id = r.order_id AND ABS(l.amount - r.gross) <= 0.04'],
      ].filter((r, i, all) => all.findIndex((x) => x[1] === r[1]) === i),
    )
    t.match(
      out.rules.find((r) => r.name === 'near_amounts')?.description,
      /2 sample pairs agreeing on the rest had amounts 0\.03 apart; 1 pair 7\.25 or more apart, a difference of another size, is left for review/,
    )
    // differences that grow with the amount become a share of it
    const relative = inferRules.deterministic(
      salesSample([
        ['O-1', '100.00', '100.00'],
        ['O-2', '250.00', '250.00'],
        ['O-3', '80.00', '80.00'],
        ['O-4', '1000.00', '1005.00'],
        ['O-5', '20000.00', '20300.00'],
      ]),
    )
    t.equal(
      relative.rules.find((r) => r.name === 'near_amounts')?.sql,
      'l.order_id = r.order_id AND ABS(l.amount - r.gross) <= 0.019 * ABS(l.amount)',
      '1.5% at most, a quarter above: 1.9%',
    )
    // nothing near in the sample: amounts stay equal, no tolerance is invented
    const exact = inferRules.deterministic(
      salesSample([
        ['O-1', '100.00', '100.00'],
        ['O-2', '250.00', '250.00'],
        ['O-3', '80.00', '80.00'],
      ]),
    )
    t.notOk(exact.rules.some((r) => r.name === 'near_amounts'))
    t.ok(exact.rules.every((r) => r.sql.includes('l.amount = r.gross')))
  },
)

t.test('infer_rules: parts in the sample extending an id give a 1:N pass without a confirmed split', async (t) => {
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
  const sample_a = ['10.00', '20.00', '30.00', '50.00', '75.00'].map((amount, i) => ({
    invoice_id: `INV-${i + 1}`,
    customer_id: `C-${i + 1}`,
    amount,
  }))
  const payments: [string, string][] = [
    ['INV-1', '10.00'],
    ['INV-2', '20.00'],
    ['INV-3', '30.00'],
    ['INV-4-PART1', '20.00'],
    ['INV-4-PART2', '30.01'],
    ['INV-5-DUP', '75.00'],
  ]
  const sample_b = payments.map(([reference_number, paid_amount], i) => ({
    payment_id: `P-${i}`,
    // the payer of INV-n is C-n
    payer_id: `C-${reference_number.split('-')[1]}`,
    reference_number,
    paid_amount,
  }))
  const input = {
    schema_a: a,
    schema_b: b,
    sample_a,
    sample_b,
    mappings: map([
      ['invoice_id', 'reference_number'],
      ['customer_id', 'payer_id'],
      ['amount', 'paid_amount'],
    ]),
    confirmed_pairs: [0, 1, 2].map((i) => ({ left: i, right: i })),
  }
  const out = inferRules.deterministic(input)
  t.equal(out.pattern, '1:N')
  const split = out.rules.find((r) => r.pattern === '1:N')
  t.equal(split?.sql, "l.customer_id = r.payer_id AND r.reference_number LIKE l.invoice_id || '-%'")
  t.same(
    split?.aggregate,
    { sum: 'r.paid_amount', equals: 'l.amount', tolerance: '0.02', max_group: 4 },
    'the sample split is 0.01 off',
  )
  t.match(split?.description, /as in 1 split seen in the sample/)
  t.same(inferRules.check!(out, input), [])
  // one extension per id (a duplicate, not parts) is no split
  const dupOnly = inferRules.deterministic({
    ...input,
    sample_b: sample_b.filter((r) => !r.reference_number.includes('PART')),
  })
  t.notOk(dupOnly.rules.some((r) => r.pattern === '1:N'))
})

t.test('infer_rules from proposals: only the proposals of the closest kind stand in for confirmations', async (t) => {
  const input = salesSample([
    ['O-1', '100.00', '100.00'],
    ['O-2', '250.00', '250.00'],
    ['O-3', '80.00', '80.00'],
    ['O-4', '1380.00', '1387.25'],
    ['O-5', '431.10', '431.13'],
  ])
  const out = inferRules.deterministic({ ...input, confirmed_pairs: [] })
  t.same(
    out.rules.map((r) => r.sql),
    ['l.order_id = r.order_id AND l.amount = r.gross', 'l.order_id = r.order_id AND ABS(l.amount - r.gross) <= 0.04'],
    'the proposals 0.03 and 7.25 off are not taken as a tolerance to learn; the sample gives 0.04',
  )
  t.match(out.rules[0].description, /3 proposed pairs/)
  t.match(out.rules[1].description, /7\.25 or more apart, a difference of another size, is left for review/)
})

// ---- end to end on the shared datasets: infer → build_recipe → engine → precision / recall ----

const schemaOf = (table: Table): ColumnT[] => table.columns.map((c) => ({ ...c }))
const rowsOf = (table: Table, n = 20): RowT[] =>
  Array.from({ length: Math.min(n, table.length) }, (_, i) =>
    Object.fromEntries(table.columns.map((c, k) => [c.name, jsonValue(table.data[k], i)])),
  )

interface Quality {
  precision: number
  recall: number
  claimed: number
  wrong: number
  /** Groups the engine held for review: neither a claimed match nor a miss. */
  ambiguous: number
  recipe: Recipe
}

/**
 * What a person does in the wizard: previews the first `previewRows` rows of each side (the
 * confirmed rows are among them or added), confirms three pairs; infer_rules, build_recipe, then
 * the engine over the whole files. Every claimed pair is judged by the dataset's truth
 * (test/helpers/truth.ts): recall is the share of its links found.
 */
function endToEnd(
  left: Table,
  right: Table,
  mappings: MappingT[],
  confirmed: { left: number; right: number }[],
  truth: Links,
  previewRows: number,
): Quality {
  const sampleRows = (table: Table, wanted: number[]) => {
    const rows = Array.from({ length: Math.min(previewRows, table.length) }, (_, i) => i)
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
  const input = {
    schema_a: schemaOf(left),
    schema_b: schemaOf(right),
    sample_a: all(left, ra),
    sample_b: all(right, rb),
    mappings,
    confirmed_pairs: confirmed.map((p) => ({ left: ra.indexOf(p.left), right: rb.indexOf(p.right) })),
  }
  const inferred = inferRules.deterministic(input)
  if (inferRules.check!(inferred, input).length) throw new Error('an inferred rule fails the validator')
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
  let claimed = 0
  let correct = 0
  let ambiguous = 0
  const found = new Set<string>()
  for (let k = 0; k < m.count; k++) {
    if (m.ambiguous[k]) {
      ambiguous++
      continue
    }
    for (let a = m.leftStart[k]; a < m.leftStart[k + 1]; a++)
      for (let b = m.rightStart[k]; b < m.rightStart[k + 1]; b++) {
        const l = m.leftRows[a]
        const r = m.rightRows[b]
        claimed++
        if (truth.has(l, r)) {
          correct++
          found.add(`${l}|${r}`)
        }
      }
  }
  return {
    precision: correct / claimed,
    recall: found.size / truth.size,
    claimed,
    wrong: claimed - correct,
    ambiguous,
    recipe,
  }
}

const round3 = (x: number) => Math.round(x * 1000) / 1000
const describe = (q: Quality) =>
  `precision ${round3(q.precision)} (${q.wrong} wrong of ${q.claimed} claimed pairs), recall ${round3(q.recall)}, ${q.ambiguous} held as ambiguous`

const acquirerMappings = map([
  ['order_id', 'order_id'],
  ['authorization_code', 'authorization_code'],
  ['merchant_id', 'merchant_id'],
  ['currency', 'currency'],
  ['amount', 'gross_amount'],
  ['occurred_at', 'settlement_date'],
])

t.test(
  'acquirer settlement: rules from 3 confirmed pairs, scored against the scenario labels',
  { skip: datasetsSkip },
  async (t) => {
    const { left: ledger, right: settlement, links: truth } = await acquirerJudge.load()
    const [lOrder, rOrder, rScenario] = [
      cells(ledger, 'order_id'),
      cells(settlement, 'order_id'),
      cells(settlement, 'scenario'),
    ]
    t.equal(
      new Set(truth.pairs.map(([l]) => l)).size,
      785,
      'sales with a true settlement: 704 exact + 45 lag + 19 tolerance + 17 fee variance',
    )
    t.equal(truth.size, 785, 'one true settlement each')
    // three ordinary pairs: the first exact settlements and their sales
    const confirmed = rScenario
      .map((sc, j) => (sc === 'exact_order_and_authorization_match' ? j : -1))
      .filter((j) => j >= 0)
      .slice(0, 3)
      .map((j) => ({ left: lOrder.indexOf(rOrder[j]), right: j }))

    const q = endToEnd(ledger, settlement, acquirerMappings, confirmed, truth, 100)
    t.comment(`acquirer, 3 confirmed pairs, 100-row previews: ${describe(q)}`)
    t.comment(q.recipe.passes.map((p) => `${p.name}: ${p.when}`).join('\n'))
    t.same(
      q.recipe.passes.map((p) => [p.name, p.when]),
      [
        [
          'identifiers',
          'l.order_id = r.order_id AND l.authorization_code = r.authorization_code AND l.merchant_id = r.merchant_id AND l.currency = r.currency AND l.amount = r.gross_amount',
        ],
        [
          'order_id_amount_date',
          "l.order_id = r.order_id AND l.merchant_id = r.merchant_id AND l.currency = r.currency AND l.amount = r.gross_amount AND r.settlement_date BETWEEN CAST(l.occurred_at AS date) AND CAST(l.occurred_at AS date) + INTERVAL '4 days'",
        ],
        [
          'near_amounts',
          'l.order_id = r.order_id AND l.authorization_code = r.authorization_code AND l.merchant_id = r.merchant_id AND l.currency = r.currency AND ABS(l.amount - r.gross_amount) <= 0.04',
        ],
      ],
      'amounts respected; the 0.03 near pairs of the sample give 0.04, the 7.25 ones are left out',
    )
    t.same([q.recipe.left.key, q.recipe.right.key], [['ledger_tx_id'], ['acquirer_tx_id']])
    t.ok(q.precision >= 0.98, `precision ${q.precision}`)
    t.ok(q.recall >= 0.95, `recall ${q.recall}`)
    // exactly: no amount_mismatch_outside_tolerance matched; the 15 thrice-settled orders held
    t.equal(q.wrong, 0)
    t.equal(q.ambiguous, 15)
    t.equal(round3(q.recall), round3(770 / 785))

    const shown = endToEnd(ledger, settlement, acquirerMappings, confirmed, truth, 20)
    t.comment(`acquirer, 3 confirmed pairs, 20-row previews: ${describe(shown)}`)
    t.equal(shown.wrong, 0, 'no near pairs in 20 rows: equal amounts only, still no mismatch matched')
    t.ok(shown.recall >= 0.95, `recall ${shown.recall}`)

    const proposed = endToEnd(ledger, settlement, acquirerMappings, [], truth, 100)
    t.comment(`acquirer, from proposals, 100-row previews: ${describe(proposed)}`)
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

/** kalla's truth (test/helpers/truth.ts), and three ordinary pairs: the first three invoices and their payments. */
async function kallaTruth(folder: 'kalla' | 'kalla/generated') {
  const truth = await kallaJudge(folder).load()
  const invoiceIds = cells(truth.left, 'invoice_id')
  const refs = cells(truth.right, 'reference_number')
  const confirmed = [0, 1, 2].map((i) => ({ left: i, right: refs.indexOf(invoiceIds[i]) }))
  return { invoices: truth.left, payments: truth.right, truth: truth.links, confirmed, refs, judged: truth }
}

t.test(
  'kalla/generated: 3 confirmed pairs find the exact, tolerance and split payments',
  { skip: datasetsSkip },
  async (t) => {
    const { invoices, payments, truth, confirmed, judged } = await kallaTruth('kalla/generated')
    // the truth agrees with the generator's own count: 30 exact + 7 tolerance + 2 invoices paid in 2 parts
    t.same(await kallaGeneratedStatsProblems(judged), [])
    t.equal(truth.size, 41)

    const q = endToEnd(invoices, payments, kallaMappings, confirmed, truth, 100)
    t.comment(`kalla/generated, 3 confirmed pairs, 100-row previews (whole files): ${describe(q)}`)
    t.comment(q.recipe.passes.map((p) => `${p.name}: ${p.when}`).join('\n'))
    t.ok(q.precision >= 0.98, `precision ${q.precision}`)
    t.ok(q.recall >= 0.95, `recall ${q.recall}`)
    t.same(
      q.recipe.passes.slice(-2).map((p) => [p.name, p.when, p.aggregate]),
      [
        [
          'near_amounts',
          'l.invoice_id = r.reference_number AND l.customer_id = r.payer_id AND l.currency = r.currency AND ABS(l.amount - r.paid_amount) <= 0.025 * ABS(l.amount)',
          undefined,
        ],
        [
          'split_groups',
          "l.customer_id = r.payer_id AND l.currency = r.currency AND r.reference_number LIKE l.invoice_id || '-%'",
          { sum: 'r.paid_amount', equals: 'l.amount', tolerance: '0.02', max_group: 4 },
        ],
      ],
      'near pairs 0.2%..1.95% apart give 2.5%; the PART references give a 1:N pass',
    )

    // a 20-row preview shows neither a near pair nor a split: nothing justifies more than equality
    const shown = endToEnd(invoices, payments, kallaMappings, confirmed, truth, 20)
    t.comment(`kalla/generated, 3 confirmed pairs, 20-row previews: ${describe(shown)}`)
    t.equal(shown.precision, 1)
    t.equal(round3(shown.recall), round3(30 / 41), 'the 30 exact payments only')
  },
)

t.test(
  'kalla hand-written: 3 confirmed pairs; the wire fee is a difference of another size',
  { skip: datasetsSkip },
  async (t) => {
    const { invoices, payments, truth, confirmed, refs } = await kallaTruth('kalla')
    t.equal(truth.size, 10, 'INV-2024-001..007, both parts of 008, and 015')
    const q = endToEnd(invoices, payments, kallaMappings, confirmed, truth, 100)
    t.comment(`kalla hand-written, 3 confirmed pairs, whole files: ${describe(q)}`)
    t.comment(q.recipe.passes.map((p) => `${p.name}: ${p.when}`).join('\n'))
    t.equal(q.precision, 1, 'the DUP, the advance and the unknown references stay unmatched')
    // The sample's near pairs are 0.01 (a rounding) and 15.00 (a wire fee): 1,500 times apart, the
    // same shape as acquirer-settlement's 0.03 tolerance and 7.25 mismatch, which its labels say
    // must not match. Three equal-amount pairs cannot tell the two conventions apart, so the wire
    // fee is left for review and named in the rule's description.
    t.equal(round3(q.recall), 0.9, 'every true payment but the wire-fee one')
    const near = q.recipe.passes.find((p) => p.name === 'near_amounts')
    t.match(near?.when, /ABS\(l\.amount - r\.paid_amount\) <= 0\.02$/)
    const split = q.recipe.passes.find((p) => p.name === 'split_groups')
    t.match(split?.when, /r\.reference_number LIKE l\.invoice_id \|\| '-%'/)
    t.ok(refs.includes('INV-2024-002-DUP'))

    // a person who confirms the wire-fee pair as one of the three teaches the tolerance
    const fee = { left: 5, right: refs.indexOf('INV-2024-006') }
    const taught = endToEnd(invoices, payments, kallaMappings, [confirmed[0], confirmed[1], fee], truth, 100)
    t.comment(`kalla hand-written, 3 confirmed pairs, the wire-fee pair among them: ${describe(taught)}`)
    t.equal(taught.precision, 1)
    t.equal(taught.recall, 1)
  },
)
