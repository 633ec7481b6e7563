// infer_rules on the Claude path, against a scripted fake of the Messages API: the model is given
// the measurements the deterministic rules rest on, and its answer is held to the same warnings —
// a rule validate_recipe calls impossible on the confirmed pairs is sent back once.

import t from 'tap'
import { testApp } from './helpers/app.js'
import { fakeAnthropic } from './helpers/fake-anthropic.js'

const captures = [
  {
    capture_id: 'C1',
    seller_id: 'S1',
    captured_at: '2025-03-01T10:00:00Z',
    gross_amount: '103.10',
    net_amount: '100.00',
  },
  {
    capture_id: 'C2',
    seller_id: 'S1',
    captured_at: '2025-03-02T10:00:00Z',
    gross_amount: '51.80',
    net_amount: '50.00',
  },
  {
    capture_id: 'C3',
    seller_id: 'S2',
    captured_at: '2025-03-02T10:00:00Z',
    gross_amount: '20.90',
    net_amount: '20.00',
  },
  {
    capture_id: 'C4',
    seller_id: 'S2',
    captured_at: '2025-03-03T10:00:00Z',
    gross_amount: '31.20',
    net_amount: '30.00',
  },
  {
    capture_id: 'C5',
    seller_id: 'S3',
    captured_at: '2025-03-03T10:00:00Z',
    gross_amount: '72.40',
    net_amount: '70.00',
  },
  {
    capture_id: 'C6',
    seller_id: 'S3',
    captured_at: '2025-03-04T10:00:00Z',
    gross_amount: '10.60',
    net_amount: '10.00',
  },
]
const payouts = [
  { payout_id: 'P1', seller_id: 'S1', payout_date: '2025-03-05', amount: '149.51' },
  { payout_id: 'P2', seller_id: 'S2', payout_date: '2025-03-06', amount: '49.51' },
  { payout_id: 'P3', seller_id: 'S3', payout_date: '2025-03-07', amount: '79.51' },
]
const input = {
  schema_a: [
    { name: 'capture_id', type: 'string' },
    { name: 'seller_id', type: 'string' },
    { name: 'captured_at', type: 'timestamp' },
    { name: 'gross_amount', type: 'decimal', scale: 2 },
    { name: 'net_amount', type: 'decimal', scale: 2 },
  ],
  schema_b: [
    { name: 'payout_id', type: 'string' },
    { name: 'seller_id', type: 'string' },
    { name: 'payout_date', type: 'date' },
    { name: 'amount', type: 'decimal', scale: 2 },
  ],
  sample_a: captures,
  sample_b: payouts,
  mappings: [
    { field_a: 'seller_id', field_b: 'seller_id', confidence: 1, reason: 'same name' },
    { field_a: 'gross_amount', field_b: 'amount', confidence: 0.6, reason: 'amounts' },
    { field_a: 'captured_at', field_b: 'payout_date', confidence: 0.4, reason: 'dates' },
  ],
  confirmed_pairs: [0, 1, 2, 3, 4, 5].map((i) => ({ left: i, right: Math.floor(i / 2) })),
}

t.test('the model gets the measurements and its rules pass the same warnings', async (t) => {
  const fake = await fakeAnthropic(t)
  const { app } = await testApp(t, {
    env: {
      AI_MODE: 'llm',
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: fake.baseURL,
      ANTHROPIC_MODEL: 'claude-test',
      AI_MAX_RETRIES: '0',
    },
  })
  // first a 1:1 rule on the mapped gross with a wide tolerance, as the tool once wrote; then groups
  const wrong = {
    pattern: '1:1',
    primary_keys: { left: ['capture_id'], right: ['payout_id'] },
    rules: [
      {
        name: 'amount_date',
        sql: 'l.seller_id = r.seller_id AND ABS(l.gross_amount - r.amount) <= 130.00',
        description: 'same seller, amounts within 130.00',
        confidence: 0.9,
        pattern: '1:1',
      },
    ],
  }
  const right = {
    pattern: 'N:1',
    primary_keys: { left: ['capture_id'], right: ['payout_id'] },
    rules: [
      {
        name: 'groups',
        sql: 'l.seller_id = r.seller_id',
        description: "a payout is its captures' net amounts less 0.49",
        confidence: 0.9,
        pattern: 'N:1',
        aggregate: { sum: 'SUM(l.net_amount) - 0.49', equals: 'r.amount', tolerance: '0.01', max_group: 4 },
      },
    ],
  }
  fake.script({ text: JSON.stringify(wrong) }, { text: JSON.stringify(right) })
  const res = await app.inject({ method: 'POST', url: '/api/ai', payload: { tool: 'infer_rules', input } })
  t.equal(res.statusCode, 200, res.body)
  t.match(res.json(), { engine: 'llm', result: { pattern: 'N:1' } })
  t.equal(fake.requests.length, 2)
  const asked = fake.requests[0].messages[0].content as string
  t.ok(asked.startsWith(JSON.stringify(input)), 'the input as given')
  const measured = JSON.parse(asked.slice(asked.indexOf('\n{') + 1)) as {
    observations: { shape: { pattern: string }; amounts: Record<string, unknown> }
  }
  t.equal(measured.observations.shape.pattern, 'N:1', 'the shape the pairs show')
  t.match(measured.observations.amounts, { explained_by: 'l.net_amount', kind: 'offset', offset: '-0.49' })
  const retry = fake.requests[1].messages[2] as { content: string }
  t.match(retry.content, /That answer is not valid/)
  t.match(retry.content, /confirmed pairs share a record|1:1/, 'the shape warning, sent back')
  t.match(retry.content, /more than a typical amount/, 'the wide tolerance, sent back')
})
