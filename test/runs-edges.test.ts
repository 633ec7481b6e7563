// Runs at their edges: a failed run keeps the progress it stopped at, a running run can be
// deleted (it is cancelled, then its storage goes), runs started in a burst still run at most
// RUN_CONCURRENCY at a time, and engine "postgres" is refused with the reason when the sources are
// not tables of one PostgreSQL database.

import { readdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { pushdownProblem } from '../connectors/postgres/pushdown.js'
import type { Source } from '../src/sources/connector.js'
import { testApp } from './helpers/app.js'
import { waitForProgress, waitForRun } from './helpers/runs.js'

async function register(app: FastifyInstance, alias: string, path: string) {
  const res = await app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type: 'csv', path } })
  if (res.statusCode !== 201) throw new Error(res.body)
}

const recipe = {
  name: 'pair',
  left: { source: 'l', key: ['id'] },
  right: { source: 'r', key: ['id'] },
  passes: [{ name: 'p', pattern: '1:1', when: 'l.ref = r.ref AND l.amount = r.amount' }],
}

t.test('a run that fails keeps the phase, rows and percent it reached', async (t) => {
  const pair = 'id,ref,amount\nA,1,1.00\nB,2,2.00\nC,3,3.00\n'
  const { app, dataDir } = await testApp(t, { files: { 'l.csv': pair, 'r.csv': pair } })
  await register(app, 'l', 'l.csv')
  await register(app, 'r', 'r.csv')
  // the right file goes after registration: the run loads the left side, then fails on the right
  await rm(join(dataDir, 'r.csv'))
  const started = await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe } })
  t.equal(started.statusCode, 202, started.body)
  const run = await waitForRun(app, started.json().id)
  t.match(run, { status: 'failed', error: { error: 'file_not_found' }, summary: null })
  t.same(run.progress, { phase: 'loading', rows_loaded: { left: 3, right: null }, pass: null, percent: 15 })
})

t.test('DELETE of a running run cancels it, then removes the run and its storage', async (t) => {
  const { app, dataDir } = await testApp(t)
  const l = ['id,ref,amount']
  const r = ['id,ref,amount']
  for (let i = 0; i < 100_000; i++) {
    l.push(`L${i},R${i},${i % 1000}.25`)
    r.push(`M${i},R${i},${i % 1000}.25`)
  }
  await writeFile(join(dataDir, 'l.csv'), `${l.join('\n')}\n`)
  await writeFile(join(dataDir, 'r.csv'), `${r.join('\n')}\n`)
  await register(app, 'l', 'l.csv')
  await register(app, 'r', 'r.csv')
  const id = (await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe } })).json().id
  const live = await waitForProgress(app, id, (p) => p.rows_loaded.left !== null)
  t.equal(live.status, 'running', 'deleted while its worker is loading the right side')
  const deleted = await app.inject({ method: 'DELETE', url: `/api/runs/${id}` })
  t.equal(deleted.statusCode, 204, deleted.body)
  t.equal((await app.inject({ method: 'GET', url: `/api/runs/${id}` })).statusCode, 404)
  t.same(await readdir(join(dataDir, 'runs')), [], 'no results and no temporary folder remain')
  t.equal((await app.inject({ method: 'GET', url: '/api/runs' })).json().total, 0)
  // the worker it had is free again: a new run completes
  const next = await app.inject({
    method: 'POST',
    url: '/api/runs',
    payload: { recipe: { ...recipe, left: { ...recipe.left, scope: [{ column: 'id', op: 'eq', value: 'L7' }] } } },
  })
  t.match(await waitForRun(app, next.json().id), { status: 'completed', summary: { matches: 1 } })
})

const pg = (conn: string, table = 't'): Source => ({
  alias: table,
  type: 'postgres',
  config: { connection_string: conn, schema: 'public', table },
})
const onePass = (when: string) => ({ ...recipe, passes: [{ name: 'p', pattern: '1:1' as const, when }] })

t.test('runs started in one burst run at most RUN_CONCURRENCY at a time', async (t) => {
  const pair = Array.from({ length: 20_000 }, (_, i) => `K${i},${i},${i % 100}.50`)
  const file = `id,ref,amount\n${pair.join('\n')}\n`
  const { app } = await testApp(t, { files: { 'l.csv': file, 'r.csv': file }, env: { RUN_CONCURRENCY: '1' } })
  await register(app, 'l', 'l.csv')
  await register(app, 'r', 'r.csv')
  const started = await Promise.all(
    [1, 2, 3].map(() => app.inject({ method: 'POST', url: '/api/runs', payload: { recipe } })),
  )
  const runs = await Promise.all(started.map((res) => waitForRun(app, res.json().id)))
  const spans = runs.map((r) => [Date.parse(r.started_at), Date.parse(r.finished_at)]).sort((a, b) => a[0] - b[0])
  t.same(
    runs.map((r) => r.status),
    ['completed', 'completed', 'completed'],
  )
  for (let i = 1; i < spans.length; i++)
    t.ok(spans[i][0] >= spans[i - 1][1], `run ${i + 1} started after run ${i} finished`)
})

t.test('pushdownProblem: one database or a reason', async (t) => {
  const a = 'postgresql://app:secret@db.internal:5432/ledger'
  const ok = onePass('l.ref = r.ref AND l.amount = r.amount')
  t.equal(pushdownProblem(ok, { left: pg(a, 'x'), right: pg(a, 'y') }), null)
  t.equal(
    pushdownProblem(ok, { left: pg(a), right: pg('postgresql://app:other@db.internal/ledger') }),
    null,
    'the password and the default port do not make another database',
  )
  for (const other of [
    'postgresql://app@db.internal:5432/billing',
    'postgresql://app@db2.internal:5432/ledger',
    'postgresql://app@db.internal:5433/ledger',
    'postgresql://reporting@db.internal:5432/ledger',
  ])
    t.match(pushdownProblem(ok, { left: pg(a), right: pg(other) }), /both tables in one database/, other)
  t.match(
    pushdownProblem(ok, { left: pg(a), right: { alias: 'f', type: 'csv', config: { path: 'f.csv' } } }),
    /needs both sources to be postgres sources/,
  )
  t.match(
    pushdownProblem(onePass('l.ref = r.ref AND similarity(l.name, r.name) > 0.8'), { left: pg(a), right: pg(a) }),
    /^pass p: .*similarity/,
  )
})

t.test(
  'engine "postgres" on sources that are not PostgreSQL tables: 400 with code and hint, nothing stored',
  async (t) => {
    const pair = 'id,ref,amount\nA,1,1.00\n'
    const { app } = await testApp(t, { files: { 'l.csv': pair, 'r.csv': pair } })
    await register(app, 'l', 'l.csv')
    await register(app, 'r', 'r.csv')
    const res = await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe, engine: 'postgres' } })
    t.equal(res.statusCode, 400)
    t.match(res.json(), {
      error: 'pushdown_unavailable',
      message: /needs both sources to be postgres sources/,
      suggestion: /engine "memory"/,
    })
    for (const alias of ['l', 'r'])
      await app.inject({ method: 'POST', url: `/api/sources/${alias}/load-scoped`, payload: { conditions: [] } })
    const sample = await app.inject({
      method: 'POST',
      url: '/api/runs',
      payload: { recipe, engine: 'postgres', mode: 'sample' },
    })
    t.equal(sample.statusCode, 400)
    t.match(sample.json(), { error: 'pushdown_unavailable', message: /sample run/, suggestion: /"mode": "full"/ })
    t.equal((await app.inject({ method: 'GET', url: '/api/runs' })).json().total, 0)
  },
)
