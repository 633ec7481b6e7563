// nl_to_sql, deterministic: each clause one condition of the recipe language, columns from
// mappings, names and the glossary; what it cannot read is a 422 cannot_parse naming the words,
// never a rule that silently matches more than asked.

import t from 'tap'
import { ConcordError } from '../src/errors.js'
import type { ColumnT } from '../src/ai/schemas.js'
import { hundredth } from '../src/ai/rule-phrases.js'
import { nlToSql } from '../src/ai/tools/nl_to_sql.js'
import { testApp } from './helpers/app.js'

const bank: ColumnT[] = [
  { name: 'txn_id', type: 'string' },
  { name: 'reference', type: 'string' },
  { name: 'amount', type: 'decimal', scale: 2 },
  { name: 'currency', type: 'string' },
  { name: 'posted_at', type: 'timestamp' },
  { name: 'payer_name', type: 'string' },
]
const invoices: ColumnT[] = [
  { name: 'inv_id', type: 'string' },
  { name: 'ref', type: 'string' },
  { name: 'total', type: 'decimal', scale: 2 },
  { name: 'currency', type: 'string' },
  { name: 'invoice_date', type: 'date' },
  { name: 'customer_name', type: 'string' },
]
const write = (text: string, extra: Record<string, unknown> = {}) => {
  const input = { text, schema_a: bank, schema_b: invoices, ...extra }
  const out = nlToSql.deterministic(input)
  return { ...out, problems: nlToSql.check?.(out, input) }
}

t.test('each phrase becomes its condition, and every rule parses and type-checks', async (t) => {
  const cases: [string, string][] = [
    ['same reference ignoring case', 'UPPER(TRIM(l.reference)) = UPPER(TRIM(r.ref))'],
    ['same amount', 'l.amount = r.total'],
    ['amount within 0.05', 'ABS(l.amount - r.total) <= 0.05'],
    ['within 5 cents', 'ABS(l.amount - r.total) <= 0.05'],
    ['amount within 1%', 'ABS(l.amount - r.total) <= 0.01 * ABS(l.amount)'],
    [
      'within 7 days',
      "r.invoice_date BETWEEN CAST(l.posted_at AS date) - INTERVAL '7 days' AND CAST(l.posted_at AS date) + INTERVAL '7 days'",
    ],
    [
      'up to 3 days before',
      "r.invoice_date BETWEEN CAST(l.posted_at AS date) - INTERVAL '3 days' AND CAST(l.posted_at AS date)",
    ],
    [
      'up to 4 days after',
      "r.invoice_date BETWEEN CAST(l.posted_at AS date) AND CAST(l.posted_at AS date) + INTERVAL '4 days'",
    ],
    ['same day', 'CAST(l.posted_at AS date) = r.invoice_date'],
    ['same currency', 'l.currency = r.currency'],
    ['similar names', 'similarity(LOWER(l.payer_name), LOWER(r.customer_name)) >= 0.5'],
  ]
  for (const [text, sql] of cases) {
    const out = write(text)
    t.equal(out.sql, sql, text)
    t.same(out.problems, [], `${text}: parses and type-checks`)
  }
})

t.test('clauses split at "and", commas and semicolons, joined with AND', async (t) => {
  const out = write('same reference, amount within 0.5%; within 2 days and same currency')
  t.equal(
    out.sql,
    "l.reference = r.ref AND ABS(l.amount - r.total) <= 0.005 * ABS(l.amount) AND r.invoice_date BETWEEN CAST(l.posted_at AS date) - INTERVAL '2 days' AND CAST(l.posted_at AS date) + INTERVAL '2 days' AND l.currency = r.currency",
  )
  t.match(out.explanation, /reference = ref.*total.*0.5%/)
})

t.test('mappings and the glossary choose the columns before names do', async (t) => {
  const mapped = write('same reference', {
    mappings: [{ field_a: 'reference', field_b: 'inv_id', confidence: 0.9, reason: 'confirmed' }],
  })
  t.equal(mapped.sql, 'l.reference = r.inv_id')
  const glossary = write('same doc', {
    glossary: {
      terms: [
        { term: 'doc', source: 'a', column: 'txn_id' },
        { term: 'doc', source: 'b', column: 'inv_id' },
      ],
    },
  })
  t.equal(glossary.sql, 'l.txn_id = r.inv_id')
})

t.test('percent and cents are exact decimal text', async (t) => {
  t.same(['1', '2', '0.5', '150', '12.5'].map(hundredth), ['0.01', '0.02', '0.005', '1.5', '0.125'])
})

t.test('unreadable text is cannot_parse (422), naming the words and the known phrases', async (t) => {
  const err = t.throws(() => write('same reference and blorp the flux')) as unknown as ConcordError
  t.ok(err instanceof ConcordError)
  t.equal(err.code, 'cannot_parse')
  t.equal(err.status, 422)
  t.match(err.message, /"blorp the flux"/)
  t.match(err.suggestion, /within 7 days/)
  t.throws(() => write('same colour'), { code: 'cannot_parse', message: /no column for "colour"/ })

  const { app } = await testApp(t)
  const res = await app.inject({
    method: 'POST',
    url: '/api/ai',
    payload: { tool: 'nl_to_sql', input: { text: 'whatever you think', schema_a: bank, schema_b: invoices } },
  })
  t.equal(res.statusCode, 422, res.body)
  t.match(res.json(), { error: 'cannot_parse', message: /whatever you think/, suggestion: /same <column>/ })
})

t.test('the check reports what the parser and the type checker refuse', async (t) => {
  const input = { text: 'x', schema_a: bank, schema_b: invoices }
  t.match(nlToSql.check?.({ sql: 'l.amount = = r.total', explanation: '' }, input), [/cannot parse/])
  t.match(nlToSql.check?.({ sql: 'l.amount = r.invoice_date', explanation: '' }, input), [/cannot compare/])
  t.match(nlToSql.check?.({ sql: 'l.amount = r.totl', explanation: '' }, input), [/no column "totl".*r\.total/])
})
