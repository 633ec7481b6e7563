// detect_field_mappings, deterministic: names and their synonyms, types, sample values, the
// glossary first, one column in at most one mapping, and a first scope only when both samples
// cover the same months.

import t from 'tap'
import { detectFieldMappings } from '../src/ai/tools/detect_field_mappings.js'
import { Vocabulary } from '../src/ai/language.js'
import type { ColumnT } from '../src/ai/schemas.js'

const bank: ColumnT[] = [
  { name: 'txnId', type: 'string' },
  { name: 'reference', type: 'string' },
  { name: 'total', type: 'decimal', scale: 2 },
  { name: 'posted_at', type: 'timestamp' },
  { name: 'payer', type: 'string' },
]
const invoices: ColumnT[] = [
  { name: 'invoice_id', type: 'string' },
  { name: 'gross_amount', type: 'decimal', scale: 2 },
  { name: 'net_amount', type: 'decimal', scale: 2 },
  { name: 'booking_date', type: 'date' },
  { name: 'client', type: 'string' },
]

t.test('names split on snake and camel case, and synonym groups make unlike names close', async (t) => {
  const v = new Vocabulary()
  t.equal(v.nameScore('postedAt', 'posted_at'), 1)
  t.equal(v.nameScore('amount', 'paid_amount'), 0.9)
  t.equal(v.nameScore('occurred_at', 'settlement_date'), 0.9)
  t.equal(v.nameScore('customer_id', 'payer_id'), 0.8, 'customer~payer, id~id')
  t.ok(v.nameScore('ledger_tx_id', 'acquirer_tx_id') < 0.5, 'a shared "id" is weak evidence')
  t.equal(v.nameScore('colour', 'hue'), 0)
  t.equal(new Vocabulary({ synonyms: [['colour', 'hue']] }).nameScore('colour', 'hue'), 0.9, 'glossary synonyms')
})

t.test('without samples: names and types pair the columns one to one, best first', async (t) => {
  const { mappings, suggested_filters } = detectFieldMappings.deterministic({ schema_a: bank, schema_b: invoices })
  const pairs = mappings.map((m) => `${m.field_a}=${m.field_b}`)
  t.same(pairs.slice(0, 4).sort(), [
    'payer=client',
    'posted_at=booking_date',
    'reference=invoice_id',
    'total=gross_amount',
  ])
  t.notOk(pairs.includes('total=net_amount'), 'net_amount is not taken: total already maps to gross_amount')
  for (const m of mappings) {
    t.ok(m.confidence > 0 && m.confidence <= 1)
    t.ok(m.reason.length > 0)
  }
  t.same(new Set(mappings.map((m) => m.field_a)).size, mappings.length, 'each column of a at most once')
  t.same(suggested_filters, [], 'no samples, no scope')
})

t.test('sample values decide between equally named columns; text with nothing in common drops', async (t) => {
  const a: ColumnT[] = [
    { name: 'amount', type: 'decimal', scale: 2 },
    { name: 'status', type: 'string' },
  ]
  const b: ColumnT[] = [
    { name: 'fee_amount', type: 'decimal', scale: 2 },
    { name: 'net_amount', type: 'decimal', scale: 2 },
    { name: 'status', type: 'string' },
  ]
  const sample_a = [
    { amount: '10.50', status: 'open' },
    { amount: '20', status: 'open' },
  ]
  const sample_b = [
    { fee_amount: '0.30', net_amount: '10.5', status: 'SETTLED' },
    { fee_amount: '0.60', net_amount: '20.00', status: 'SETTLED' },
  ]
  const { mappings } = detectFieldMappings.deterministic({ schema_a: a, schema_b: b, sample_a, sample_b })
  t.match(mappings[0], { field_a: 'amount', field_b: 'net_amount', reason: /100% of sample values shared/ })
  const status = mappings.find((m) => m.field_a === 'status')
  t.ok(!status || status.confidence < mappings[0].confidence / 2, 'same name, no shared value: weak')
})

t.test('glossary terms come first and at full confidence', async (t) => {
  const { mappings } = detectFieldMappings.deterministic({
    schema_a: bank,
    schema_b: invoices,
    glossary: {
      terms: [
        { term: 'net', source: 'a', column: 'total' },
        { term: 'net', source: 'b', column: 'net_amount' },
      ],
    },
  })
  t.match(mappings[0], { field_a: 'total', field_b: 'net_amount', confidence: 1, reason: /glossary/ })
  t.notOk(mappings.some((m) => m.field_b === 'gross_amount' && m.field_a === 'total'))
})

t.test('suggested filters: the whole months both samples cover, on each date column', async (t) => {
  const schema_a: ColumnT[] = [{ name: 'posted_at', type: 'timestamp' }]
  const schema_b: ColumnT[] = [{ name: 'booking_date', type: 'date' }]
  const sample_a = [{ posted_at: '2026-01-03T10:00:00Z' }, { posted_at: '2026-02-27T23:00:00Z' }]
  const same = detectFieldMappings.deterministic({
    schema_a,
    schema_b,
    sample_a,
    sample_b: [{ booking_date: '2026-01-05' }, { booking_date: '2026-02-28' }],
  })
  t.match(same.suggested_filters, [
    { source: 'a', column: 'posted_at', op: 'gte', value: '2026-01-01' },
    { source: 'a', column: 'posted_at', op: 'lt', value: '2026-03-01' },
    { source: 'b', column: 'booking_date', op: 'between', value: ['2026-01-01', '2026-02-28'] },
  ])
  const apart = detectFieldMappings.deterministic({
    schema_a,
    schema_b,
    sample_a,
    sample_b: [{ booking_date: '2026-01-05' }, { booking_date: '2026-04-02' }],
  })
  t.same(apart.suggested_filters, [], 'different periods: no guess')
})
