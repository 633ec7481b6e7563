// Sample runs filter the loaded scoped tables with the recipe's scope and parameters, exactly as
// a full run filters the sources it loads: the same request gives the same counts in both modes.

import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { testApp } from './helpers/app.js'
import { waitForRun } from './helpers/runs.js'

const bank = ['txn_id,account,amount,txn_date,reference']
const invoices = ['invoice_id,customer,total_amount,invoice_date,ref']
for (let n = 1; n <= 12; n++) {
  const month = String(((n - 1) % 3) + 1).padStart(2, '0')
  bank.push(`T${n},ACC-${n % 2},${n}00.00,2024-${month}-10,R${n}`)
  invoices.push(`I${n},ACC-${n % 2},${n}00.00,2024-${month}-08,R${n}`)
}

const monthly = {
  name: 'monthly',
  left: { source: 'bank', key: ['txn_id'], scope: [{ column: 'amount', op: 'gte', value: '300.00' }] },
  right: { source: 'invoices', key: ['invoice_id'] },
  passes: [{ name: 'p', pattern: '1:1', when: 'l.reference = r.ref AND l.amount = r.total_amount' }],
  params: [
    {
      name: 'period_start',
      type: 'date',
      left: { column: 'txn_date', op: 'gte' },
      right: { column: 'invoice_date', op: 'gte' },
    },
    { name: 'account', type: 'string', left: { column: 'account', op: 'eq' }, required: false },
  ],
}

/** An app with the bank and invoices files registered as sources. */
async function withSources(t: Test): Promise<FastifyInstance> {
  const { app } = await testApp(t, {
    files: { 'bank.csv': `${bank.join('\n')}\n`, 'invoices.csv': `${invoices.join('\n')}\n` },
  })
  for (const [alias, path] of [
    ['bank', 'bank.csv'],
    ['invoices', 'invoices.csv'],
  ])
    await app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type: 'csv', path } })
  return app
}

/** No scope of its own: a sample run matches exactly the rows loaded. */
const plain = {
  name: 'plain',
  left: { source: 'bank', key: ['txn_id'] },
  right: { source: 'invoices', key: ['invoice_id'] },
  passes: [{ name: 'p', pattern: '1:1' as const, when: 'l.reference = r.ref AND l.amount = r.total_amount' }],
}

async function start(app: FastifyInstance, payload: Record<string, unknown>) {
  const res = await app.inject({ method: 'POST', url: '/api/runs', payload })
  if (res.statusCode !== 202) throw new Error(res.body)
  return waitForRun(app, res.json().id)
}

t.test('a sample run applies the recipe scope and its parameters like a full run', async (t) => {
  const app = await withSources(t)
  const saved = (await app.inject({ method: 'POST', url: '/api/recipes', payload: monthly })).json()

  // the loaded scoped tables hold every row; the run narrows them
  for (const alias of ['bank', 'invoices'])
    await app.inject({ method: 'POST', url: `/api/sources/${alias}/load-scoped`, payload: { conditions: [] } })

  const params = { period_start: '2024-02-01', account: 'ACC-0' }
  const sample = await start(app, { recipe_id: saved.id, mode: 'sample', params })
  const full = await start(app, { recipe_id: saved.id, mode: 'full', params })
  t.equal(sample.status, 'completed', JSON.stringify(sample.error))
  t.same(sample.params, params, 'the run records the values it used')
  // Tn is in month (n-1)%3+1 and account ACC-(n%2). Left: amount >= 300.00 (scope), from February,
  // ACC-0 -> T6, T8, T12. Right: from February -> the 8 invoices of February and March.
  t.match(sample.summary, { matches: 3, left: { rows: 3, unmatched: 0 }, right: { rows: 8, unmatched: 5 } })
  t.same(sample.progress.rows_loaded, { left: 3, right: 8 }, 'progress counts the rows in scope')
  const keys = async (id: string) =>
    (await app.inject({ method: 'GET', url: `/api/runs/${id}/matches` }))
      .json()
      .items.map((m: { left_keys: string[] }) => m.left_keys[0])
  t.same(await keys(sample.id), ['T6', 'T8', 'T12'])
  // results looked up by record key
  const get = async (url: string) => (await app.inject({ method: 'GET', url: `/api/runs/${sample.id}${url}` })).json()
  t.match(await get('/matches?key=I8'), { total: 1, items: [{ left_keys: ['T8'], right_keys: ['I8'] }] })
  t.match(await get('/matches?key=T8&pass=p'), { total: 1 })
  t.match(await get('/matches?key=I5'), { total: 0, items: [] })
  t.match(await get('/unmatched/right?key=I5'), { total: 1, items: [{ record_key: 'I5' }] })
  t.match(await get('/unmatched/left?key=T8'), { total: 0 }, 'T8 is matched')
  t.same(
    { matches: full.summary.matches, left: full.summary.left, right: full.summary.right },
    { matches: sample.summary.matches, left: sample.summary.left, right: sample.summary.right },
    'sample and full give the same counts on the same rows',
  )

  // a loaded table narrower than the parameters: the scope intersects with it
  await app.inject({
    method: 'POST',
    url: '/api/sources/bank/load-scoped',
    payload: { conditions: [{ column: 'txn_date', op: 'lt', value: '2024-03-01' }] },
  })
  const narrower = await start(app, { recipe_id: saved.id, mode: 'sample', params })
  t.match(narrower.summary, { matches: 1, left: { rows: 1 } }, 'only T8 is February, ACC-0 and >= 300.00')
  t.same(await keys(narrower.id), ['T8'])

  const missing = await app.inject({
    method: 'POST',
    url: '/api/runs',
    payload: { recipe_id: saved.id, mode: 'sample' },
  })
  t.equal(missing.statusCode, 400)
  t.equal(missing.json().error, 'missing_param', 'a sample run checks its parameters like a full run')
})

t.test('sample runs read the scoped tables of whoever started them, as they were at the start', async (t) => {
  const app = await withSources(t)
  const recipe = plain
  const ws = 'default'
  const everything = { conditions: [] }
  // two chat sessions scope the same source differently: ACC-0 (6 rows) and ACC-1 (6 rows) of 12
  for (const [session, account] of [
    ['s1', 'ACC-0'],
    ['s2', 'ACC-1'],
  ]) {
    await app.sources.loadScoped(
      ws,
      'bank',
      { conditions: [{ column: 'account', op: 'eq', value: account }] },
      undefined,
      session,
    )
    await app.sources.loadScoped(ws, 'invoices', everything, undefined, session)
  }
  // the workspace's own (REST) scope: January only
  await app.sources.loadScoped(ws, 'bank', { conditions: [{ column: 'txn_date', op: 'lt', value: '2024-02-01' }] })
  await app.sources.loadScoped(ws, 'invoices', everything)

  const run = async (owner: string) => {
    const started = await app.runs.start(ws, { recipe, mode: 'sample' }, null, undefined, owner)
    return started.id
  }
  const ids = { s1: await run('s1'), s2: await run('s2'), rest: await run('') }
  // loaded again after the runs started (a second client, the session's next step): no effect on them
  await app.sources.loadScoped(ws, 'bank', everything)
  await app.sources.loadScoped(ws, 'bank', everything, undefined, 's1')
  const left = async (id: string) => {
    const done = await waitForRun(app, id)
    t.equal(done.status, 'completed', JSON.stringify(done.error))
    const matched = (await app.inject({ method: 'GET', url: `/api/runs/${id}/matches?limit=100` })).json().items
    return matched.map((m: { left_keys: string[] }) => m.left_keys[0]).sort()
  }
  t.same(await left(ids.s1), ['T10', 'T12', 'T2', 'T4', 'T6', 'T8'], "session 1's scope: ACC-0")
  t.same(await left(ids.s2), ['T1', 'T11', 'T3', 'T5', 'T7', 'T9'], "session 2's scope: ACC-1")
  t.same(await left(ids.rest), ['T1', 'T10', 'T4', 'T7'], 'the workspace scope as it was when the run started: January')
})

t.test(
  'REST clients keep their own scoped tables under a scope_set; without one they share the workspace set',
  async (t) => {
    const app = await withSources(t)
    const load = async (alias: string, payload: Record<string, unknown>) => {
      const res = await app.inject({ method: 'POST', url: `/api/sources/${alias}/load-scoped`, payload })
      t.equal(res.statusCode, 200, res.body)
    }
    for (const [set, account] of [
      ['client-a', 'ACC-0'],
      ['client-b', 'ACC-1'],
    ]) {
      await load('bank', { scope_set: set, conditions: [{ column: 'account', op: 'eq', value: account }] })
      await load('invoices', { scope_set: set, conditions: [] })
    }
    await load('bank', { conditions: [{ column: 'txn_date', op: 'lt', value: '2024-02-01' }] })
    await load('invoices', { conditions: [] })
    const recipe = plain
    const matchedLeft = async (extra: Record<string, unknown>) => {
      const run = await start(app, { recipe, mode: 'sample', ...extra })
      t.equal(run.status, 'completed', JSON.stringify(run.error))
      const items = (await app.inject({ method: 'GET', url: `/api/runs/${run.id}/matches?limit=100` })).json().items
      return items.map((m: { left_keys: string[] }) => m.left_keys[0]).sort()
    }
    t.same(await matchedLeft({ scope_set: 'client-a' }), ['T10', 'T12', 'T2', 'T4', 'T6', 'T8'])
    t.same(await matchedLeft({ scope_set: 'client-b' }), ['T1', 'T11', 'T3', 'T5', 'T7', 'T9'])
    t.same(await matchedLeft({}), ['T1', 'T10', 'T4', 'T7'], 'the shared set: January')
    const missing = await app.inject({
      method: 'POST',
      url: '/api/runs',
      payload: { recipe, mode: 'sample', scope_set: 'client-c' },
    })
    t.match(missing, { statusCode: 409 })
    t.equal(missing.json().error, 'scope_not_loaded', 'a set with nothing loaded has nothing to run on')
    const bad = await app.inject({
      method: 'POST',
      url: '/api/sources/bank/load-scoped',
      payload: { scope_set: 'a b' },
    })
    t.equal(bad.statusCode, 400)
  },
)
