// Schedules across instances: two `concord serve` processes on one PostgreSQL tick every 50 ms and
// race for each due occurrence; the compare-and-set on next_run_at lets exactly one fire it. The
// schedule is a row, so it outlives the processes: a new instance started after both stopped
// fires it. Occurrences missed while down fire once.

import { type ChildProcess, spawn } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { join, resolve } from 'node:path'
import t, { type Test } from 'tap'
import { bankRecipe, dayOne } from './helpers/exceptions.js'
import { testDatabase } from './helpers/pg.js'

const root = resolve(import.meta.dirname, '..')

type Run = { id: string; status: string; error?: { error: string } | null; summary?: { matches: number } | null }
const HEARTBEAT_MS = 200
const TICK_MS = '50'

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
      SCHEDULER_TICK_MS: TICK_MS,
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

async function count(pgdb: { query(q: string): Promise<{ rows: { n: number }[] }> }): Promise<number> {
  return (await pgdb.query('SELECT count(*)::int AS n FROM runs')).rows[0].n
}

t.test(
  'two instances race for each due occurrence: each fires once; a later instance fires what was stored',
  async (t) => {
    const shared = await sharedDatabase(t)
    if (!shared) return
    const { pgdb, url } = shared
    const dataDir = t.testdir({})
    await writeFile(join(dataDir, 'bank.csv'), dayOne.bank)
    await writeFile(join(dataDir, 'invoices.csv'), dayOne.invoices)
    const a = await instance(t, dataDir, url.toString())
    const b = await instance(t, dataDir, url.toString())
    for (const [alias, path] of [
      ['bank', 'bank.csv'],
      ['invoices', 'invoices.csv'],
    ])
      t.equal((await call(a.base, 'POST', '/api/sources', { alias, type: 'csv', path })).status, 201)
    const recipe = (await call(a.base, 'POST', '/api/recipes', bankRecipe)).body as unknown as { id: string }
    const made = await call(a.base, 'POST', '/api/schedules', { recipe_id: recipe.id, cron: '0 6 * * *' })
    t.equal(made.status, 201)
    const id = (made.body as unknown as { id: string }).id

    const fired = async (base: string, before: string | null) => {
      const until = Date.now() + 30_000
      for (;;) {
        const s = (await call(base, 'GET', `/api/schedules/${id}`)).body as unknown as { last_fired_at: string | null }
        if (s.last_fired_at !== before) return s.last_fired_at
        if (Date.now() > until) throw new Error('the schedule did not fire')
        await new Promise((r) => setTimeout(r, 25))
      }
    }
    let last: string | null = null
    for (let n = 1; n <= 5; n++) {
      // the occurrence comes due for both instances at once
      await pgdb.query(`UPDATE schedules SET next_run_at = now() - interval '1 second' WHERE id = '${id}'`)
      last = await fired(a.base, last)
      await new Promise((r) => setTimeout(r, 300)) // ample ticks for a second firing to show
      t.equal(await count(pgdb), n, `occurrence ${n} fired once`)
    }
    const next = ((await call(b.base, 'GET', `/api/schedules/${id}`)).body as unknown as { next_run_at: string })
      .next_run_at
    t.ok(Date.parse(next) > Date.now(), 'the next occurrence is in the future')

    // both stop; the schedule is a row: a new instance fires it, once for three missed hours
    for (const x of [a, b]) {
      x.child.kill('SIGTERM')
      t.equal(await x.exited, 0)
    }
    await pgdb.query(
      `UPDATE schedules SET cron = '*/5 * * * *', next_run_at = now() - interval '3 hours' WHERE id = '${id}'`,
    )
    const c = await instance(t, dataDir, url.toString())
    await fired(c.base, last)
    await new Promise((r) => setTimeout(r, 500))
    t.equal(await count(pgdb), 6, 'thirty-six missed occurrences, one run')
    c.child.kill('SIGTERM')
    t.equal(await c.exited, 0)
  },
)
