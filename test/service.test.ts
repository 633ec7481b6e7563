// The service as an operator meets it: configuration, probes, and `concord serve` as a real
// process on the embedded database, stopped gracefully and started again on the same data.

import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createServer } from 'node:net'
import { join, resolve } from 'node:path'
import t from 'tap'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { migrateToLatest, openDatabase } from '../src/db/connect.js'
import { migrations } from '../src/db/migrations/index.js'
import { testApp, testEnv } from './helpers/app.js'
import { testDatabase } from './helpers/pg.js'

const root = resolve(import.meta.dirname, '..')

t.test('configuration is read from the environment in one place', async (t) => {
  const c = loadConfig({
    PORT: '8080',
    HOST: '0.0.0.0',
    DATA_DIR: '/tmp/x',
    LOG_LEVEL: 'debug',
    DATABASE_URL: 'postgresql://a@b/c',
  })
  t.same(
    [c.port, c.host, c.dataDir, c.logLevel, c.databaseUrl],
    [8080, '0.0.0.0', '/tmp/x', 'debug', 'postgresql://a@b/c'],
  )
  const d = loadConfig({})
  t.same([d.port, d.host, d.logLevel, d.databaseUrl], [3000, '127.0.0.1', 'info', undefined])
  t.throws(() => loadConfig({ PORT: 'eighty', LOG_LEVEL: 'loud' }), /invalid configuration: .*PORT.*LOG_LEVEL/)
})

t.test('health and readiness', async (t) => {
  const { app, database } = await testApp(t)
  t.same((await app.inject('/health')).json(), { status: 'ok' })
  const ready = await app.inject('/ready')
  t.equal(ready.statusCode, 200)
  t.same(ready.json(), { status: 'ready', database: 'pglite' })
  const unknown = await app.inject('/nope')
  t.equal(unknown.statusCode, 404)
  t.equal(unknown.json().error, 'route_not_found')
  t.ok(database)
})

t.test(
  'with DATABASE_URL the service keeps its tables in PostgreSQL, migrated at start, closed at shutdown',
  async (t) => {
    const pgdb = await testDatabase(t)
    const url = new URL(pgdb.url)
    // the service's tables go to this test's schema; the name lets the test find its connections
    url.searchParams.set('options', `-c search_path=${pgdb.schema}`)
    url.searchParams.set('application_name', `concord-${pgdb.schema}`)
    const config = loadConfig({
      ...testEnv,
      DATA_DIR: t.testdir({ 'rows.json': '[{"id": 1}]' }),
      DATABASE_URL: url.toString(),
    })
    const app = await buildApp({ config, logger: false })
    let closed = false
    t.teardown(async () => {
      if (!closed) await app.close()
    })
    t.same((await app.inject('/ready')).json(), { status: 'ready', database: 'postgres' })
    const created = await app.inject({
      method: 'POST',
      url: '/api/sources',
      payload: { alias: 'rows', type: 'json', path: 'rows.json' },
    })
    t.equal(created.statusCode, 201)
    const stored = await pgdb.query('SELECT alias FROM sources')
    t.same(
      stored.rows.map((r) => r.alias),
      ['rows'],
      'the source row is in PostgreSQL',
    )
    const applied = await pgdb.query('SELECT name FROM kysely_migration ORDER BY name')
    t.same(
      applied.rows.map((r) => r.name),
      Object.keys(migrations).sort(),
      'every migration ran',
    )
    await app.close()
    closed = true
    if (pgdb.kind === 'local') {
      // the pool's sockets are closed; the server notices a moment later (under load, a few
      // hundred milliseconds), so its view is read until it agrees or two seconds have passed
      const open = async () =>
        (
          await pgdb.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [
            `concord-${pgdb.schema}`,
          ])
        ).rows[0].n as number
      let n = await open()
      for (let i = 0; n > 0 && i < 20; i++) {
        await new Promise((r) => setTimeout(r, 100))
        n = await open()
      }
      t.equal(n, 0, 'closing the app ended its pool')
    }
  },
)

t.test('migrations run while another session creates and drops tables in the same database', async (t) => {
  // Kysely's own introspector looked up every table of every schema by name, so a table dropped
  // meanwhile (parallel tests, a second deployment) failed the service's start with "relation …
  // does not exist"
  const pgdb = await testDatabase(t)
  const churn = `${pgdb.schema}_churn`
  await pgdb.query(`CREATE SCHEMA ${churn}`)
  t.teardown(() => pgdb.query(`DROP SCHEMA ${churn} CASCADE`).then(() => {}))
  let stop = false
  const churning = (async () => {
    for (let i = 0; !stop; i++) {
      await pgdb.query(`CREATE TABLE ${churn}.t${i % 4} (id serial, a text, b int, c text)`)
      await pgdb.query(`DROP TABLE ${churn}.t${i % 4}`)
    }
  })()
  const url = new URL(pgdb.url)
  url.searchParams.set('options', `-c search_path=${pgdb.schema}`)
  const database = await openDatabase({ url: url.toString() })
  t.teardown(() => database.close())
  const started = Date.now()
  let rounds = 0
  try {
    // the first round creates every table, the later ones find them migrated
    while (rounds < 3 || Date.now() - started < 1500) {
      await migrateToLatest(database.db)
      rounds++
    }
  } finally {
    stop = true
    await churning
  }
  const tables = (await database.db.introspection.getTables()).map((x) => x.name)
  t.ok(tables.includes('sources') && tables.includes('kysely_migration'), `${rounds} rounds, tables of its own schema`)
  t.notOk(
    tables.some((name) => /^t\d$/.test(name)),
    'the other schema is not looked at',
  )
})

async function freePort(): Promise<number> {
  return new Promise((ok) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => ok(port))
    })
  })
}

async function waitReady(url: string, ms = 120_000): Promise<Response> {
  const until = Date.now() + ms
  for (;;) {
    try {
      const res = await fetch(url)
      if (res.ok) return res
    } catch {
      // not listening yet
    }
    if (Date.now() > until) throw new Error(`${url} not ready after ${ms} ms`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

function serve(dataDir: string, port: number, { guard = true } = {}) {
  const child = spawn(process.execPath, [join(root, 'bin/concord.js'), 'serve'], {
    // the overload guard stays on as in production: once /ready says yes, the first request is served
    // (start-up work is not counted as load, and /ready answers 503 while the guard would refuse).
    // Tests about something else turn it off, as every other test server does: on a machine busy
    // with the rest of the suite it answered a later request 503 overloaded.
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      LOG_LEVEL: 'info',
      ...(guard ? {} : { MAX_EVENT_LOOP_DELAY_MS: '0' }),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let log = ''
  child.stdout.on('data', (d) => (log += d))
  child.stderr.on('data', (d) => (log += d))
  const exited = new Promise<number | null>((ok) => child.on('exit', (code) => ok(code)))
  return { child, exited, log: () => log }
}

t.test('npx finds the concord command the package declares', async (t) => {
  // the same bin/concord.js the serve test below starts; npx resolves it from package.json's "bin"
  const out = await new Promise<{ code: number | null; text: string }>((done) => {
    const child = spawn('npx', ['--no-install', 'concord', 'help'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
    let text = ''
    child.stdout.on('data', (d) => (text += d))
    child.on('exit', (code) => done({ code, text }))
  })
  t.equal(out.code, 0)
  t.match(out.text, /serve {2,}start the HTTP service \(same as npm start\)/)
})

t.test('concord serve runs on the embedded database, shuts down gracefully, keeps its data', async (t) => {
  const dataDir = t.testdir({ 'rows.json': JSON.stringify([{ id: 1, amount: '2.50' }]) })
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const first = serve(dataDir, port)
  t.teardown(() => first.child.kill('SIGKILL'))
  await waitReady(`${base}/ready`)
  const created = await fetch(`${base}/api/sources`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ alias: 'rows', type: 'json', path: 'rows.json' }),
  })
  t.equal(created.status, 201)
  t.ok(existsSync(join(dataDir, 'db')), 'the embedded database lives in the data folder')
  first.child.kill('SIGTERM')
  t.equal(await first.exited, 0, 'SIGTERM closes the app and exits cleanly')
  t.match(first.log(), /"request_id"/, 'logs carry request ids')

  const second = serve(dataDir, port)
  t.teardown(() => second.child.kill('SIGKILL'))
  await waitReady(`${base}/ready`)
  const list = (await (await fetch(`${base}/api/sources`)).json()) as { sources: { alias: string }[] }
  t.same(
    list.sources.map((s) => s.alias),
    ['rows'],
    'sources survive a restart (migrations re-run harmlessly)',
  )
  second.child.kill('SIGTERM')
  t.equal(await second.exited, 0)
})

t.test(
  'an embedded database is opened by one process: a second is refused, naming the folder and the holder',
  async (t) => {
    const recipe = {
      name: 'r',
      left: { source: 'rows', key: ['id'] },
      right: { source: 'rows', key: ['id'] },
      passes: [{ name: 'p', pattern: '1:1', when: 'l.amount = r.amount' }],
    }
    const dataDir = t.testdir({
      'rows.json': JSON.stringify([{ id: 1, amount: '2.50' }]),
      'recipe.json': JSON.stringify(recipe),
    })
    const port = await freePort()
    const first = serve(dataDir, port, { guard: false })
    t.teardown(() => first.child.kill('SIGKILL'))
    await waitReady(`http://127.0.0.1:${port}/ready`)
    const folder = join(dataDir, 'db')
    const holder = new RegExp(`the embedded database in ${folder} is in use by process ${first.child.pid} on `)

    const secondPort = await freePort()
    const second = serve(dataDir, secondPort)
    t.equal(await second.exited, 1, 'a second concord serve exits')
    t.match(second.log(), holder)
    t.match(second.log(), /\(database_in_use\)\n.*DATABASE_URL/)
    t.notOk(await fetch(`http://127.0.0.1:${secondPort}/health`).catch(() => null), 'it never listened')

    // the CLI resolving an alias needs the same database
    const cli = spawn(
      process.execPath,
      [
        join(root, 'bin/concord.js'),
        'reconcile',
        '--left',
        'rows',
        '--right',
        'rows',
        '--recipe',
        join(dataDir, 'recipe.json'),
      ],
      {
        env: { ...process.env, DATA_DIR: dataDir },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    let err = ''
    cli.stderr.on('data', (d) => (err += d))
    const code = await new Promise<number | null>((done) => cli.on('exit', done))
    t.not(code, 0, 'concord reconcile with aliases is refused')
    t.match(err, holder)

    // the holder still serves, and once it is killed (no clean exit) the folder can be opened again
    t.equal((await fetch(`http://127.0.0.1:${port}/api/sources`)).status, 200, 'the holder is untouched')
    first.child.kill('SIGKILL')
    await first.exited
    const third = serve(dataDir, port, { guard: false })
    t.teardown(() => third.child.kill('SIGKILL'))
    await waitReady(`http://127.0.0.1:${port}/ready`)
    third.child.kill('SIGTERM')
    t.equal(await third.exited, 0, 'a lock left by a killed process is taken over')
    t.notOk(existsSync(`${folder}.lock`), 'a clean exit removes the lock')
  },
)

t.test('open mode refuses a non-loopback HOST at start-up and says why', async (t) => {
  const env: Record<string, string | undefined> = {
    ...process.env,
    DATA_DIR: t.testdir({}),
    HOST: '0.0.0.0',
    PORT: '0',
    LOG_LEVEL: 'info',
    MAX_EVENT_LOOP_DELAY_MS: '0',
  }
  delete env.CONCORD_ADMIN_KEY
  delete env.DATABASE_URL
  const child = spawn(process.execPath, [join(root, 'bin/concord.js'), 'serve'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  t.teardown(() => child.kill('SIGKILL'))
  let log = ''
  child.stdout.on('data', (d) => (log += d))
  child.stderr.on('data', (d) => (log += d))
  const code = await new Promise<number | null>((done) => child.on('exit', (c) => done(c)))
  t.equal(code, 1, 'it exits non-zero instead of listening')
  const line = log
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg: string; host?: string })
    .find((l) => /refusing to listen/.test(l.msg))
  t.match(line, { level: 50, host: '0.0.0.0', msg: /no API key is configured \(CONCORD_ADMIN_KEY\)/ }, log)
  t.notMatch(log, /Server listening/)
})
