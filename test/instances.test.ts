// Several `concord serve` processes on one PostgreSQL database, as in a rolling deploy: each run
// belongs to the instance that queued it, instances beat, and only a silent instance's runs are
// taken over (interrupted, retryable anywhere). Two real server processes; one is SIGKILLed mid-run.

import { type ChildProcess, spawn } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { join, resolve } from 'node:path'
import t, { type Test } from 'tap'
import { fakeAnthropic } from './helpers/fake-anthropic.js'
import { testDatabase } from './helpers/pg.js'

const root = resolve(import.meta.dirname, '..')

/** A reply body: a run, or an error. */
type Run = { id: string; status: string; error?: { error: string } | null; summary?: { matches: number } | null }
const HEARTBEAT_MS = 200 // taken over after five silent beats: one second

async function freePort(): Promise<number> {
  return new Promise((ok) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => ok(port))
    })
  })
}

interface Instance {
  base: string
  child: ChildProcess
  exited: Promise<number | null>
}

async function instance(
  t: Test,
  dataDir: string,
  databaseUrl: string,
  env: Record<string, string> = {},
): Promise<Instance> {
  const port = await freePort()
  const child = spawn(process.execPath, [join(root, 'bin/concord.js'), 'serve'], {
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      LOG_LEVEL: 'warn',
      // the overload guard is off, as for every test server (helpers/app.ts testEnv): on a busy
      // machine it once answered this test's chat turn 503 overloaded
      MAX_EVENT_LOOP_DELAY_MS: '0',
      RUN_HEARTBEAT_MS: String(HEARTBEAT_MS),
      RUN_CONCURRENCY: '1',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)))
  t.teardown(() => {
    child.kill('SIGKILL')
  })
  const base = `http://127.0.0.1:${port}`
  const until = Date.now() + 60_000
  while (!(await fetch(`${base}/ready`).catch(() => null))?.ok) {
    if (Date.now() > until) throw new Error('instance not ready')
    await new Promise((r) => setTimeout(r, 100))
  }
  return { base, child, exited }
}

/**
 * A PostgreSQL schema the instances share (DATABASE_URL with its search_path), or null after a
 * visible skip: PGlite over the wire serves one session at a time.
 */
async function sharedDatabase(t: Test) {
  const pgdb = await testDatabase(t)
  if (pgdb.kind !== 'local') {
    t.skip('several instances need a PostgreSQL server: PGlite over the wire serves one session at a time', () => {})
    return null
  }
  const url = new URL(pgdb.url)
  url.searchParams.set('options', `-c search_path=${pgdb.schema}`)
  return { pgdb, url }
}

async function call(base: string, method: string, path: string, body?: unknown) {
  const res = await fetch(base + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: res.status, body: (await res.json()) as Run }
}

async function waitFor(base: string, id: string, done: (run: Run) => boolean) {
  const until = Date.now() + 120_000
  for (;;) {
    const { body: run } = await call(base, 'GET', `/api/runs/${id}`)
    if (done(run)) return run
    if (Date.now() > until) throw new Error(`run ${id}: still ${run.status}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

const finished = (run: Run) => ['completed', 'failed', 'cancelled', 'interrupted'].includes(run.status)

const recipe = (left: string, right: string) => ({
  name: `${left}-${right}`,
  left: { source: left, key: ['id'] },
  right: { source: right, key: ['id'] },
  passes: [{ name: 'p', pattern: '1:1', when: 'l.ref = r.ref AND l.amount = r.amount' }],
})

t.test('two instances on one database: a killed one loses only its own run, retried on the other', async (t) => {
  const shared = await sharedDatabase(t)
  if (!shared) return
  const { pgdb, url } = shared
  // a shared data folder, as a shared volume would be: the same files and run results for both
  const dataDir = t.testdir({})
  const rows = (n: number, prefix: string) =>
    ['id,ref,amount', ...Array.from({ length: n }, (_, i) => `${prefix}${i},R${i},${i % 1000}.25`)].join('\n')
  await writeFile(join(dataDir, 'small-left.csv'), rows(20_000, 'L'))
  await writeFile(join(dataDir, 'small-right.csv'), rows(20_000, 'M'))
  // a source that takes eight seconds to read: A's run is certainly running when A is killed
  await pgdb.query('CREATE TABLE ledger (id text, ref text, amount numeric(10,2))')
  await pgdb.query(
    `INSERT INTO ledger SELECT 'L' || i, 'R' || i, (i % 1000) + 0.25 FROM generate_series(0, 19999) AS i`,
  )
  await pgdb.query('CREATE VIEW slow_ledger AS SELECT l.* FROM ledger l, (SELECT pg_sleep(8)) AS wait')

  const a = await instance(t, dataDir, url.toString())
  const b = await instance(t, dataDir, url.toString())
  for (const [alias, path] of [
    ['sl', 'small-left.csv'],
    ['sr', 'small-right.csv'],
  ])
    t.equal((await call(a.base, 'POST', '/api/sources', { alias, type: 'csv', path })).status, 201)
  const slow = {
    alias: 'slow',
    type: 'postgres',
    connection_string: pgdb.url,
    schema: pgdb.schema,
    table: 'slow_ledger',
  }
  t.equal((await call(a.base, 'POST', '/api/sources', slow)).status, 201)

  const onA = (await call(a.base, 'POST', '/api/runs', { recipe: recipe('slow', 'sr') })).body.id as string
  await waitFor(a.base, onA, (run) => run.status === 'running' || finished(run))
  // an instance starting meanwhile (a rolling deploy) recovers only what dead instances left
  const c = await instance(t, dataDir, url.toString())
  t.equal(
    (await call(c.base, 'GET', `/api/runs/${onA}`)).body.status,
    'running',
    "a starting instance leaves A's live run alone",
  )
  c.child.kill('SIGTERM')
  t.equal(await c.exited, 0)

  const onB = (await call(b.base, 'POST', '/api/runs', { recipe: recipe('sl', 'sr') })).body.id as string
  // A dies mid-run, without a word
  const atKill = await call(b.base, 'GET', `/api/runs/${onA}`)
  t.equal(atKill.body.status, 'running', 'A is still running its run when it is killed')
  a.child.kill('SIGKILL')
  await a.exited
  t.equal(
    (await call(b.base, 'GET', `/api/runs/${onA}`)).body.status,
    'running',
    'not taken over before the heartbeat lapses',
  )

  const interrupted = await waitFor(b.base, onA, finished)
  t.match(
    interrupted,
    { status: 'interrupted', error: { error: 'interrupted' } },
    "A's run is interrupted once A is silent",
  )
  const other = await waitFor(b.base, onB, finished)
  t.match(other, { status: 'completed', summary: { matches: 20_000 } }, "B's run completed untouched")

  const retried = await call(b.base, 'POST', `/api/runs/${onA}/retry`)
  t.equal(retried.status, 202, JSON.stringify(retried.body))
  t.match(await waitFor(b.base, retried.body.id, finished), { status: 'completed', summary: { matches: 20_000 } })
  const instances = await pgdb.query('SELECT count(*)::int AS n FROM instances')
  t.ok(instances.rows[0].n >= 1, 'B is among the instances')
  b.child.kill('SIGTERM')
  t.equal(await b.exited, 0)
})

t.test(
  'a chat session across instances: streamed from the survivor, taken over once the dead turn lapses',
  async (t) => {
    const shared = await sharedDatabase(t)
    if (!shared) return
    const { pgdb, url } = shared
    const fake = await fakeAnthropic(t)
    const env = {
      ANTHROPIC_API_KEY: 'k',
      ANTHROPIC_BASE_URL: fake.baseURL,
      AI_MAX_RETRIES: '0',
      AI_MODE: 'deterministic',
      CHAT_EVENTS_POLL_MS: '100',
      CHAT_LEASE_MS: '600',
    }
    const dataDir = t.testdir({})
    const a = await instance(t, dataDir, url.toString(), env)
    const b = await instance(t, dataDir, url.toString(), env)
    fake.script({ text: 'Hello from A.' })
    const first = await call(a.base, 'POST', '/api/chat', { message: 'hi' })
    t.equal(first.status, 200)
    const id = (first.body as unknown as { session_id: string }).session_id

    // a client streams the session from B
    const abort = new AbortController()
    t.teardown(() => abort.abort())
    const res = await fetch(`${b.base}/api/sessions/${id}/events`, {
      headers: { accept: 'text/event-stream' },
      signal: abort.signal,
    })
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
    const seen: { seq: number; type: string; turn: number }[] = []
    let buffer = ''
    const readUntil = async (until: () => boolean) => {
      while (!until()) {
        const { value } = await reader.read()
        buffer += value ?? ''
        let end
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const data = buffer
            .slice(0, end)
            .split('\n')
            .find((l) => l.startsWith('data: '))
          buffer = buffer.slice(end + 2)
          if (data) seen.push(JSON.parse(data.slice(6)))
        }
      }
    }
    await readUntil(() => seen.some((e) => e.type === 'turn_finished'))
    t.same(
      seen.map((e) => e.type),
      ['turn_started', 'model_call', 'turn_finished'],
      "B streams A's first turn",
    )

    // A dies in the middle of its second turn (its model call never answers)
    fake.script({ delayMs: 60_000, text: 'never sent' })
    const asked = fake.requests.length
    void call(a.base, 'POST', '/api/chat', { session_id: id, message: 'and then?' }).catch(() => {})
    while (fake.requests.length === asked) await new Promise((r) => setTimeout(r, 10))
    const busy = await call(b.base, 'POST', '/api/chat', { session_id: id, message: 'me too' })
    t.match(busy, { status: 409, body: { error: 'session_busy' } }, "B refuses a turn while A's lives")
    a.child.kill('SIGKILL')
    await a.exited

    // once A's lease has lapsed, B takes the session; nothing of A's dead turn is kept
    await new Promise((r) => setTimeout(r, 800))
    fake.script({ text: 'Hello from B.' })
    const onB = await call(b.base, 'POST', '/api/chat', { session_id: id, message: 'still there?' })
    t.equal(onB.status, 200, JSON.stringify(onB.body))
    await readUntil(() => seen.filter((e) => e.type === 'turn_finished').length === 2)
    const stored = (await call(b.base, 'GET', `/api/sessions/${id}/events`)).body as unknown as {
      events: { seq: number }[]
    }
    t.same(
      seen.map((e) => e.seq),
      stored.events.map((e) => e.seq),
      "the stream saw every stored event once, in order: the refusal, then B's turn",
    )
    const messages = await pgdb.query('SELECT content FROM session_messages WHERE session_id = $1 ORDER BY seq', [id])
    t.same(
      messages.rows.map((r) => r.content[0].text),
      ['hi', 'Hello from A.', 'still there?', 'Hello from B.'],
      "A's dead turn left no message",
    )
    abort.abort()
    b.child.kill('SIGTERM')
    t.equal(await b.exited, 0)
  },
)

t.test("one recipe's full runs on two instances take turns: each record is opened once", async (t) => {
  const shared = await sharedDatabase(t)
  if (!shared) return
  const { url } = shared
  const dataDir = t.testdir({})
  // 40,000 a side, the last 30 of each without a counterpart: ~1 s a run
  const rows = (prefix: string, other: string) =>
    [
      'id,ref,amount',
      ...Array.from({ length: 40_000 }, (_, i) => `${prefix}${i},${i >= 39_970 ? other : 'R'}${i},${i % 1000}.25`),
    ].join('\n')
  await writeFile(join(dataDir, 'left.csv'), rows('L', 'X'))
  await writeFile(join(dataDir, 'right.csv'), rows('M', 'Y'))
  const a = await instance(t, dataDir, url.toString())
  const b = await instance(t, dataDir, url.toString())
  for (const alias of ['left', 'right'])
    t.equal((await call(a.base, 'POST', '/api/sources', { alias, type: 'csv', path: `${alias}.csv` })).status, 201)
  const saved = (await call(a.base, 'POST', '/api/recipes', recipe('left', 'right'))).body
  const [onA, onB] = await Promise.all(
    [a, b].map(async (x) => (await call(x.base, 'POST', '/api/runs', { recipe_id: saved.id })).body.id as string),
  )
  type Timed = Run & { started_at: string; finished_at: string }
  const runs = [(await waitFor(a.base, onA, finished)) as Timed, (await waitFor(b.base, onB, finished)) as Timed]
  t.same(
    runs.map((r) => r.status),
    ['completed', 'completed'],
  )
  const [first, second] = runs.sort((x, y) => Date.parse(x.started_at) - Date.parse(y.started_at))
  t.ok(Date.parse(second.started_at) >= Date.parse(first.finished_at), 'the later run started after the first finished')
  const open = (await call(a.base, 'GET', `/api/exceptions?recipe_id=${saved.id}&limit=200`)).body as unknown as {
    items: { side: string; record_key: string; run_id: string; last_run_id: string | null }[]
  }
  const keys = open.items.map((e) => `${e.side} ${e.record_key}`)
  t.equal(keys.length, 60, 'the 30 a side left open')
  t.equal(new Set(keys).size, 60, 'each opened once')
  t.ok(
    open.items.every((e) => e.run_id === first.id && e.last_run_id === second.id),
    'opened by the first, seen by the second',
  )
  for (const x of [a, b]) x.child.kill('SIGTERM')
  t.same(await Promise.all([a.exited, b.exited]), [0, 0])
})
