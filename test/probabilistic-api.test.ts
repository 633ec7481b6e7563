// Probabilistic passes through REST: validation codes, explain (blocking rules, levels, weights
// from the recipe or from a run), a run whose summary keeps the learned model, pages and CSV
// exports with each match's waterfall, and a second run reusing the model without training.

import { parse } from 'csv-parse/sync'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { testApp } from './helpers/app.js'
import type { Row } from './helpers/engine.js'
import { waitForRun } from './helpers/runs.js'
import { unkeyedTransfers } from './helpers/unkeyed.js'

const data = unkeyedTransfers(120, 20)
const csv = (rows: Row[]) => {
  const cols = Object.keys(rows[0])
  return `${cols.join(',')}\n${rows.map((r) => cols.map((c) => r[c] ?? '').join(',')).join('\n')}\n`
}

const pass = {
  name: 'by_payer',
  pattern: '1:1',
  block: [
    'shares_token(l.memo, r.memo)',
    'r.amount BETWEEN l.amount * 0.9 AND l.amount * 1.1 AND r.booking_date BETWEEN l.sent_date AND l.sent_date + 7',
  ],
  compare: [
    { name: 'memo', text: ['l.memo', 'r.memo'], levels: ['token_set >= 0.9', 'token_set >= 0.6'] },
    { name: 'amount', relative: ['l.amount', 'r.amount'], levels: [0, 0.03] },
    { name: 'lag', days: ['l.sent_date', 'r.booking_date'], levels: [1, 5] },
  ],
}
const recipe = {
  name: 'transfers',
  left: { source: 'sent', key: ['sent_id'] },
  right: { source: 'received', key: ['received_id'] },
  passes: [pass],
}

async function setup(t: Test): Promise<FastifyInstance> {
  const { app } = await testApp(t, { files: { 'sent.csv': csv(data.sent), 'received.csv': csv(data.received) } })
  for (const [alias, path] of [
    ['sent', 'sent.csv'],
    ['received', 'received.csv'],
  ]) {
    const res = await app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type: 'csv', path } })
    if (res.statusCode !== 201) throw new Error(res.body)
  }
  return app
}

t.test('validation names what is wrong with a probabilistic pass', async (t) => {
  const app = await setup(t)
  const validate = async (p: object) =>
    (await app.inject({ method: 'POST', url: '/api/recipes/validate', payload: { ...recipe, passes: [p] } })).json()
  t.same(await validate(pass), { valid: true, issues: [], suggestions: [], warnings: [] })
  const codes = async (p: object) => (await validate(p)).issues.map((i: { code: string }) => i.code)
  t.same(await codes({ ...pass, block: undefined }), ['missing_blocking'])
  t.same(await codes({ ...pass, block: ['l.memo LIKE r.memo'] }), ['no_usable_join'])
  t.same(await codes({ ...pass, block: ['shares_token(l.memo, r.nope)'] }), ['unknown_column'])
  t.same(await codes({ ...pass, pattern: 'N:1' }), ['invalid_pass'])
  t.same(
    await codes({ ...pass, compare: [{ name: 'memo', text: ['l.memo', 'r.memo'], levels: ['soundex >= 0.9'] }] }),
    ['invalid_comparison'],
  )
  t.same(await codes({ ...pass, compare: [{ name: 'amount', relative: ['l.memo', 'r.amount'] }] }), ['type_mismatch'])
  t.same(await codes({ ...pass, compare: [{ name: 'x', text: ['r.memo', 'l.memo'] }] }), [
    'invalid_comparison',
    'invalid_comparison',
  ])
  t.same(
    await codes({
      ...pass,
      model: { lambda: 0.001, comparisons: [{ name: 'memo', m: [0.5, 0.5], u: [0.1, 0.9] }] },
    }),
    ['invalid_model', 'invalid_model', 'invalid_model'],
    'three levels for memo, and no amount or lag',
  )
  t.same(await codes({ name: 'p', pattern: '1:1', block: ['l.memo = r.memo'], when: 'l.memo = r.memo' }), [
    'invalid_pass',
  ])
  t.same(await codes({ name: 'p', pattern: '1:1' }), ['missing_when'])
  const bad = await validate({ ...pass, block: ['shares_token(l.memo, r.memo, 0)'] })
  t.match(bad.issues[0], { code: 'invalid_argument', message: /blocking rule 1/ })
})

t.test('a probabilistic run: model in the summary, waterfalls in pages and exports, reuse', async (t) => {
  const app = await setup(t)
  const explained = (await app.inject({ method: 'POST', url: '/api/recipes/explain', payload: recipe })).json()
  t.match(explained.passes[0], {
    join: 'probabilistic',
    probabilistic: {
      blocking: [{ rule: 'shares_token(l.memo, r.memo)', join: 'token' }, { join: 'band' }],
      comparisons: [
        { name: 'memo', kind: 'text', levels: ['token_set >= 0.9', 'token_set >= 0.6', 'else'], tf: true },
        { name: 'amount', kind: 'relative', levels: ['equal', 'within 3%', 'else'], tf: false },
        { name: 'lag', kind: 'days', levels: ['within 1 day', 'within 5 days', 'else'] },
      ],
      threshold: 0.5,
      model: null,
    },
  })
  t.match(explained.text, /block 1 \(token join\): shares_token\(l\.memo, r\.memo\)/)
  t.match(explained.text, /weights: learned when the pass runs/)

  const started = await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe } })
  t.equal(started.statusCode, 202, started.body)
  const run = await waitForRun(app, started.json().id)
  t.equal(run.status, 'completed', JSON.stringify(run.error))
  const report = run.summary.passes[0].probabilistic
  t.match(report, { training: { trained: true, converged: true }, threshold: 0.5 })
  t.ok(run.summary.matches >= 110, `${run.summary.matches} matches`)
  t.same(
    report.model.comparisons.map((c: { name: string; m: number[]; u: number[] }) => [c.name, c.m.length, c.u.length]),
    [
      ['memo', 3, 3],
      ['amount', 3, 3],
      ['lag', 3, 3],
    ],
  )

  const page = (await app.inject({ method: 'GET', url: `/api/runs/${run.id}/matches?limit=3` })).json()
  t.equal(page.items.length, 3)
  for (const m of page.items) {
    t.match(m.weights, {
      prior: Number,
      match_weight: Number,
      context: Number,
      comparisons: [{ name: 'memo' }, { name: 'amount' }, { name: 'lag' }],
    })
    t.ok(Math.abs(1 / (1 + 2 ** -m.weights.match_weight) - m.score) < 1e-3)
  }
  const exported = await app.inject({ method: 'GET', url: `/api/runs/${run.id}/export?set=matches&format=csv` })
  t.equal(exported.statusCode, 200)
  const rows = parse(exported.body, { columns: true }) as Record<string, string>[]
  t.ok(rows.length >= 110)
  t.notOk('weights' in rows[0], 'the lists are read as one cell')
  t.match(rows[0].waterfall, /^prior -[\d.]+; memo .+ [+-][\d.]+; amount .+; lag .+; context [+-][\d.]+$/)
  t.ok(Number(rows[0].match_weight) > 0)

  const learned = (
    await app.inject({ method: 'POST', url: `/api/recipes/explain?run_id=${run.id}`, payload: recipe })
  ).json()
  t.match(learned.passes[0].probabilistic.model, { source: 'run', lambda: report.model.lambda })
  t.match(learned.text, /memo \(text, tf\) l\.memo ~ r\.memo: token_set >= 0\.9 \(\+[\d.]+\)/)

  const again = await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe, reuse_model_from: run.id } })
  t.equal(again.statusCode, 202, again.body)
  const second = await waitForRun(app, again.json().id)
  t.equal(second.status, 'completed')
  t.match(second.summary.passes[0].probabilistic.training, { trained: false, iterations: 0 })
  t.equal(second.summary.matches, run.summary.matches, 'the same model, the same matches')

  const deterministic = await app.inject({
    method: 'POST',
    url: '/api/runs',
    payload: {
      recipe: { ...recipe, passes: [{ name: 'exact', pattern: '1:1', when: 'l.memo = r.memo' }] },
      dry_run: true,
    },
  })
  t.equal(deterministic.statusCode, 202, deterministic.body)
  const plain = await waitForRun(app, deterministic.json().id)
  const refused = await app.inject({
    method: 'POST',
    url: '/api/runs',
    payload: { recipe, reuse_model_from: plain.id },
  })
  t.equal(refused.statusCode, 400)
  t.match(refused.json(), { error: 'model_not_found' })
})
