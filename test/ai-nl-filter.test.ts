// parse_nl_filter, deterministic: the phrase grammar, periods on each source's date column (a
// date column takes between, a timestamp gte/lt), column words and glossary terms, and the words
// it could not use said plainly. The check resolves filters as load-scoped does.

import t from 'tap'
import { parseNlFilter } from '../src/ai/tools/parse_nl_filter.js'
import type { ColumnT } from '../src/ai/schemas.js'

const ledger: ColumnT[] = [
  { name: 'ledger_tx_id', type: 'string' },
  { name: 'amount', type: 'decimal', scale: 2 },
  { name: 'currency', type: 'string' },
  { name: 'occurred_at', type: 'timestamp' },
]
const settlement: ColumnT[] = [
  { name: 'acquirer_tx_id', type: 'string' },
  { name: 'gross_amount', type: 'decimal', scale: 2 },
  { name: 'net_amount', type: 'decimal', scale: 2 },
  { name: 'currency', type: 'string' },
  { name: 'settlement_date', type: 'date' },
]
const read = (text: string, extra: Record<string, unknown> = {}) =>
  parseNlFilter.deterministic({ text, schema_a: ledger, schema_b: settlement, today: '2026-03-15', ...extra })

t.test('a month and "sales": the period on both date columns, positive amounts on both', async (t) => {
  const out = read('only January 2026 sales')
  t.same(out.filters, [
    { source: 'a', column: 'occurred_at', op: 'gte', value: '2026-01-01' },
    { source: 'a', column: 'occurred_at', op: 'lt', value: '2026-02-01' },
    { source: 'b', column: 'settlement_date', op: 'between', value: ['2026-01-01', '2026-01-31'] },
    { source: 'a', column: 'amount', op: 'gt', value: 0 },
    { source: 'b', column: 'gross_amount', op: 'gt', value: 0 },
  ])
  t.same(out.unparsed, [])
  t.match(out.explanation, /January 2026/)
})

t.test('relative periods count from today', async (t) => {
  const between = (text: string) => read(text).filters.find((f) => f.source === 'b')?.value
  t.same(between('last month'), ['2026-02-01', '2026-02-28'])
  t.same(between('this month'), ['2026-03-01', '2026-03-31'])
  t.same(between('last 7 days'), ['2026-03-09', '2026-03-15'])
  t.same(between('in December'), ['2025-12-01', '2025-12-31'], 'a month without a year: the latest begun')
  t.same(between('2024'), ['2024-01-01', '2024-12-31'])
  t.same(read('yesterday').filters[1], { source: 'a', column: 'occurred_at', op: 'lt', value: '2026-03-15' })
})

t.test('comparisons, ranges and currencies', async (t) => {
  t.same(read('amounts above 500').filters, [
    { source: 'a', column: 'amount', op: 'gt', value: 500 },
    { source: 'b', column: 'gross_amount', op: 'gt', value: 500 },
  ])
  t.same(
    read('under 1,000.50').filters.map((f) => [f.op, f.value]),
    [
      ['lt', '1000.50'],
      ['lt', '1000.50'],
    ],
    'decimals stay exact text',
  )
  t.same(read('between 10 and 20').filters[0], { source: 'a', column: 'amount', op: 'between', value: [10, 20] })
  t.same(read('at least 5 in USD').filters.slice(2), [
    { source: 'a', column: 'currency', op: 'eq', value: 'USD' },
    { source: 'b', column: 'currency', op: 'eq', value: 'USD' },
  ])
})

t.test('a column name or glossary term restricts a number to that column', async (t) => {
  t.same(read('net_amount over 100').filters, [{ source: 'b', column: 'net_amount', op: 'gt', value: 100 }])
  const glossary = { terms: [{ term: 'gross', source: 'b', column: 'gross_amount' }] }
  t.same(read('gross above 500', { glossary }).filters, [{ source: 'b', column: 'gross_amount', op: 'gt', value: 500 }])
})

const amountMapped = [
  { field_a: 'amount', field_b: 'gross_amount', confidence: 0.9, reason: 'confirmed' },
  { field_a: 'occurred_at', field_b: 'settlement_date', confidence: 0.9, reason: 'confirmed' },
]

t.test('a word naming a mapped column filters both sources through the mapping', async (t) => {
  const both = [
    { source: 'a', column: 'amount', op: 'gt', value: 500 },
    { source: 'b', column: 'gross_amount', op: 'gt', value: 500 },
  ]
  const mapped = read('amount above 500', { current_mappings: amountMapped })
  t.same(mapped.filters, both, 'a.amount by name, b.gross_amount through amount→gross_amount')
  t.same(mapped.unparsed, [])
  t.same(read('gross_amount above 500', { current_mappings: amountMapped }).filters, both, 'from either side')
  const glossary = { terms: [{ term: 'gross', source: 'b', column: 'gross_amount' }] }
  t.same(read('gross above 500', { glossary, current_mappings: amountMapped }).filters, both, 'a glossary term too')
  t.same(
    read('net_amount over 100', { current_mappings: amountMapped }).filters,
    [{ source: 'b', column: 'net_amount', op: 'gt', value: 100 }],
    'an unmapped column stays on its own side',
  )
  const total = read('total above 500')
  t.same(total.filters, both, 'a word of the amount synonym group means the amount of each side')
  t.same(total.unparsed, [], '"total" is used, not left over')
})

t.test('"in January 2024" and a date "between X and Y" are periods on both date columns', async (t) => {
  const january = read('in January 2024')
  t.same(january.filters, [
    { source: 'a', column: 'occurred_at', op: 'gte', value: '2024-01-01' },
    { source: 'a', column: 'occurred_at', op: 'lt', value: '2024-02-01' },
    { source: 'b', column: 'settlement_date', op: 'between', value: ['2024-01-01', '2024-01-31'] },
  ])
  t.same(january.unparsed, [])
  const range = [
    { source: 'a', column: 'occurred_at', op: 'gte', value: '2024-01-05' },
    { source: 'a', column: 'occurred_at', op: 'lt', value: '2024-01-21' },
    { source: 'b', column: 'settlement_date', op: 'between', value: ['2024-01-05', '2024-01-20'] },
  ]
  t.same(read('between 2024-01-05 and 2024-01-20').filters, range, 'the last day whole on the timestamp side')
  const dated = read('date between 2024-01-05 and 2024-01-20')
  t.same(dated.filters, range, '"date" names the date columns')
  t.same(dated.unparsed, [])
  t.same(
    read('settlement_date in January 2026', { current_mappings: amountMapped }).filters.map((f) => f.column),
    ['occurred_at', 'occurred_at', 'settlement_date'],
    'a mapped date column names its partner',
  )
})

t.test('"refunds" adds amount < 0 only where no amount filter decides already', async (t) => {
  t.same(
    read('refunds').filters.map((f) => `${f.source}.${f.column} ${f.op} ${f.value}`),
    ['a.amount lt 0', 'b.gross_amount lt 0'],
  )
  t.same(
    read('refunds below -10').filters.map((f) => `${f.op} ${f.value}`),
    ['lt -10', 'lt -10'],
  )
})

t.test('the period goes on the mapped date column, mappings before names', async (t) => {
  const schema_b: ColumnT[] = [...settlement, { name: 'value_date', type: 'date' }]
  const out = parseNlFilter.deterministic({
    text: 'January 2026',
    schema_a: ledger,
    schema_b,
    today: '2026-03-15',
    current_mappings: [{ field_a: 'occurred_at', field_b: 'value_date', confidence: 0.9, reason: 'confirmed' }],
  })
  t.match(out.filters[2], { source: 'b', column: 'value_date' })
})

t.test('words it cannot use are listed and said, never silently dropped', async (t) => {
  const out = read('January 2026 frobnicated widgets')
  t.same(out.unparsed, ['frobnicated', 'widgets'])
  t.match(out.explanation, /Not understood: "frobnicated widgets"/)
  t.equal(out.filters.length, 3)
})

t.test('the check resolves the filters against the schemas as load-scoped does', async (t) => {
  const input = { text: 'x', schema_a: ledger, schema_b: settlement }
  t.same(parseNlFilter.check?.(read('only January 2026 sales'), input), [])
  const bad = parseNlFilter.check?.(
    {
      filters: [
        { source: 'a', column: 'amount', op: 'gt', value: 'lots' },
        { source: 'b', column: 'setlement_date', op: 'eq', value: '2026-01-01' },
      ],
      explanation: '',
    },
    input,
  )
  t.match(bad, [/source a: .*not a number/, /source b: unknown column "setlement_date".*settlement_date/])
})
