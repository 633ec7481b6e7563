// Operating the service: Prometheus metrics, structured logs with request and run ids, the rate
// limit, the overload guard, and readiness.

import { execFile } from 'node:child_process'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { Writable } from 'node:stream'
import t from 'tap'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { freshDatabase, testApp } from './helpers/app.js'
import { fakeAnthropic, toolCalls } from './helpers/fake-anthropic.js'
import { waitForRun } from './helpers/runs.js'
import { tinyFiles as files, tinyRecipe as recipe } from './helpers/tiny.js'

const run = promisify(execFile)

t.test('metrics and logs: request latency, runs, agent events by reason; request and run ids', async (t) => {
  const logs: Record<string, unknown>[] = []
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) logs.push(JSON.parse(line))
      done()
    },
  })
  const fake = await fakeAnthropic(t)
  const database = await freshDatabase()
  const config = loadConfig({
    DATA_DIR: t.testdir(files),
    ANTHROPIC_API_KEY: 'k',
    ANTHROPIC_BASE_URL: fake.baseURL,
    AI_MAX_RETRIES: '0',
    AI_MODE: 'deterministic',
  })
  const app = await buildApp({ config, database, logger: { level: 'info', stream } })
  t.teardown(async () => {
    await app.close()
    await database.close()
  })
  for (const [alias, path] of [
    ['bank', 'bank.csv'],
    ['inv', 'inv.csv'],
  ])
    await app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type: 'csv', path } })
  const run = await waitForRun(
    app,
    (await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe } })).json().id,
  )
  t.equal(run.status, 'completed')
  fake.script({ body: toolCalls(['run_full', {}]) }, { text: 'no' })
  await app.inject({ method: 'POST', url: '/api/chat', payload: { message: 'run it' } })
  await app.inject({
    method: 'POST',
    url: '/api/ai',
    payload: { tool: 'validate_recipe', input: { recipe, schemas: { left: [], right: [] } } },
  })

  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body
  t.match(
    text,
    /concord_http_request_duration_seconds_bucket\{le="[\d.]+",method="POST",route="\/api\/runs",status="202"\}/,
  )
  t.match(text, /concord_run_duration_seconds_count\{status="completed",engine="memory",mode="full"\} 1/)
  t.match(text, /concord_run_rows_total\{side="left"\} 2/)
  t.match(text, /concord_run_rows_per_second_count\{engine="memory"\} 1/, 'rows per second of the run')
  t.match(text, /concord_run_duration_seconds_sum\{status="completed",engine="memory",mode="full"\} [\d.e-]+/)
  t.match(text, /concord_agent_events_total\{type="tool_denied",reason="tool_not_allowed"\} 1/)
  t.match(text, /concord_ai_tool_calls_total\{tool="validate_recipe",engine="deterministic"\} 1/)
  t.match(text, /concord_process_resident_memory_bytes/)

  // every reply carries its request id, the one in the log lines; a caller's own id is kept
  const traced = await app.inject({ method: 'GET', url: '/api/sources', headers: { 'x-request-id': 'caller-42' } })
  t.equal(traced.headers['x-request-id'], 'caller-42')
  t.ok(
    logs.some((l) => l.request_id === 'caller-42' && l.msg === 'request completed'),
    'and logged with it',
  )
  const minted = await app.inject({ method: 'GET', url: '/api/nope', headers: { 'x-request-id': 'bad id\nforged' } })
  t.match(minted.headers['x-request-id'], /^[0-9a-f-]{36}$/, 'an unsafe id is replaced, even on a 404')
  t.ok(logs.some((l) => l.request_id === minted.headers['x-request-id']))
  const request = logs.find((l) => l.msg === 'request completed' && (l.req as undefined) === undefined && l.request_id)
  t.ok(request, 'request logs carry request_id')
  // one line per request, naming it (Fastify's own "incoming request" line is at debug)
  t.match(
    logs.find((l) => l.request_id === 'caller-42'),
    { msg: 'request completed', method: 'GET', url: '/api/sources', res: { statusCode: 200 } },
  )
  t.notOk(
    logs.some((l) => l.msg === 'incoming request'),
    'no second line per request at info',
  )
  const finished = logs.find((l) => l.msg === 'run finished')
  t.match(finished, { run_id: run.id, status: 'completed', matches: 2 })
  t.ok(
    logs.some((l) => l.msg === 'run queued' && l.run_id === run.id && typeof l.request_id === 'string'),
    'the line that queued the run has both ids',
  )
})

t.test('the rate limit answers 429 with a code; probes are not limited', async (t) => {
  const { app } = await testApp(t, { env: { RATE_LIMIT_PER_MINUTE: '3' } })
  const statuses: number[] = []
  for (let i = 0; i < 5; i++) statuses.push((await app.inject({ method: 'GET', url: '/api/sources' })).statusCode)
  t.same(statuses, [200, 200, 200, 429, 429])
  const limited = await app.inject({ method: 'GET', url: '/api/sources' })
  t.match(limited.json(), { error: 'rate_limited', suggestion: /retry in/ })
  for (const url of ['/health', '/ready', '/metrics', '/health?probe=1'])
    for (let i = 0; i < 4; i++) t.equal((await app.inject({ method: 'GET', url })).statusCode, 200, url)
})

t.test('the rate limit counts a valid key, else the address: made-up tokens get no fresh allowance', async (t) => {
  const ROOT = 'root-key-for-tests-0123456789'
  const { app } = await testApp(t, { env: { RATE_LIMIT_PER_MINUTE: '3', CONCORD_ADMIN_KEY: ROOT } })
  const get = (authorization?: string, remoteAddress = '10.0.0.1') =>
    app.inject({ method: 'GET', url: '/api/sources', remoteAddress, headers: authorization ? { authorization } : {} })
  const created = await app.inject({
    method: 'POST',
    url: '/api/keys',
    headers: { authorization: `Bearer ${ROOT}` },
    payload: { name: 'a', role: 'viewer' },
  })
  const keyA = `Bearer ${created.json().key}`
  // guessing keys from one address: a new token each time, yet the fourth guess is limited
  const guesses: number[] = []
  for (let i = 0; i < 4; i++) guesses.push((await get(`Bearer guess-${i}`)).statusCode)
  t.same(guesses, [401, 401, 401, 429])
  t.equal((await get()).statusCode, 429, 'no header: the same address, the same allowance')
  // a valid key has its own allowance, whatever the address and whatever the address has used
  const byKey: number[] = []
  for (let i = 0; i < 4; i++) byKey.push((await get(keyA, i % 2 ? '10.0.0.1' : '10.0.0.2')).statusCode)
  t.same(byKey, [200, 200, 200, 429])
  t.equal((await get(`Bearer ${ROOT}`)).statusCode, 200, 'another key: another allowance')
  t.equal((await get('Bearer guess-x', '10.0.0.3')).statusCode, 401, 'another address: another allowance')
})

t.test('under pressure, requests get a 503 overloaded instead of waiting', async (t) => {
  const { app } = await testApp(t, { env: { MAX_HEAP_USED_BYTES: '1' } })
  // the guard samples the heap about once a second
  await new Promise((r) => setTimeout(r, 1500))
  const res = await app.inject({ method: 'GET', url: '/api/sources' })
  t.equal(res.statusCode, 503)
  t.match(res.json(), { error: 'overloaded' })
  t.ok(res.headers['retry-after'])
  // the probes still answer: an orchestrator sees the process alive and can read why it is busy
  for (const url of ['/health', '/metrics'])
    t.equal((await app.inject({ method: 'GET', url })).statusCode, 200, `${url} answers under pressure`)
  // and /ready says what an ordinary request would meet, so traffic goes elsewhere meanwhile
  const ready = await app.inject({ method: 'GET', url: '/ready' })
  t.equal(ready.statusCode, 503)
  t.match(ready.json(), { status: 'overloaded' })
})

t.test('the loop guard counts serving, not start-up, and reads a held loop as overload', async (t) => {
  // In a small process of its own: this test process keeps tap's and tsx's big heaps, and one of its
  // own collections (hundreds of milliseconds on a busy CI machine) inside a 50 ms window read as
  // overload. The bound is well above what scheduling adds to a quiet window, the holds well above
  // the bound, and the start-up hold long enough that counting it would put a 50 ms window over.
  const script = `
    const { loopGauge } = await import(${JSON.stringify(pathToFileURL(join(import.meta.dirname, '../src/pressure.ts')).href)})
    const hold = (ms) => { const until = performance.now() + ms; while (performance.now() < until); }
    const wait = (ms) => new Promise((r) => setTimeout(r, ms))
    const seen = {}
    const gauge = loopGauge(200)
    seen.beforeStart = gauge.healthy()
    hold(2000) // start-up work: module loads, the database's first open
    gauge.start()
    seen.atStart = gauge.healthy() // a check before the loop's first sample (a NaN mean)
    await wait(50)
    seen.afterStart = gauge.healthy()
    hold(1000)
    await wait(20)
    seen.held = gauge.healthy()
    await wait(100)
    seen.quietAgain = gauge.healthy()
    gauge.stop()
    const off = loopGauge(0)
    off.start()
    hold(100)
    seen.off = off.healthy()
    off.stop()
    console.log(JSON.stringify(seen))
  `
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script])
  t.same(JSON.parse(stdout), {
    beforeStart: true, // before the app is ready nothing is measured
    atStart: true,
    afterStart: true, // what came before start() does not count, nor a check before the first sample
    held: false, // a loop held for 1 s in the window is over a 200 ms bound
    quietAgain: true, // the next quiet window is healthy again
    off: true, // a bound of 0 turns the guard off
  })
})

t.test('oversize bodies and uploads answer 413 payload_too_large and leave nothing', async (t) => {
  const { app, dataDir } = await testApp(t, { env: { MAX_UPLOAD_BYTES: '1000' } })
  const big = await app.inject({
    method: 'POST',
    url: '/api/recipes/validate',
    headers: { 'content-type': 'application/json' },
    payload: `{"name":"${'x'.repeat(10 * 1024 * 1024)}"}`,
  })
  t.equal(big.statusCode, 413)
  t.match(big.json(), { error: 'payload_too_large', suggestion: /smaller/ })
  const boundary = '----big'
  const upload = await app.inject({
    method: 'POST',
    url: '/api/sources',
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    payload: [
      `--${boundary}`,
      'Content-Disposition: form-data; name="alias"',
      '',
      'big',
      `--${boundary}`,
      'Content-Disposition: form-data; name="file"; filename="big.csv"',
      '',
      `id\n${'1\n'.repeat(1000)}`,
      `--${boundary}--`,
      '',
    ].join('\r\n'),
  })
  t.equal(upload.statusCode, 413, upload.body)
  t.match(upload.json(), { error: 'payload_too_large', suggestion: /MAX_UPLOAD_BYTES/ })
  t.same(await readdir(join(dataDir, 'uploads', 'default')), [], 'the partial file is gone')
  t.equal((await app.inject({ method: 'GET', url: '/api/sources/big' })).statusCode, 404)
})
