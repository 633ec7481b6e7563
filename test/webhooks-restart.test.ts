// Webhook deliveries across processes: `concord serve` on an embedded database stopped (gracefully,
// then killed) while a delivery is pending, and a new process delivering it; two instances on one
// PostgreSQL database sharing the outbox. The receiver deduplicates by delivery id: it must end up
// with every event exactly once.

import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { verifyDelivery } from '../src/webhooks/signature.js'
import { testEnv } from './helpers/app.js'
import { testDatabase } from './helpers/pg.js'
import { receiver } from './helpers/receiver.js'
import { call as callJson, type Serve, serve } from './helpers/serve.js'
import { tinyFiles as files, tinyRecipe as recipe } from './helpers/tiny.js'

/** `concord serve` on the data folder's embedded database, ready. */
function serveOn(t: Test, dataDir: string): Promise<Serve> {
  return serve(t, {
    DATA_DIR: dataDir,
    WEBHOOK_ALLOW_PRIVATE: 'true',
    WEBHOOK_POLL_MS: '50',
    // an attempt may wait a minute for an answer: the held ones are pending when the process stops
    WEBHOOK_TIMEOUT_MS: '60000',
  })
}

/** A reply's JSON: the fields these tests read. */
type Reply = {
  id: string
  secret: string
  deliveries: { status: string; attempts: { attempt: number; status_code: number | null; error: string | null }[] }[]
  entries: { action: string }[]
}

function call(base: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: Reply }> {
  return callJson<Reply>(base, method, path, body)
}

t.test(
  'a delivery pending when the service stops is delivered by the next process, once per delivery id',
  async (t) => {
    const dataDir = t.testdir(files)
    let answering = false
    const hooks = await receiver(t, () => (answering ? 200 : 'hold'))

    const a = await serveOn(t, dataDir)
    for (const [alias, path] of [
      ['bank', 'bank.csv'],
      ['inv', 'inv.csv'],
    ])
      t.equal((await call(a.base, 'POST', '/api/sources', { alias, type: 'csv', path })).status, 201)
    const sub = (await call(a.base, 'POST', '/api/webhooks', { url: hooks.url, events: ['run.completed'] })).body
    const run = (await call(a.base, 'POST', '/api/runs', { recipe })).body
    // the run completes; its event goes out, and the receiver holds the request without answering
    await hooks.waitFor(1)
    const deliveryId = hooks.received[0].id
    t.equal(JSON.parse(hooks.received[0].body).data.run.id, run.id)

    // 1. a graceful stop: the attempt in flight is abandoned and logged, the process exits promptly
    const stopping = Date.now()
    a.child.kill('SIGTERM')
    t.same(await a.exited, { code: 0, signal: null })
    t.ok(Date.now() - stopping < 8000, `stopped in ${Date.now() - stopping} ms, not after the receiver's timeout`)

    // 2. the next process takes the delivery up at once, and is killed while the receiver holds it
    const b = await serveOn(t, dataDir)
    await hooks.waitFor(2)
    b.child.kill('SIGKILL')
    t.match(await b.exited, { signal: 'SIGKILL' })

    // 3. the receiver answers now: the third process delivers, with the same id, body and a valid signature
    answering = true
    const c = await serveOn(t, dataDir)
    await hooks.waitFor(3)
    const log = async () => (await call(c.base, 'GET', `/api/webhooks/${sub.id}/deliveries`)).body.deliveries
    const deadline = Date.now() + 30_000
    while ((await log())[0].status !== 'delivered' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    await new Promise((r) => setTimeout(r, 500))

    t.same(
      hooks.received.map((r) => r.id),
      [deliveryId, deliveryId, deliveryId],
      'one delivery id, sent by each of the three processes',
    )
    t.same(new Set(hooks.received.map((r) => r.body)).size, 1, 'the same body every time')
    for (const r of hooks.received)
      t.match(verifyDelivery({ secret: sub.secret, body: r.body, timestamp: r.timestamp, signature: r.signature }), {
        ok: true,
      })
    t.same([...hooks.processed.keys()], [deliveryId], 'deduplicated by its id, the receiver processed the event once')
    const [delivery] = await log()
    t.match(delivery, { id: deliveryId, event: 'run.completed', status: 'delivered' })
    // the first process logged its abandoned attempt; the killed one could not log its own
    t.same(
      delivery.attempts.map((x) => [x.attempt, x.status_code, x.error]),
      [
        [1, null, 'aborted: the service stopped'],
        [3, 200, null],
      ],
    )
    // the run's audit trail survived the three processes and still verifies
    t.match((await call(c.base, 'GET', '/api/audit/verify')).body, { ok: true, checked: 5 })
    t.same(
      (await call(c.base, 'GET', '/api/audit?order=asc')).body.entries.map((e) => e.action),
      ['source.created', 'source.created', 'webhook.created', 'run.started', 'run.completed'],
    )
  },
)

t.test('two instances on one PostgreSQL database share the outbox: every delivery is sent once', async (t) => {
  const pgdb = await testDatabase(t)
  if (pgdb.kind !== 'local') {
    t.skip('two instances need a PostgreSQL server: PGlite over the wire serves one session at a time', () => {})
    return
  }
  const url = new URL(pgdb.url)
  url.searchParams.set('options', `-c search_path=${pgdb.schema}`)
  const instances: FastifyInstance[] = []
  for (let i = 0; i < 2; i++) {
    const config = loadConfig({
      ...testEnv,
      DATA_DIR: t.testdir({}),
      DATABASE_URL: url.toString(),
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_POLL_MS: '10',
      WEBHOOK_CONCURRENCY: '8',
    })
    const app = await buildApp({ config, logger: false })
    t.teardown(() => app.close())
    await app.ready()
    instances.push(app)
  }
  // a receiver slow enough that both instances are busy at once
  const hooks = await receiver(t, () => 200)
  hooks.delayMs = 30
  const sub = (
    await instances[0].inject({
      method: 'POST',
      url: '/api/webhooks',
      payload: { url: hooks.url, events: ['exception.created'] },
    })
  ).json()
  const N = 60
  await instances[0].db.transaction().execute(async (tx) => {
    for (let i = 0; i < N; i++)
      await instances[0].webhooks.emit(tx, 'default', 'exception.created', { exception: { n: i } })
  })
  await hooks.waitFor(N)
  // let any duplicate arrive
  const deadline = Date.now() + 10_000
  for (;;) {
    const { rows } = await pgdb.query(`SELECT count(*)::int AS n FROM webhook_outbox WHERE status = 'delivered'`)
    if (rows[0].n === N || Date.now() > deadline) break
    await new Promise((r) => setTimeout(r, 50))
  }
  await new Promise((r) => setTimeout(r, 300))
  t.equal(hooks.received.length, N, 'no delivery was sent twice')
  t.equal(new Set(hooks.received.map((r) => r.id)).size, N)
  t.same(
    hooks.received.map((r) => JSON.parse(r.body).data.exception.n).sort((x, y) => x - y),
    Array.from({ length: N }, (_, i) => i),
  )
  const { rows } = await pgdb.query(
    'SELECT status, count(*)::int AS n, max(attempts)::int AS attempts FROM webhook_outbox WHERE webhook_id = $1 GROUP BY status',
    [sub.id],
  )
  t.same(rows, [{ status: 'delivered', n: N, attempts: 1 }])
})
