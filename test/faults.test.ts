// Faults, nothing lost: a source database that goes away mid-load, the service's own database
// restarting, the process killed with SIGKILL during a run, and a model that keeps answering 429,
// 529 or not at all. Databases "go away" through a TCP proxy in front of a real PostgreSQL.

import { spawn, type ChildProcess } from 'node:child_process'
import { readdir, writeFile } from 'node:fs/promises'
import net from 'node:net'
import { join, resolve } from 'node:path'
import t, { type Test } from 'tap'
import { openDatabase } from '../src/db/connect.js'
import { testApp } from './helpers/app.js'
import { fakeAnthropic, toolCalls } from './helpers/fake-anthropic.js'
import { testDatabase } from './helpers/pg.js'
import { tcpProxy } from './helpers/proxy.js'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

t.test(
  'the source database goes away mid-load: 502, the earlier scoped table stays, the next load works',
  async (t) => {
    const db = await testDatabase(t)
    await db.query('CREATE TABLE big (id integer PRIMARY KEY, ref text, amount numeric(12,2))')
    await db.query(
      `INSERT INTO big SELECT i, 'REF-' || i, (i % 100000) / 100.0 FROM generate_series(1, 200000) AS s(i)`,
    )
    const proxy = await tcpProxy(t, db.url)
    const { app } = await testApp(t)
    const registered = await app.inject({
      method: 'POST',
      url: '/api/sources',
      payload: { alias: 'big', type: 'postgres', connection_string: proxy.url, schema: db.schema, table: 'big' },
    })
    t.equal(registered.statusCode, 201, registered.body)
    const load = (conditions: unknown[]) =>
      app.inject({ method: 'POST', url: '/api/sources/big/load-scoped', payload: { conditions } })

    const small = await load([{ column: 'id', op: 'lte', value: 99 }])
    t.equal(small.statusCode, 200, small.body)
    t.equal(app.sources.engine('default').get('big')?.table.length, 99)

    // the connection drops after ~1 MB of the ~6 MB result, and the server refuses reconnects
    proxy.cutAfter(1_000_000)
    const cut = load([])
    const failed = await cut
    await proxy.stop()
    t.equal(failed.statusCode, 502, failed.body)
    t.match(failed.json(), { error: 'source_unreachable', suggestion: /server is running/ })
    t.notMatch(failed.body, /password/)
    t.equal(app.sources.engine('default').get('big')?.table.length, 99, 'the earlier scoped table is untouched')

    const whileDown = await load([])
    t.equal(whileDown.statusCode, 502)
    t.equal(whileDown.json().error, 'source_unreachable')

    await proxy.start()
    proxy.cutAfter(undefined)
    const back = await load([])
    t.equal(back.statusCode, 200, back.body)
    t.equal(back.json().total_rows, 200000)
    t.equal(app.sources.engine('default').get('big')?.table.length, 200000)
  },
)

t.test('the service database restarts: /ready goes false then true, no request hangs', async (t) => {
  const db = await testDatabase(t)
  const proxy = await tcpProxy(t, db.url)
  // the service's tables go in the test's own schema
  const url = new URL(proxy.url)
  url.searchParams.set('options', `-c search_path=${db.schema}`)
  const database = await openDatabase({ url: url.toString() })
  t.teardown(() => database.close())
  const { app } = await testApp(t, { database, files: { 'bank.csv': 'id,amount\nB1,10.00\n' } })
  const created = await app.inject({
    method: 'POST',
    url: '/api/sources',
    payload: { alias: 'bank', type: 'csv', path: 'bank.csv' },
  })
  t.equal(created.statusCode, 201, created.body)
  t.equal((await app.inject({ method: 'GET', url: '/ready' })).statusCode, 200)

  await proxy.stop()
  const started = Date.now()
  const ready = await app.inject({ method: 'GET', url: '/ready' })
  t.equal(ready.statusCode, 503)
  t.match(ready.json(), { status: 'unavailable', database: 'postgres' })
  const list = await app.inject({ method: 'GET', url: '/api/sources' })
  t.equal(list.statusCode, 503, list.body)
  t.match(list.json(), { error: 'database_unavailable', suggestion: /ready/ })
  t.ok(Date.now() - started < 15_000, `answers while down came within bounded time (${Date.now() - started} ms)`)
  t.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 200, 'the process itself is alive')

  await proxy.start()
  let readyAgain = false
  for (let i = 0; i < 50 && !readyAgain; i++) {
    readyAgain = (await app.inject({ method: 'GET', url: '/ready' })).statusCode === 200
    if (!readyAgain) await sleep(200)
  }
  t.ok(readyAgain, 'ready again once the database is back')
  const after = await app.inject({ method: 'GET', url: '/api/sources' })
  t.equal(after.statusCode, 200)
  t.equal(after.json().sources.length, 1, 'nothing was lost')
})

interface RunAnswer {
  id: string
  status: string
  summary?: { matches: number }
  error?: { error: string }
}

async function freePort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as net.AddressInfo).port
  await new Promise((r) => server.close(r))
  return port
}

/** `concord serve` as a real child process on its own data folder. */
async function serve(t: Test, dataDir: string, port: number) {
  const child: ChildProcess = spawn(process.execPath, [resolve(import.meta.dirname, '../bin/concord.js'), 'serve'], {
    // the overload guard off, as in testEnv: /health answers under pressure, the API would not
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      MAX_EVENT_LOOP_DELAY_MS: '0',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr!.on('data', (c) => (stderr += c))
  t.teardown(() => {
    child.kill('SIGKILL')
  })
  const base = `http://127.0.0.1:${port}`
  // A generous bound: PGlite's first start and the migrations take seconds, more on a busy
  // machine; a test that gives up early fails for the wrong reason.
  for (let up = false, i = 0; !up; i++) {
    if (child.exitCode !== null) throw new Error(`concord serve exited: ${stderr}`)
    if (i === 1200) throw new Error(`concord serve did not answer /health in 120 s: ${stderr}`)
    up = await fetch(`${base}/health`).then(
      (r) => r.ok,
      () => false,
    )
    if (!up) await sleep(100)
  }
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: body ? { 'content-type': 'application/json' } : {},
      body: body ? JSON.stringify(body) : undefined,
    })
    return { status: res.status, body: (await res.json()) as RunAnswer }
  }
  return { child, api }
}

t.test(
  'SIGKILL during a run: after restart the run is interrupted, shows nothing, and a retry completes',
  async (t) => {
    const dataDir = t.testdir({})
    const rows = 300_000
    const l = ['id,ref,amount']
    const r = ['id,ref,amount']
    for (let i = 0; i < rows; i++) {
      l.push(`L${i},R${i},${i % 1000}.25`)
      r.push(`M${i},R${i},${i % 1000}.25`)
    }
    await writeFile(join(dataDir, 'left.csv'), `${l.join('\n')}\n`)
    await writeFile(join(dataDir, 'right.csv'), `${r.join('\n')}\n`)
    const port = await freePort()

    const first = await serve(t, dataDir, port)
    for (const [alias, path] of [
      ['left', 'left.csv'],
      ['right', 'right.csv'],
    ])
      t.equal((await first.api('POST', '/api/sources', { alias, type: 'csv', path })).status, 201)
    const recipe = {
      name: 'big',
      left: { source: 'left', key: ['id'] },
      right: { source: 'right', key: ['id'] },
      passes: [{ name: 'p', pattern: '1:1', when: 'l.ref = r.ref AND l.amount = r.amount' }],
    }
    const started = await first.api('POST', '/api/runs', { recipe })
    t.equal(started.status, 202)
    const id = started.body.id
    let status = 'queued'
    for (let i = 0; i < 2400 && status === 'queued'; i++) {
      status = (await first.api('GET', `/api/runs/${id}`)).body.status
      if (status === 'queued') await sleep(25)
    }
    t.equal(status, 'running', 'killed while running')
    first.child.kill('SIGKILL')
    await new Promise((r) => first.child.once('exit', r))

    const second = await serve(t, dataDir, port)
    const run = (await second.api('GET', `/api/runs/${id}`)).body
    t.match(run, { status: 'interrupted', error: { error: 'interrupted' } })
    const matches = await second.api('GET', `/api/runs/${id}/matches`)
    t.equal(matches.status, 409, 'no partial results are visible')
    t.same(await readdir(join(dataDir, 'runs')), [], 'no partial files are left')

    const retried = await second.api('POST', `/api/runs/${id}/retry`)
    t.equal(retried.status, 202)
    let done = retried.body
    for (let i = 0; i < 3000 && !['completed', 'failed'].includes(done.status); i++) {
      await sleep(100)
      done = (await second.api('GET', `/api/runs/${retried.body.id}`)).body
    }
    t.match(done, { status: 'completed', summary: { matches: rows } })
    second.child.kill('SIGTERM')
    await new Promise((r) => second.child.once('exit', r))
  },
)

t.test('a model answering 429 or not at all: bounded retries with backoff, then a clear error', async (t) => {
  const fake = await fakeAnthropic(t)
  const { app } = await testApp(t, {
    env: {
      ANTHROPIC_API_KEY: 'k',
      ANTHROPIC_BASE_URL: fake.baseURL,
      AI_MODE: 'llm',
      AI_MAX_RETRIES: '2',
      AI_TIMEOUT_MS: '300',
    },
  })
  const input = {
    recipe: {
      name: 'r',
      left: { source: 'a', key: ['id'] },
      right: { source: 'b', key: ['id'] },
      passes: [{ name: 'p', pattern: '1:1', when: 'l.id = r.id' }],
    },
    schemas: { left: [{ name: 'id', type: 'string' }], right: [{ name: 'id', type: 'string' }] },
  }
  const limited = {
    status: 429,
    retryable: true,
    body: { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } },
  }
  fake.script(limited, limited, limited)
  const res = await app.inject({ method: 'POST', url: '/api/ai', payload: { tool: 'validate_recipe', input } })
  t.equal(res.statusCode, 502)
  t.match(res.json(), { error: 'model_rate_limited', suggestion: /deterministic/ })
  t.equal(fake.requests.length, 3, 'one call and AI_MAX_RETRIES=2 retries, not more')

  // retried answers that succeed in the end are simply answers
  fake.requests.length = 0
  fake.script(
    { status: 529, retryable: true, body: { type: 'error', error: { type: 'overloaded_error', message: 'busy' } } },
    { text: JSON.stringify({ valid: true, issues: [], suggestions: [], warnings: [] }) },
  )
  const recovered = await app.inject({ method: 'POST', url: '/api/ai', payload: { tool: 'validate_recipe', input } })
  t.equal(recovered.statusCode, 200, recovered.body)
  t.match(recovered.json(), { engine: 'llm', result: { valid: true } })
  t.equal(fake.requests.length, 2)

  // a model that never answers: each attempt times out, three attempts, then model_timeout
  fake.requests.length = 0
  fake.script({ delayMs: 1500, text: '{}' }, { delayMs: 1500, text: '{}' }, { delayMs: 1500, text: '{}' })
  const before = Date.now()
  const timedOut = await app.inject({ method: 'POST', url: '/api/ai', payload: { tool: 'validate_recipe', input } })
  t.equal(timedOut.statusCode, 502)
  t.equal(timedOut.json().error, 'model_timeout')
  t.equal(fake.requests.length, 3)
  t.ok(Date.now() - before < 5000, 'bounded: it gave up after the retries')
})

t.test('a chat turn whose model keeps answering 429 fails cleanly; the session stays as it was', async (t) => {
  const fake = await fakeAnthropic(t)
  const { app } = await testApp(t, {
    files: { 'bank.csv': 'id,amount\nB1,10.00\n' },
    env: { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: fake.baseURL, AI_MAX_RETRIES: '1' },
  })
  await app.inject({ method: 'POST', url: '/api/sources', payload: { alias: 'bank', type: 'csv', path: 'bank.csv' } })
  const limited = {
    status: 429,
    retryable: true,
    body: { type: 'error', error: { type: 'rate_limit_error', message: 'no' } },
  }
  fake.script({ body: toolCalls(['list_sources', {}]) }, limited, limited)
  const failed = await app.inject({ method: 'POST', url: '/api/chat', payload: { message: 'hello' } })
  t.equal(failed.statusCode, 502)
  t.equal(failed.json().error, 'model_rate_limited')
  t.equal(fake.requests.length, 3, 'the first call, then one call and one retry')
  const [session] = await app.db.selectFrom('sessions').selectAll().execute()
  t.equal(session.phase, 'greeting', 'the failed turn changed nothing')
  fake.script({ body: toolCalls(['list_sources', {}]) }, { text: 'One source: bank.' })
  const again = await app.inject({
    method: 'POST',
    url: '/api/chat',
    payload: { session_id: session.id, message: 'hello' },
  })
  t.equal(again.statusCode, 200, again.body)
  const last = fake.requests.at(-1)!
  t.equal(last.messages.length, 3, 'history holds only the successful turn: user, tool_use, tool_result')
})

t.test('a source query: the statement timeout answers 504; a client that goes away cancels it', async (t) => {
  const pgdb = await testDatabase(t)
  if (pgdb.kind !== 'local') return void t.skip('needs pg_stat_activity of a real PostgreSQL', () => {})
  const marker = `slow_${Date.now()}`
  // a view whose every row takes a while: registering reads only the catalogue, loading runs it
  await pgdb.query(`CREATE VIEW ${marker} AS SELECT g AS id, pg_sleep(0.5)::text AS s FROM generate_series(1, 60) g`)
  const register = { type: 'postgres', connection_string: pgdb.url, schema: pgdb.schema, table: marker }

  const timed = await testApp(t, { env: { SOURCE_STATEMENT_TIMEOUT_MS: '300' } })
  await timed.app.inject({ method: 'POST', url: '/api/sources', payload: { alias: 'slow', ...register } })
  const res = await timed.app.inject({ method: 'POST', url: '/api/sources/slow/load-scoped', payload: {} })
  t.equal(res.statusCode, 504, res.body)
  t.match(res.json(), { error: 'source_timeout', suggestion: /SOURCE_STATEMENT_TIMEOUT_MS/ })

  const { app } = await testApp(t)
  await app.inject({ method: 'POST', url: '/api/sources', payload: { alias: 'slow', ...register } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as net.AddressInfo
  const running = async () =>
    (
      await pgdb.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%' || $1 || '%' AND pid <> pg_backend_pid()`,
        [marker],
      )
    ).rows[0].n as number
  const client = new AbortController()
  const request = fetch(`http://127.0.0.1:${port}/api/sources/slow/load-scoped`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
    signal: client.signal,
  }).catch((err: Error) => err)
  // wait for the query to be running at the source, then hang up
  for (let i = 0; (await running()) === 0; i++) {
    if (i > 200) throw new Error('the source query never started')
    await sleep(25)
  }
  client.abort()
  t.match(await request, { name: 'AbortError' })
  // pg_cancel_backend ends it long before the view's 30 s are up
  const t0 = Date.now()
  while ((await running()) > 0) {
    if (Date.now() - t0 > 15_000) break
    await sleep(25)
  }
  t.equal(await running(), 0, 'the query is gone from pg_stat_activity')
  t.ok(Date.now() - t0 < 15_000, `cancelled within ${Date.now() - t0} ms of the disconnect`)
})
