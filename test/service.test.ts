// The service as an operator meets it: configuration, probes, and `concord serve` as a real
// process on the embedded database, stopped gracefully and started again on the same data.

import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createServer } from 'node:net'
import { join, resolve } from 'node:path'
import t from 'tap'
import { loadConfig } from '../src/config.js'
import { testApp } from './helpers/app.js'

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

async function freePort(): Promise<number> {
  return new Promise((ok) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => ok(port))
    })
  })
}

async function waitReady(url: string, ms = 30_000): Promise<Response> {
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

function serve(dataDir: string, port: number) {
  const child = spawn(process.execPath, [join(root, 'bin/concord.js'), 'serve'], {
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let log = ''
  child.stdout.on('data', (d) => (log += d))
  child.stderr.on('data', (d) => (log += d))
  const exited = new Promise<number | null>((ok) => child.on('exit', (code) => ok(code)))
  return { child, exited, log: () => log }
}

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
