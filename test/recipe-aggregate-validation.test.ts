// Validation of aggregate expressions: every problem of `sum`, `equals` and `tolerance` is an
// issue with a code, the field it is about, the position in that field's text and a hint, and
// they are all reported at once (with the pass's other issues).

import t from 'tap'
import type { ColumnInfo } from '../src/engine/data/types.js'
import type { RecipeAggregate, RecipePass } from '../src/recipes/schema.js'
import { validateRecipe } from '../src/recipes/validate.js'
import { recipeOf } from './helpers/engine.js'

const schemas: { l: ColumnInfo[]; r: ColumnInfo[] } = {
  l: [
    { name: 'id', type: 'string', nullable: false },
    { name: 'seller_id', type: 'string', nullable: false },
    { name: 'net_amount', type: 'decimal', nullable: false, scale: 2 },
    { name: 'fee_amount', type: 'decimal', nullable: false, scale: 2 },
    { name: 'rate', type: 'float', nullable: false },
    { name: 'captured_at', type: 'timestamp', nullable: false },
  ],
  r: [
    { name: 'id', type: 'string', nullable: false },
    { name: 'seller_id', type: 'string', nullable: false },
    { name: 'amount', type: 'decimal', nullable: false, scale: 2 },
    { name: 'payout_date', type: 'date', nullable: false },
  ],
}

const pass = (aggregate: RecipeAggregate, extra: Partial<RecipePass> = {}): RecipePass => ({
  name: 'payout',
  pattern: 'N:1',
  when: 'l.seller_id = r.seller_id',
  aggregate,
  ...extra,
})

const issuesOf = (aggregate: RecipeAggregate, extra: Partial<RecipePass> = {}) =>
  validateRecipe(recipeOf([pass(aggregate, extra)]), schemas).issues

t.test('fees, offsets and rates in a sum are valid; a bare column still is', async (t) => {
  for (const aggregate of [
    { sum: 'SUM(l.net_amount) - 0.49', equals: 'r.amount' },
    { sum: 'SUM(l.net_amount + l.fee_amount) * 0.98 + 1', equals: 'r.amount * 0.971 - 0.30' },
    { sum: '-(SUM(l.net_amount) - 0.49)', equals: 'r.amount' },
    { sum: 'l.net_amount', equals: 'r.amount', tolerance: { below: 0, above: '0.50' } },
    { sum: 'sum(ROUND(l.net_amount * 0.5, 2))', equals: 'COALESCE(r.amount, 0)' },
  ])
    t.same(issuesOf(aggregate), [], aggregate.sum)
})

t.test('a sum without SUM(...) says where the fee goes', async (t) => {
  const [issue, ...rest] = issuesOf({ sum: 'l.net_amount - 0.49', equals: 'r.amount' })
  t.same(rest, [])
  t.match(issue, {
    pass: 'payout',
    code: 'aggregate_sum_missing',
    field: 'aggregate.sum',
    position: { start: 0, end: 19 },
    suggestion: /SUM\(l\.net_amount - 0\.49\).*SUM\(<column>\) - 0\.49/,
  })
})

t.test('SUM twice, SUM inside a function, a column or division outside SUM', async (t) => {
  t.match(issuesOf({ sum: 'SUM(l.net_amount) + SUM(l.fee_amount)', equals: 'r.amount' }), [
    { code: 'aggregate_sum_twice', field: 'aggregate.sum', position: { start: 20, end: 37 }, suggestion: /one SUM/ },
  ])
  t.match(issuesOf({ sum: 'ABS(SUM(l.net_amount))', equals: 'r.amount' }), [
    { code: 'invalid_aggregate', field: 'aggregate.sum', message: /ABS\(\) around SUM/ },
  ])
  t.match(issuesOf({ sum: 'SUM(l.net_amount) - r.amount', equals: 'r.amount' }), [
    { code: 'invalid_aggregate', message: /r\.amount is outside SUM/, position: { start: 20, end: 28 } },
  ])
  t.match(issuesOf({ sum: 'SUM(l.net_amount) / 0.98', equals: 'r.amount' }), [
    { code: 'invalid_aggregate', message: /\/ is not exact/, suggestion: /multiply/ },
  ])
  t.match(issuesOf({ sum: 'SUM(l.net_amount) * 0', equals: 'r.amount' }), [{ code: 'invalid_aggregate' }])
})

t.test('SUM on the wrong side, mixing sides, and equals on the summed side', async (t) => {
  t.match(issuesOf({ sum: 'SUM(r.amount)', equals: 'l.net_amount' }), [
    {
      code: 'aggregate_wrong_side',
      field: 'aggregate.sum',
      message: /N:1 pass sums left records/,
      position: { start: 4, end: 12 },
      suggestion: /1:N/,
    },
  ])
  t.match(issuesOf({ sum: 'SUM(l.net_amount - r.amount)', equals: 'r.amount' }), [
    { code: 'aggregate_wrong_side', message: /mixes l\. and r\./ },
  ])
  t.match(issuesOf({ sum: 'SUM(l.net_amount)', equals: 'l.fee_amount' }), [
    { code: 'aggregate_wrong_side', field: 'aggregate.equals', message: /must read r\. columns/ },
  ])
  t.match(issuesOf({ sum: 'SUM(l.net_amount)', equals: '10.00' }), [
    { code: 'invalid_aggregate', field: 'aggregate.equals', message: /reads no column/ },
  ])
  t.match(issuesOf({ sum: 'SUM(l.net_amount)', equals: 'SUM(r.amount)' }), [
    { code: 'invalid_aggregate', field: 'aggregate.equals', message: /SUM\(\.\.\.\) belongs in aggregate\.sum/ },
  ])
  // 1:N sums the right side
  t.same(issuesOf({ sum: 'SUM(r.amount) - 0.49', equals: 'l.net_amount' }, { pattern: '1:N' }), [])
})

t.test('amounts must be exact numbers: strings, dates and floats are refused with a hint', async (t) => {
  t.match(issuesOf({ sum: 'SUM(l.seller_id)', equals: 'r.amount' }), [
    { code: 'type_mismatch', field: 'aggregate.sum', message: /not a string/, position: { start: 4, end: 15 } },
  ])
  t.match(issuesOf({ sum: 'SUM(l.net_amount)', equals: 'r.payout_date' }), [
    { code: 'type_mismatch', field: 'aggregate.equals', message: /not a date/ },
  ])
  t.match(issuesOf({ sum: 'SUM(l.net_amount / 2)', equals: 'r.amount' }), [
    { code: 'type_mismatch', message: /not a float/, suggestion: /CAST/ },
  ])
  t.match(issuesOf({ sum: 'SUM(l.rate)', equals: 'r.amount' }), [{ code: 'type_mismatch' }])
  t.same(issuesOf({ sum: 'SUM(CAST(l.rate AS numeric(12, 2)))', equals: 'r.amount' }), [])
})

t.test('parse errors and unknown columns point into the aggregate text', async (t) => {
  t.match(issuesOf({ sum: 'SUM(l.net_amount', equals: 'r.amount' }), [
    { code: 'syntax_error', field: 'aggregate.sum', message: /cannot parse aggregate\.sum/, suggestion: /SUM\(/ },
  ])
  t.match(issuesOf({ sum: 'SUM(l.net_amout) - 0.49', equals: 'r.amout' }), [
    {
      code: 'unknown_column',
      field: 'aggregate.sum',
      position: { start: 4, end: 15 },
      suggestion: /l\.net_amount/,
    },
    { code: 'unknown_column', field: 'aggregate.equals', position: { start: 0, end: 7 }, suggestion: /r\.amount/ },
  ])
  t.match(issuesOf({ sum: 'SUM(net_amount)', equals: 'r.amount' }), [
    { code: 'unqualified_column', field: 'aggregate.sum' },
  ])
  t.match(issuesOf({ sum: 'SUM(l.net_amount) -* 0.49', equals: 'r.amount' }), [
    { code: 'syntax_error', field: 'aggregate.sum', position: { start: 19, end: 20 } },
  ])
})

t.test('a tolerance must be a plain decimal', async (t) => {
  t.match(issuesOf({ sum: 'SUM(l.net_amount)', equals: 'r.amount', tolerance: 1e-7 }), [
    { code: 'invalid_aggregate', field: 'aggregate.tolerance', message: /1e-7/, suggestion: /"above"/ },
  ])
})

t.test('every issue at once: the sum, equals and the predicate of one pass', async (t) => {
  const issues = issuesOf(
    { sum: 'l.net_amount - 0.49', equals: 'l.fee_amount' },
    { when: 'l.seller_id = r.seller_idd' },
  )
  t.same(
    issues.map((i) => [i.code, i.field ?? 'when']),
    [
      ['aggregate_sum_missing', 'aggregate.sum'],
      ['aggregate_wrong_side', 'aggregate.equals'],
      ['unknown_column', 'when'],
    ],
  )
  // with a SUM the side of equals is checked too
  t.same(
    issuesOf({ sum: 'SUM(l.net_amount) - r.amount', equals: 'l.fee_amount + SUM(l.x)' }).map((i) => [i.code, i.field]),
    [
      ['invalid_aggregate', 'aggregate.sum'],
      ['invalid_aggregate', 'aggregate.equals'],
    ],
  )
})

t.test(
  'over REST: validate locates the issue, a save is refused and stores nothing, explain shows the fee',
  async (t) => {
    const { testApp } = await import('./helpers/app.js')
    const { app } = await testApp(t, {
      files: {
        'captures.csv': 'capture_id,seller_id,net_amount\nC1,S1,10.00\nC2,S1,20.49\n',
        'payouts.csv': 'payout_id,seller_id,amount\nP1,S1,30.00\n',
      },
    })
    for (const alias of ['captures', 'payouts'])
      t.equal(
        (
          await app.inject({
            method: 'POST',
            url: '/api/sources',
            payload: { alias, type: 'csv', path: `${alias}.csv` },
          })
        ).statusCode,
        201,
      )
    const recipe = (aggregate: RecipeAggregate) => ({
      name: 'payouts',
      left: { source: 'captures', key: ['capture_id'] },
      right: { source: 'payouts', key: ['payout_id'] },
      passes: [{ name: 'payout', pattern: 'N:1', when: 'l.seller_id = r.seller_id', aggregate }],
    })
    const bad = recipe({ sum: 'SUM(l.net_amount) - 0.49', equals: 'l.net_amount', tolerance: { above: 0.5 } })
    const validated = await app.inject({ method: 'POST', url: '/api/recipes/validate', payload: bad })
    t.equal(validated.statusCode, 200)
    t.match(validated.json(), {
      valid: false,
      issues: [
        { pass: 'payout', code: 'aggregate_wrong_side', field: 'aggregate.equals', position: { start: 0, end: 12 } },
      ],
    })
    const saved = await app.inject({ method: 'POST', url: '/api/recipes', payload: bad })
    t.equal(saved.statusCode, 400)
    t.match(saved.json(), { error: 'invalid_recipe', issues: [{ code: 'aggregate_wrong_side' }] })
    t.same((await app.inject({ method: 'GET', url: '/api/recipes' })).json().recipes, [], 'nothing was stored')

    const good = recipe({ sum: 'SUM(l.net_amount) - 0.49', equals: 'r.amount', tolerance: { above: 0.5 } })
    t.equal((await app.inject({ method: 'POST', url: '/api/recipes', payload: good })).statusCode, 201)
    const explained = await app.inject({ method: 'POST', url: '/api/recipes/explain', payload: good })
    t.equal(explained.statusCode, 200, explained.body)
    t.match(explained.json().passes[0].aggregate, {
      sum: 'SUM(l.net_amount) - 0.49',
      equals: 'r.amount',
      below: '0',
      above: '0.5',
    })
  },
)
