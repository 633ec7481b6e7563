// Webhooks against real receivers on loopback: signed deliveries of real runs' events, retries
// with backoff, dead deliveries, the delivery log, the transactional outbox (an event of a change
// that rolled back is never sent), refusal of private receivers at subscription and at delivery,
// and subscriptions' administration.

import { createHmac } from 'node:crypto'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import t from 'tap'
import { createConcordClient } from '../openapi/client/index.js'
import { freshDatabase, testApp } from './helpers/app.js'
import { receiver } from './helpers/receiver.js'
import { waitForRun } from './helpers/runs.js'
import { tinyFiles as files, tinyRecipe as recipe } from './helpers/tiny.js'
import { ReceiverGuard } from '../src/webhooks/guard.js'
import { verifyDelivery } from '../src/webhooks/signature.js'

const fast = { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_POLL_MS: '20' }

async function subscribe(app: FastifyInstance, url: string, events: string[], headers = {}) {
  const res = await app.inject({ method: 'POST', url: '/api/webhooks', payload: { url, events }, headers })
  if (res.statusCode !== 201) throw new Error(res.body)
  return res.json() as { id: string; secret: string; url: string; events: string[]; active: boolean }
}

async function deliveries(app: FastifyInstance, id: string) {
  return (await app.inject(`/api/webhooks/${id}/deliveries`)).json().deliveries as {
    id: string
    event: string
    status: string
    attempts: { attempt: number; status_code: number | null; error: string | null; duration_ms: number; at: string }[]
    next_attempt_at: string | null
  }[]
}

async function until<T>(what: string, get: () => Promise<T>, ok: (v: T) => boolean, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const v = await get()
    if (ok(v)) return v
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(v)}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

t.test("runs' outcomes are delivered signed, to the subscriptions that asked for them", async (t) => {
  const { app, dataDir } = await testApp(t, { files, env: fast })
  const hooks = await receiver(t)
  const completed = await subscribe(app, hooks.url, ['run.completed', 'run.failed'])
  const failuresOnly = await subscribe(app, `${hooks.url}?only=failed`, ['run.failed'])
  t.match(completed.secret, /^whsec_[\w-]{43}$/)
  t.not(completed.secret, failuresOnly.secret)
  // the secret is in the creation's reply only
  const listed = (await app.inject('/api/webhooks')).json().webhooks
  t.same(
    listed.map((w: { id: string; events: string[]; active: boolean }) => [w.id, w.events, w.active]),
    [
      [completed.id, ['run.completed', 'run.failed'], true],
      [failuresOnly.id, ['run.failed'], true],
    ],
  )
  t.notOk(JSON.stringify(listed).includes('whsec_'))
  t.notOk((await app.inject(`/api/webhooks/${completed.id}`)).body.includes('whsec_'))
  t.notOk((await app.inject('/api/audit')).body.includes('whsec_'), 'nor in the audit trail')

  for (const [alias, path] of [
    ['bank', 'bank.csv'],
    ['inv', 'inv.csv'],
  ])
    await app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type: 'csv', path } })
  const saved = (await app.inject({ method: 'POST', url: '/api/recipes', payload: recipe })).json()
  const started = (await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe_id: saved.id } })).json()
  const run = await waitForRun(app, started.id)
  t.equal(run.status, 'completed')
  await hooks.waitFor(1)

  const [got] = hooks.received
  t.equal(got.event, 'run.completed')
  t.same(
    verifyDelivery({ secret: completed.secret, body: got.body, timestamp: got.timestamp, signature: got.signature }),
    {
      ok: true,
    },
  )
  t.match(got.signature, /^v1=[0-9a-f]{64}$/)
  t.ok(Math.abs(Number(got.timestamp) - Date.now() / 1000) < 60, 'the timestamp is now, in Unix seconds')
  const body = JSON.parse(got.body)
  t.match(body, {
    id: got.id,
    event: 'run.completed',
    workspace: 'default',
    data: {
      run: {
        id: run.id,
        status: 'completed',
        recipe: { id: saved.id, name: 'r', version: 1 },
        mode: 'full',
        error: null,
        summary: {
          matches: 2,
          ambiguous: 0,
          match_rate: 1,
          left: {
            rows: 2,
            matched: 2,
            unmatched: 0,
            amount: '30.00',
            matched_amount: '30.00',
            unmatched_amount: '0.00',
          },
          right: { rows: 2, matched: 2, unmatched: 0, amount: '30.00' },
        },
      },
    },
  })
  // the headline is the run's own summary, as GET /api/runs/:id shows it
  t.same(body.data.run.summary.left, run.summary.left)
  t.same(body.data.run.summary.right, run.summary.right)
  // what a receiver refuses: another body, another secret, a replay older than five minutes
  const check = (over: Partial<Parameters<typeof verifyDelivery>[0]>) =>
    verifyDelivery({
      secret: completed.secret,
      body: got.body,
      timestamp: got.timestamp,
      signature: got.signature,
      ...over,
    })
  t.same(check({ body: got.body.replace('"matches":2', '"matches":3') }), {
    ok: false,
    reason: 'signature does not match',
  })
  t.same(check({ secret: failuresOnly.secret }), { ok: false, reason: 'signature does not match' })
  t.same(check({ nowSeconds: Number(got.timestamp) + 301 }), {
    ok: false,
    reason: 'timestamp outside the replay window',
  })
  t.same(check({ timestamp: String(Number(got.timestamp) - 400), nowSeconds: Number(got.timestamp) }), {
    ok: false,
    reason: 'timestamp outside the replay window',
  })

  // the README's receiver check, as written there, says the same
  const readme = await readFile(resolve(import.meta.dirname, '..', 'README.md'), 'utf8')
  const snippet = /<!-- webhook-verify -->\s*```js\n([\s\S]*?)```/.exec(readme)?.[1]
  t.ok(snippet, "the README's webhook-verify block")
  const module = join(dataDir, 'verify.mjs')
  await writeFile(module, snippet!)
  const { verifyConcord } = (await import(pathToFileURL(module).href)) as {
    verifyConcord: (secret: string, headers: Record<string, string>, body: string) => boolean
  }
  const headers = { 'x-concord-timestamp': got.timestamp, 'x-concord-signature': got.signature }
  t.equal(verifyConcord(completed.secret, headers, got.body), true)
  t.equal(verifyConcord(completed.secret, headers, got.body.replace('"matches":2', '"matches":3')), false)
  t.equal(verifyConcord(failuresOnly.secret, headers, got.body), false)
  const old = String(Number(got.timestamp) - 301)
  const resigned = `v1=${createHmac('sha256', completed.secret).update(`${old}.${got.body}`).digest('hex')}`
  t.equal(
    verifyConcord(completed.secret, { 'x-concord-timestamp': old, 'x-concord-signature': resigned }, got.body),
    false,
    'a correctly signed request older than five minutes is a replay',
  )

  const log = await until(
    'delivered',
    () => deliveries(app, completed.id),
    (d) => d[0]?.status === 'delivered',
  )
  t.match(log, [{ id: got.id, event: 'run.completed', status: 'delivered', next_attempt_at: null }])
  t.match(log[0].attempts, [{ attempt: 1, status_code: 200, error: null }])
  t.type(log[0].attempts[0].duration_ms, 'number')

  // a failed run: both subscriptions hear of it, each with its own delivery id and signature
  await rm(join(dataDir, 'inv.csv'))
  const failing = (await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe_id: saved.id } })).json()
  t.equal((await waitForRun(app, failing.id)).status, 'failed')
  await hooks.waitFor(3)
  const failed = hooks.received.slice(1)
  t.same(
    failed.map((r) => r.event),
    ['run.failed', 'run.failed'],
  )
  t.not(failed[0].id, failed[1].id)
  t.same(failed.map((r) => r.path).sort(), ['/hooks', '/hooks?only=failed'])
  for (const r of failed) {
    const secret = r.path.includes('only=failed') ? failuresOnly.secret : completed.secret
    t.match(verifyDelivery({ secret, body: r.body, timestamp: r.timestamp, signature: r.signature }), { ok: true })
    t.match(JSON.parse(r.body).data.run, {
      id: failing.id,
      status: 'failed',
      summary: null,
      error: { error: 'file_not_found' },
    })
  }
  t.equal((await deliveries(app, failuresOnly.id)).length, 1, 'the run.failed-only subscription got nothing else')
  await sleep(200)
  t.equal(hooks.received.length, 3, 'each delivery was sent once')
})

t.test('a receiver that fails twice then succeeds gets the delivery on the third attempt, backing off', async (t) => {
  const { app } = await testApp(t, { env: { ...fast, WEBHOOK_BACKOFF_MS: '300' } })
  const hooks = await receiver(t, (_r, n) => (n <= 2 ? 500 : 204))
  const sub = await subscribe(app, hooks.url, ['exception.created'])
  await app.webhooks.emit(app.db, 'default', 'exception.created', { exception: { id: 'e1' } })
  await hooks.waitFor(3)
  const [a, b, c] = hooks.received
  t.equal(new Set([a.id, b.id, c.id]).size, 1, 'one delivery id, three attempts')
  t.equal(a.body, c.body, 'every attempt sends the same body')
  // backoff: 300 ms then 600 ms, each with jitter between half and all of it
  t.ok(b.at - a.at >= 150, `second attempt ${b.at - a.at} ms after the first`)
  t.ok(c.at - b.at >= 300, `third attempt ${c.at - b.at} ms after the second`)
  for (const r of hooks.received)
    t.match(verifyDelivery({ secret: sub.secret, body: r.body, timestamp: r.timestamp, signature: r.signature }), {
      ok: true,
    })
  const [log] = await until(
    'delivered',
    () => deliveries(app, sub.id),
    (d) => d[0]?.status === 'delivered',
  )
  t.same(
    log.attempts.map((x) => [x.attempt, x.status_code, x.error]),
    [
      [1, 500, 'the receiver answered 500'],
      [2, 500, 'the receiver answered 500'],
      [3, 204, null],
    ],
  )
  t.same([...hooks.processed.keys()], [a.id])
})

t.test('a delivery that keeps failing is dead after the last attempt; a hung receiver times out', async (t) => {
  const { app } = await testApp(t, {
    env: { ...fast, WEBHOOK_BACKOFF_MS: '50', WEBHOOK_MAX_ATTEMPTS: '3', WEBHOOK_TIMEOUT_MS: '300' },
  })
  const down = await receiver(t, () => 503)
  const hung = await receiver(t, () => 'hold')
  const a = await subscribe(app, down.url, ['run.failed'])
  const b = await subscribe(app, hung.url, ['run.failed'])
  await app.webhooks.emit(app.db, 'default', 'run.failed', { run: { id: 'r1' } })
  const [deadA] = await until(
    'dead',
    () => deliveries(app, a.id),
    (d) => d[0]?.status === 'dead',
    60_000,
  )
  t.same(
    deadA.attempts.map((x) => [x.attempt, x.status_code, x.error]),
    [
      [1, 503, 'the receiver answered 503'],
      [2, 503, 'the receiver answered 503'],
      [3, 503, 'the receiver answered 503'],
    ],
  )
  const [deadB] = await until(
    'dead',
    () => deliveries(app, b.id),
    (d) => d[0]?.status === 'dead',
    60_000,
  )
  t.same(
    deadB.attempts.map((x) => [x.attempt, x.status_code, x.error]),
    [
      [1, null, 'no answer within 300 ms'],
      [2, null, 'no answer within 300 ms'],
      [3, null, 'no answer within 300 ms'],
    ],
  )
  for (const x of deadB.attempts) t.ok(x.duration_ms >= 290 && x.duration_ms < 5000, `${x.duration_ms} ms`)
  await sleep(300)
  t.equal(down.received.length, 3, 'nothing is sent after the last attempt')
  t.equal(hung.received.length, 3)
  t.same(
    (await app.inject(`/api/webhooks/${a.id}/deliveries?status=dead`)).json().total,
    1,
    'the log filters by status',
  )
})

t.test('closing the service does not wait for a receiver that does not answer', async (t) => {
  const database = await freshDatabase()
  const { app } = await testApp(t, { database, env: { ...fast, WEBHOOK_TIMEOUT_MS: '60000' } })
  const hung = await receiver(t, () => 'hold')
  const sub = await subscribe(app, hung.url, ['run.completed'])
  await app.webhooks.emit(app.db, 'default', 'run.completed', { run: { id: 'r1' } })
  await hung.waitFor(1)
  const began = Date.now()
  await app.close()
  t.ok(Date.now() - began < 3000, `closed in ${Date.now() - began} ms`)
  // the attempt cut short is logged, and the delivery is due again at once, for the next process
  const row = await database.db.selectFrom('webhook_outbox').selectAll().executeTakeFirstOrThrow()
  t.match(row, { status: 'pending', attempts: 1, lease_owner: null, last_error: 'aborted: the service stopped' })
  t.ok(new Date(row.next_attempt_at).getTime() <= Date.now())
  const attempts = await database.db.selectFrom('webhook_attempts').selectAll().execute()
  t.match(attempts, [{ delivery_id: hung.received[0].id, attempt: 1, webhook_id: sub.id, status_code: null }])
  await database.close()
})

t.test('an event emitted in a transaction that rolls back is never stored nor sent', async (t) => {
  const { app } = await testApp(t, { env: fast })
  const hooks = await receiver(t)
  await subscribe(app, hooks.url, ['exception.resolved'])
  await t.rejects(
    app.db.transaction().execute(async (tx) => {
      await app.webhooks.emit(tx, 'default', 'exception.resolved', { exception: { id: 'lost' } })
      throw new Error('the resolution failed')
    }),
  )
  await app.db
    .transaction()
    .execute((tx) => app.webhooks.emit(tx, 'default', 'exception.resolved', { exception: { id: 'kept' } }))
  await hooks.waitFor(1)
  await sleep(200)
  t.same(
    hooks.received.map((r) => JSON.parse(r.body).data.exception.id),
    ['kept'],
  )
  // events nobody subscribed to, or of another workspace, make no outbox rows
  await app.webhooks.emit(app.db, 'default', 'run.completed', {})
  await app.webhooks.emit(app.db, 'elsewhere', 'exception.resolved', {})
  t.equal((await app.db.selectFrom('webhook_outbox').select('id').execute()).length, 1)
})

t.test('receivers on private networks are refused unless configuration allows them', async (t) => {
  const guard = new ReceiverGuard({ allowPrivate: false, allowHosts: [] })
  for (const address of [
    '127.0.0.1',
    '10.1.2.3',
    '172.20.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '::1',
    'fe80::1',
    'fd00::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
  ])
    t.ok(guard.refusal('h', address), `${address} is refused`)
  for (const address of ['93.184.216.34', '8.8.8.8', '2606:4700::1111', '::ffff:8.8.8.8'])
    t.equal(guard.refusal('h', address), null, `${address} is allowed`)

  const { app } = await testApp(t, { env: { WEBHOOK_POLL_MS: '20' } })
  const hooks = await receiver(t)
  for (const url of [
    hooks.url,
    `http://localhost:${hooks.port}/`,
    `http://[::1]:${hooks.port}/`,
    'http://169.254.169.254/latest/meta-data',
  ]) {
    const res = await app.inject({ method: 'POST', url: '/api/webhooks', payload: { url, events: ['run.completed'] } })
    t.equal(res.statusCode, 400, url)
    t.match(res.json(), {
      error: 'webhook_url_refused',
      message:
        /receivers on private networks are refused: .*(resolves to .*, a|is a) private, loopback or link-local address/,
      suggestion: /WEBHOOK_ALLOW_HOSTS/,
    })
  }
  for (const [url, error] of [
    ['ftp://example.com/x', 'invalid_webhook_url'],
    ['not a url', 'invalid_webhook_url'],
    ['https://user:pw@example.com/', 'invalid_webhook_url'],
    ['https://no-such-host.invalid/', 'webhook_host_unresolvable'],
  ]) {
    const res = await app.inject({ method: 'POST', url: '/api/webhooks', payload: { url, events: ['run.completed'] } })
    t.match([res.statusCode, res.json().error], [400, error], url)
  }
  t.same((await app.inject('/api/webhooks')).json().webhooks, [], 'nothing was stored')

  // allowed by address (a CIDR) or by name: these receivers may subscribe
  const database = await freshDatabase()
  const allowed = await testApp(t, {
    database,
    env: { WEBHOOK_POLL_MS: '20', WEBHOOK_ALLOW_HOSTS: '127.0.0.0/8, Localhost' },
  })
  const byAddress = await subscribe(allowed.app, hooks.url, ['run.completed'])
  t.equal(byAddress.url, hooks.url)
  const named = await subscribe(allowed.app, `http://localhost:${hooks.port}/by-name`, ['run.completed'])
  await allowed.app.close()

  // the same database served without the allowance: at delivery the receivers are refused,
  // by the address a name resolves to when it is dialled (DNS rebinding), and by an address literal
  const strict = await testApp(t, { database, env: { WEBHOOK_POLL_MS: '20', WEBHOOK_BACKOFF_MS: '100000' } })
  await strict.app.webhooks.emit(strict.app.db, 'default', 'run.completed', { run: { id: 'r1' } })
  const [literal] = await until(
    'tried',
    () => deliveries(strict.app, byAddress.id),
    (d) => d[0]?.attempts.length === 1,
  )
  t.match(literal.attempts[0], { status_code: null, error: /^refused: 127\.0\.0\.1 is a private, loopback/ })
  const [byLookup] = await until(
    'tried',
    () => deliveries(strict.app, named.id),
    (d) => d[0]?.attempts.length === 1,
  )
  t.match(byLookup.attempts[0], {
    status_code: null,
    error: /^refused: localhost resolves to (127\.0\.0\.1|::1), a private/,
  })
  t.equal(hooks.received.length, 0, 'the receiver never got a request')
  await strict.app.close()
  await database.close()
})

t.test('subscriptions: change, pause, delete; admins only; each workspace its own', async (t) => {
  const ROOT = 'root-key-for-webhook-tests-01'
  const { app } = await testApp(t, { env: { ...fast, CONCORD_ADMIN_KEY: ROOT } })
  const hooks = await receiver(t)
  const as = (key: string) => ({ authorization: `Bearer ${key}` })
  const operator = (
    await app.inject({ method: 'POST', url: '/api/keys', payload: { name: 'op', role: 'operator' }, headers: as(ROOT) })
  ).json().key
  t.equal(
    (
      await app.inject({
        method: 'POST',
        url: '/api/webhooks',
        payload: { url: hooks.url, events: ['run.completed'] },
        headers: as(operator),
      })
    ).statusCode,
    403,
  )
  t.equal((await app.inject({ url: '/api/webhooks', headers: as(operator) })).statusCode, 403)
  const bad = await app.inject({
    method: 'POST',
    url: '/api/webhooks',
    payload: { url: hooks.url, events: ['run.started'] },
    headers: as(ROOT),
  })
  t.match(
    [bad.statusCode, bad.json().error, bad.json().message],
    [400, 'invalid_request', /must be one of: run.completed, run.failed, exception.created, exception.resolved/],
  )
  const none = await app.inject({
    method: 'POST',
    url: '/api/webhooks',
    payload: { url: hooks.url, events: [] },
    headers: as(ROOT),
  })
  t.equal(none.statusCode, 400)

  const sub = await subscribe(app, hooks.url, ['run.completed', 'run.completed'], as(ROOT))
  t.same(sub.events, ['run.completed'], 'an event named twice is kept once')
  const paused = await app.inject({
    method: 'PATCH',
    url: `/api/webhooks/${sub.id}`,
    payload: { active: false, events: ['run.completed', 'exception.created'] },
    headers: as(ROOT),
  })
  t.match(paused.json(), { active: false, events: ['run.completed', 'exception.created'] })
  // a paused subscription gets no new events
  await app.webhooks.emit(app.db, 'default', 'run.completed', { n: 1 })
  t.equal((await app.db.selectFrom('webhook_outbox').select('id').execute()).length, 0)
  // a delivery queued before the pause waits for it to end
  await app.inject({ method: 'PATCH', url: `/api/webhooks/${sub.id}`, payload: { active: true }, headers: as(ROOT) })
  await app.db.transaction().execute(async (tx) => {
    await app.webhooks.emit(tx, 'default', 'exception.created', { n: 2 })
    await tx.updateTable('webhooks').set({ active: false }).where('id', '=', sub.id).execute()
  })
  await sleep(300)
  t.equal(hooks.received.length, 0, 'held while paused')
  await app.inject({ method: 'PATCH', url: `/api/webhooks/${sub.id}`, payload: { active: true }, headers: as(ROOT) })
  await hooks.waitFor(1)
  t.equal(JSON.parse(hooks.received[0].body).data.n, 2)

  const moved = await app.inject({
    method: 'PATCH',
    url: `/api/webhooks/${sub.id}`,
    payload: { url: 'http://10.0.0.1/x' },
    headers: as(ROOT),
  })
  t.equal(moved.statusCode, 200, 'allowed: WEBHOOK_ALLOW_PRIVATE is on in this test')
  t.equal(
    (await app.inject({ method: 'PATCH', url: `/api/webhooks/${sub.id}`, payload: {}, headers: as(ROOT) })).statusCode,
    400,
  )

  // another workspace sees none of it
  const acme = (
    await app.inject({ method: 'POST', url: '/api/workspaces', payload: { name: 'acme' }, headers: as(ROOT) })
  ).json()
  t.same((await app.inject({ url: '/api/webhooks', headers: as(acme.admin_key) })).json().webhooks, [])
  for (const [method, url] of [
    ['GET', `/api/webhooks/${sub.id}`],
    ['PATCH', `/api/webhooks/${sub.id}`],
    ['DELETE', `/api/webhooks/${sub.id}`],
    ['GET', `/api/webhooks/${sub.id}/deliveries`],
  ] as const) {
    const res = await app.inject({
      method,
      url,
      headers: as(acme.admin_key),
      ...(method === 'PATCH' ? { payload: { active: false } } : {}),
    })
    t.match([res.statusCode, res.json().error], [404, 'webhook_not_found'], `${method} ${url}`)
  }

  t.equal((await app.inject({ method: 'DELETE', url: `/api/webhooks/${sub.id}`, headers: as(ROOT) })).statusCode, 204)
  t.equal((await app.inject({ url: `/api/webhooks/${sub.id}`, headers: as(ROOT) })).statusCode, 404)
  t.equal((await app.db.selectFrom('webhook_outbox').select('id').execute()).length, 0, 'its deliveries went with it')
  const audit = (await app.inject({ url: '/api/audit?entity_type=webhook&order=asc', headers: as(ROOT) })).json()
    .entries
  t.same(
    audit.map((e: { action: string; before: { active?: boolean } | null; after: { active?: boolean } | null }) => [
      e.action,
      e.before?.active ?? null,
      e.after?.active ?? null,
    ]),
    [
      ['webhook.created', null, true],
      ['webhook.updated', true, false],
      ['webhook.updated', false, true],
      // the pause inside the transaction above went around the service (and its audit)
      ['webhook.updated', false, true],
      ['webhook.updated', true, true],
      ['webhook.deleted', true, null],
    ],
  )
})

t.test('the typed client covers webhooks and the audit trail', async (t) => {
  const { app } = await testApp(t, { env: fast })
  const hooks = await receiver(t)
  const concord = createConcordClient(await app.listen({ port: 0, host: '127.0.0.1' }))
  const created = await concord.POST('/api/webhooks', { body: { url: hooks.url, events: ['run.completed'] } })
  t.equal(created.response.status, 201)
  const id = created.data!.id
  t.match(created.data?.secret, /^whsec_/)
  t.same(
    (await concord.GET('/api/webhooks')).data?.webhooks.map((w) => w.id),
    [id],
  )
  const paused = await concord.PATCH('/api/webhooks/{id}', { params: { path: { id } }, body: { active: false } })
  t.equal(paused.data?.active, false)
  await app.webhooks.emit(app.db, 'default', 'run.completed', {})
  const log = await concord.GET('/api/webhooks/{id}/deliveries', { params: { path: { id } } })
  t.same(log.data?.deliveries, [], 'paused: nothing queued')
  const second = await concord.POST('/api/webhooks', { body: { url: hooks.url, events: ['run.failed'] } })
  t.equal(second.response.status, 201, 'a loopback receiver: WEBHOOK_ALLOW_PRIVATE is on here')
  const audit = await concord.GET('/api/audit', { params: { query: { entity_type: 'webhook', order: 'asc' } } })
  t.same(
    audit.data?.entries.map((e) => e.action),
    ['webhook.created', 'webhook.updated', 'webhook.created'],
  )
  const verified = await concord.GET('/api/audit/verify')
  t.match(verified.data, { ok: true, checked: 3 })
  t.equal((await concord.DELETE('/api/webhooks/{id}', { params: { path: { id } } })).response.status, 204)
  const gone = await concord.GET('/api/webhooks/{id}', { params: { path: { id } } })
  t.equal(gone.error?.error, 'webhook_not_found')
})

t.test('secrets are sealed at rest; a bulk emit queues each event; finished deliveries are pruned', async (t) => {
  const { app } = await testApp(t, {
    env: { ...fast, CONCORD_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'), WEBHOOK_RETENTION_DAYS: '7' },
  })
  const hooks = await receiver(t)
  const a = await subscribe(app, hooks.url, ['exception.created'])
  const b = await subscribe(app, `${hooks.url}?b`, ['exception.created', 'exception.resolved'])
  const stored = await app.db.selectFrom('webhooks').select(['id', 'secret']).orderBy('created_at').execute()
  for (const row of stored) {
    t.match(row.secret, /^v1\./, 'sealed with CONCORD_SECRET_KEY')
    t.notOk(row.secret.includes('whsec_'))
  }
  await app.webhooks.emitMany(
    app.db,
    'default',
    'exception.created',
    Array.from({ length: 5 }, (_, i) => ({ exception: { n: i } })),
  )
  await hooks.waitFor(10)
  // each receiver checks with the secret it was shown: the dispatcher unsealed it to sign
  for (const r of hooks.received) {
    const secret = r.path.endsWith('?b') ? b.secret : a.secret
    t.match(verifyDelivery({ secret, body: r.body, timestamp: r.timestamp, signature: r.signature }), { ok: true })
  }
  t.same(
    hooks.received
      .filter((r) => r.path.endsWith('?b'))
      .map((r) => JSON.parse(r.body).data.exception.n)
      .sort(),
    [0, 1, 2, 3, 4],
  )
  await until(
    'delivered',
    async () =>
      (await app.db.selectFrom('webhook_outbox').select('status').where('status', '=', 'delivered').execute()).length,
    (n) => n === 10,
  )
  // two delivered long ago, one dead long ago, one pending since long ago: only the finished old ones go
  const ids = (await app.db.selectFrom('webhook_outbox').select('id').orderBy('id').execute()).map((r) => r.id)
  await app.db
    .updateTable('webhook_outbox')
    .set({ finished_at: sql`now() - interval '8 days'` })
    .where('id', 'in', ids.slice(0, 3))
    .execute()
  await app.db.updateTable('webhook_outbox').set({ status: 'dead' }).where('id', '=', ids[2]).execute()
  await app.db
    .updateTable('webhook_outbox')
    .set({ status: 'pending', finished_at: null, next_attempt_at: sql`now() + interval '1 day'` })
    .where('id', '=', ids[3])
    .execute()
  t.equal(await app.webhooks.dispatcher.prune(), 3)
  const left = (await app.db.selectFrom('webhook_outbox').select('id').orderBy('id').execute()).map((r) => r.id)
  t.same(left, ids.slice(3))
  t.equal(
    (
      await app.db
        .selectFrom('webhook_attempts')
        .select('delivery_id')
        .where('delivery_id', 'in', ids.slice(0, 3))
        .execute()
    ).length,
    0,
    'their attempts went with them',
  )
})
