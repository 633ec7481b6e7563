// Errors a user can act on (issue 19 item 6): a value outside a fixed list is refused once with
// the values allowed; Fastify's own refusals under documented codes; a syntax error says where in
// `when`; a misspelt key column gets the nearest names; an unknown pass filter is a 400 naming the
// passes; a bare date bounding a timestamp is warned about; every subcommand has --help.

import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import t from 'tap'
import { testApp } from './helpers/app.js'
import { waitForRun } from './helpers/runs.js'
import { tinyFiles, tinyRecipe } from './helpers/tiny.js'

const run = promisify(execFile)
const bin = new URL('../bin/concord.js', import.meta.url).pathname

const files = {
  ...tinyFiles,
  'events.csv': 'id,at,amount\nE1,2026-01-30T10:00:00,1.00\nE2,2026-01-31T09:30:00,2.00\nE3,2026-02-01T00:00:00,3.00\n',
}

async function app(t: Parameters<typeof testApp>[0]) {
  const ctx = await testApp(t, { files })
  for (const [alias, path] of [
    ['bank', 'bank.csv'],
    ['inv', 'inv.csv'],
    ['events', 'events.csv'],
  ])
    t.equal(
      (await ctx.app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type: 'csv', path } })).statusCode,
      201,
    )
  return ctx.app
}

t.test('a value outside a fixed list is said once, with the values allowed', async (t) => {
  const a = await app(t)
  const op = await a.inject({
    method: 'POST',
    url: '/api/sources/bank/load-scoped',
    payload: { conditions: [{ column: 'ref', op: 'contains', value: 'x' }] },
  })
  t.equal(op.statusCode, 400)
  t.equal(op.json().error, 'invalid_request')
  t.equal(op.json().message, 'body/conditions/0/op must be one of: eq, neq, gt, gte, lt, lte, between, in, like')

  const pattern = await a.inject({
    method: 'POST',
    url: '/api/recipes',
    payload: { ...tinyRecipe, passes: [{ ...tinyRecipe.passes[0], pattern: '1:x' }] },
  })
  t.equal(pattern.json().message, 'body/passes/0/pattern must be one of: 1:1, 1:N, N:1, N:M')

  const started = await a.inject({ method: 'POST', url: '/api/runs', payload: { recipe: tinyRecipe } })
  const done = await waitForRun(a, started.json().id)
  const format = await a.inject({ method: 'GET', url: `/api/runs/${done.id}/export?set=matches&format=xlsx` })
  t.equal(format.statusCode, 400)
  t.equal(format.json().message, 'querystring/format must be one of: csv, arrow')

  // an unknown pass selects nothing, which would read as "no such records": a 400 naming the passes
  for (const url of [
    `/api/runs/${done.id}/matches?pass=nope`,
    `/api/runs/${done.id}/unmatched/left?failed_pass=nope`,
  ]) {
    const res = await a.inject({ method: 'GET', url })
    t.equal(res.statusCode, 400, url)
    t.match(res.json(), { error: 'unknown_pass', message: /"nope"/, suggestion: 'use one of: p' })
  }
  t.equal((await a.inject({ method: 'GET', url: `/api/runs/${done.id}/matches?pass=p` })).json().total, 2)
})

t.test("Fastify's refusals of a body carry documented codes", async (t) => {
  const a = await app(t)
  const json = await a.inject({
    method: 'POST',
    url: '/api/sources',
    headers: { 'content-type': 'application/json' },
    payload: '{"alias": ',
  })
  t.equal(json.statusCode, 400)
  t.match(json.json(), { error: 'invalid_json', suggestion: /JSON/ })
  const media = await a.inject({
    method: 'POST',
    url: '/api/sources',
    headers: { 'content-type': 'text/xml' },
    payload: '<a/>',
  })
  t.equal(media.statusCode, 415)
  t.match(media.json(), { error: 'unsupported_media_type', suggestion: /application\/json/ })
})

t.test('recipes: a syntax error says where in `when`; a misspelt key gets the nearest names', async (t) => {
  const a = await app(t)
  const syntax = await a.inject({
    method: 'POST',
    url: '/api/recipes/validate',
    payload: { ...tinyRecipe, passes: [{ ...tinyRecipe.passes[0], when: 'l.ref = = r.ref' }] },
  })
  t.match(syntax.json().issues[0], {
    code: 'syntax_error',
    message: 'cannot parse the predicate: unexpected "=" at character 9',
    position: { start: 8, end: 9 },
  })
  const later = await a.inject({
    method: 'POST',
    url: '/api/recipes/validate',
    payload: { ...tinyRecipe, passes: [{ ...tinyRecipe.passes[0], when: 'l.ref = r.ref AND\n  l.amount >< r.total' }] },
  })
  t.match(later.json().issues[0], { message: /unexpected "<" at character 31/, position: { start: 30 } })

  const key = await a.inject({
    method: 'POST',
    url: '/api/recipes',
    payload: { ...tinyRecipe, left: { source: 'bank', key: ['txn_idd'] } },
  })
  t.equal(key.statusCode, 400)
  t.match(key.json().issues[0], { code: 'unknown_column', suggestion: 'did you mean "txn_id"?' })
})

t.test('a bare date bounding a timestamp column is warned about where the scope is set', async (t) => {
  const a = await app(t)
  const load = (conditions: unknown[]) =>
    a.inject({ method: 'POST', url: '/api/sources/events/load-scoped', payload: { conditions } })
  const january = await load([{ column: 'at', op: 'between', value: ['2026-01-01', '2026-01-31'] }])
  t.equal(january.json().loaded_rows, 1, 'midnight of the 31st: the row at 09:30 that day is out')
  t.match(january.json().warnings, [
    {
      column: 'at',
      code: 'date_bounds_timestamp',
      suggestion: 'to include all of 2026-01-31, use gte "2026-01-01" and lt "2026-02-01"',
    },
  ])
  t.match((await load([{ column: 'at', op: 'lte', value: '2026-01-31' }])).json().warnings, [
    { suggestion: 'to include all of 2026-01-31, use lt "2026-02-01"' },
  ])
  const fixed = await load([
    { column: 'at', op: 'gte', value: '2026-01-01' },
    { column: 'at', op: 'lt', value: '2026-02-01' },
  ])
  t.equal(fixed.json().loaded_rows, 2)
  t.same(fixed.json().warnings, [])
  t.same((await load([{ column: 'at', op: 'lte', value: '2026-01-31T23:59:59' }])).json().warnings, [])

  const recipe = {
    name: 'w',
    left: { source: 'events', key: ['id'], scope: [{ column: 'at', op: 'lte', value: '2026-01-31' }] },
    right: { source: 'bank', key: ['txn_id'] },
    passes: [{ name: 'p', pattern: '1:1', when: 'l.amount = r.amount' }],
  }
  const validated = (await a.inject({ method: 'POST', url: '/api/recipes/validate', payload: recipe })).json()
  t.equal(validated.valid, true, 'a warning never makes a recipe invalid')
  t.match(validated.warnings, [{ side: 'left', column: 'at', code: 'date_bounds_timestamp' }])
})

t.test('POST /api/ai computes and creates nothing: 200', async (t) => {
  const a = await app(t)
  const res = await a.inject({
    method: 'POST',
    url: '/api/ai',
    payload: {
      tool: 'detect_field_mappings',
      input: { schema_a: [{ name: 'amount', type: 'decimal' }], schema_b: [{ name: 'total', type: 'decimal' }] },
    },
  })
  t.equal(res.statusCode, 200)
})

t.test('every subcommand answers --help with its usage and exits 0, starting nothing', async (t) => {
  for (const command of ['serve', 'reconcile', 'mcp', 'migrate', 'openapi']) {
    const { stdout } = await run(process.execPath, [bin, command, '--help'], { timeout: 10_000 })
    t.match(stdout, new RegExp(`^usage: concord ${command}`), command)
  }
  const { stdout } = await run(process.execPath, [bin, '--help'])
  t.match(stdout, /concord <command> --help says more/)
  t.match(stdout, /usage: concord reconcile/, 'the reconcile usage the list points to is there')
})
