// The audit trail: every change through the API is one row with who, what, before and after, in
// the change's transaction; the rows form one hash chain per workspace that verification walks;
// a row changed or deleted behind the service's back is named by its seq; parallel requests on
// PostgreSQL still leave one unbroken chain.

import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import t, { type Test } from 'tap'
import { buildApp } from '../src/app.js'
import { canonicalJson, GENESIS, rowHash } from '../src/audit/chain.js'
import { loadConfig } from '../src/config.js'
import { testApp, testEnv } from './helpers/app.js'
import { testDatabase } from './helpers/pg.js'
import { waitForProgress } from './helpers/runs.js'
import { tinyFiles as files, tinyRecipe as recipe } from './helpers/tiny.js'

const ROOT = 'root-key-for-audit-tests-0123'

type Entry = {
  seq: number
  at: string
  actor: string
  action: string
  entity: { type: string; id: string }
  before: Record<string, unknown> | null
  after: Record<string, unknown> | null
  request_id: string | null
  prev_hash: string
  hash: string
}

function caller(app: FastifyInstance, key: string) {
  return async (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown) => {
    const res = await app.inject({
      method,
      url,
      payload: payload as object,
      headers: { authorization: `Bearer ${key}` },
    })
    return { status: res.statusCode, body: res.body ? res.json() : null, requestId: res.headers['x-request-id'] }
  }
}

/** Polls a run (with a key) until it is finished. */
async function settled(call: ReturnType<typeof caller>, id: string) {
  for (let i = 0; i < 2400; i++) {
    const run = (await call('GET', `/api/runs/${id}`)).body
    if (['completed', 'failed', 'cancelled', 'interrupted'].includes(run.status)) return run
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`run ${id} did not finish`)
}

async function trail(call: ReturnType<typeof caller>, query = 'order=asc&limit=1000'): Promise<Entry[]> {
  const res = await call('GET', `/api/audit?${query}`)
  if (res.status !== 200) throw new Error(JSON.stringify(res.body))
  return res.body.entries
}

t.test('canonical JSON: the same value gives the same text whatever its key order', async (t) => {
  t.equal(
    canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } }),
    '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
  )
  t.equal(
    canonicalJson({ a: { c: null, d: [3, { y: 2, z: 1 }] }, b: 1 }),
    canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } }),
  )
  t.equal(
    canonicalJson({ at: new Date('2025-01-02T03:04:05.006Z'), gone: undefined }),
    '{"at":"2025-01-02T03:04:05.006Z"}',
  )
  // U+0000 is escaped: the text fits a PostgreSQL text column
  t.equal(canonicalJson({ s: 'a\u0000b' }), '{"s":"a\\u0000b"}')
  const row = {
    workspace_id: 'w',
    seq: 1,
    at: '2025-01-02T03:04:05.006Z',
    actor: 'system',
    action: 'run.completed',
    entity_type: 'run',
    entity_id: 'r1',
    before: null,
    after: '{"a":1}',
    request_id: null,
    prev_hash: GENESIS,
  }
  t.match(rowHash(row), /^[0-9a-f]{64}$/)
  t.not(rowHash(row), rowHash({ ...row, after: '{"a":2}' }), 'the hash covers the snapshot')
  t.not(rowHash(row), rowHash({ ...row, prev_hash: '1'.repeat(64) }), 'and the link')
  // the fields are framed: moving text from one field to the next changes the hash
  t.not(rowHash({ ...row, actor: 'ab', action: 'c' }), rowHash({ ...row, actor: 'a', action: 'bc' }))
})

t.test('every change is an audit row: who, what, before and after, in order, and the chain verifies', async (t) => {
  const { app } = await testApp(t, { files, env: { CONCORD_ADMIN_KEY: ROOT } })
  const root = caller(app, ROOT)
  const adminKey = await root('POST', '/api/keys', { name: 'ops admin', role: 'admin' })
  t.equal(adminKey.status, 201)
  const admin = caller(app, adminKey.body.key)
  const actor = `key:${adminKey.body.id}`
  const viewerKey = (await root('POST', '/api/keys', { name: 'viewer', role: 'viewer' })).body
  const operatorKey = (await root('POST', '/api/keys', { name: 'operator', role: 'operator' })).body

  const registered = await admin('POST', '/api/sources', { alias: 'bank', type: 'csv', path: 'bank.csv' })
  t.equal(registered.status, 201)
  t.equal((await admin('POST', '/api/sources', { alias: 'inv', type: 'csv', path: 'inv.csv' })).status, 201)
  const saved = (await admin('POST', '/api/recipes', recipe)).body
  const updated = await admin('PUT', `/api/recipes/${saved.id}`, { ...recipe, name: 'r-v2' })
  t.equal(updated.status, 200)
  const started = await admin('POST', '/api/runs', { recipe_id: saved.id })
  t.equal(started.status, 202)
  const run = await settled(admin, started.body.id)
  t.equal(run.status, 'completed')
  const retried = await admin('POST', `/api/runs/${run.id}/retry`)
  t.equal(retried.status, 202)
  t.equal((await settled(admin, retried.body.id)).status, 'completed')
  t.equal((await admin('DELETE', `/api/runs/${run.id}`)).status, 204)
  t.equal((await admin('DELETE', `/api/recipes/${saved.id}`)).status, 204)
  t.equal((await admin('DELETE', '/api/sources/inv')).status, 204)
  t.equal((await admin('DELETE', `/api/keys/${operatorKey.id}`)).status, 200)

  // refusals change nothing, so they leave no row
  t.equal((await admin('POST', '/api/sources', { alias: 'bank', type: 'csv', path: 'bank.csv' })).status, 409)
  t.equal((await admin('PUT', `/api/recipes/${saved.id}`, recipe)).status, 404)

  const entries = await trail(admin)
  t.same(
    entries.map((e) => [e.seq, e.action, e.actor, e.entity.type]),
    [
      [1, 'key.created', 'bootstrap', 'key'],
      [2, 'key.created', 'bootstrap', 'key'],
      [3, 'key.created', 'bootstrap', 'key'],
      [4, 'source.created', actor, 'source'],
      [5, 'source.created', actor, 'source'],
      [6, 'recipe.created', actor, 'recipe'],
      [7, 'recipe.updated', actor, 'recipe'],
      [8, 'run.started', actor, 'run'],
      [9, 'run.completed', 'system', 'run'],
      [10, 'run.retried', actor, 'run'],
      [11, 'run.completed', 'system', 'run'],
      [12, 'run.deleted', actor, 'run'],
      [13, 'recipe.deleted', actor, 'recipe'],
      [14, 'source.deleted', actor, 'source'],
      [15, 'key.revoked', actor, 'key'],
    ],
  )
  const by = (action: string, n = 0) => entries.filter((e) => e.action === action)[n]
  // before and after: absent on creation, both on an update, only before on a deletion
  t.match(by('source.created'), {
    entity: { id: 'bank' },
    before: null,
    after: { alias: 'bank', type: 'csv', columns: [{ name: 'txn_id' }, { name: 'ref' }, { name: 'amount' }] },
    request_id: registered.requestId,
  })
  t.match(by('recipe.updated'), {
    entity: { id: saved.id },
    before: { version: 1, name: 'r', recipe: { name: 'r', version: 1 } },
    after: { version: 2, name: 'r-v2', recipe: { name: 'r-v2', version: 2 } },
    request_id: updated.requestId,
  })
  t.match(by('run.started'), {
    entity: { id: run.id },
    before: null,
    after: { status: 'queued', recipe: { id: saved.id, version: 2, name: 'r-v2' } },
  })
  t.match(by('run.completed'), {
    entity: { id: run.id },
    before: { status: 'running' },
    after: {
      status: 'completed',
      summary: { matches: 2, left: { rows: 2, matched: 2, amount: '30.00' }, right: { rows: 2, amount: '30.00' } },
    },
    request_id: null,
  })
  t.match(by('run.retried'), { entity: { id: retried.body.id }, after: { status: 'queued', retry_of: run.id } })
  t.match(by('run.deleted'), { entity: { id: run.id }, before: { status: 'completed' }, after: null })
  t.match(by('source.deleted'), { entity: { id: 'inv' }, before: { alias: 'inv' }, after: null })
  t.match(by('key.revoked'), { before: { revoked_at: null, name: 'operator' }, after: { name: 'operator' } })
  t.type(by('key.revoked').after!.revoked_at, 'string')
  // key snapshots hold the prefix, never the secret
  const text = JSON.stringify(entries)
  for (const k of [adminKey.body.key, viewerKey.key, operatorKey.key])
    t.notOk(text.includes(k), 'no key secret in the trail')
  // the times are ISO text in seq order, each row linked to the one before
  for (let i = 0; i < entries.length; i++) {
    t.match(entries[i].at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    t.equal(entries[i].prev_hash, i === 0 ? GENESIS : entries[i - 1].hash)
    if (i) t.ok(entries[i].at >= entries[i - 1].at)
  }

  t.same((await admin('GET', '/api/audit/verify')).body, {
    ok: true,
    checked: 15,
    head: { seq: 15, hash: entries[14].hash },
  })

  // filters and paging
  t.same(
    (await trail(admin, `entity_type=run&entity_id=${run.id}&order=asc`)).map((e) => e.action),
    ['run.started', 'run.completed', 'run.deleted'],
  )
  t.same(
    (await trail(admin, 'actor=system')).map((e) => e.seq),
    [11, 9],
  )
  t.same(
    (await trail(admin, 'action=key.created&order=asc')).map((e) => e.seq),
    [1, 2, 3],
  )
  const first = (await admin('GET', '/api/audit?limit=4')).body
  t.same(
    first.entries.map((e: Entry) => e.seq),
    [15, 14, 13, 12],
  )
  t.equal(first.next_cursor, 12)
  const second = (await admin('GET', `/api/audit?limit=4&cursor=${first.next_cursor}`)).body
  t.same(
    second.entries.map((e: Entry) => e.seq),
    [11, 10, 9, 8],
  )
  const last = (await admin('GET', '/api/audit?limit=10&order=asc&cursor=10')).body
  t.same([last.entries.map((e: Entry) => e.seq), last.next_cursor], [[11, 12, 13, 14, 15], null])
  t.same(await trail(admin, `from=${encodeURIComponent(entries[14].at)}`), [entries[14]])
  t.equal((await trail(admin, `to=${encodeURIComponent(entries[0].at)}`)).length, 0)
  t.equal((await trail(admin, 'from=2000-01-01&to=2999-01-01')).length, 15)
  const bad = await admin('GET', '/api/audit?from=yesterday')
  t.equal(bad.status, 400)
  t.equal(bad.body.error, 'invalid_time')

  // reading the trail is an admin's
  t.equal((await caller(app, viewerKey.key)('GET', '/api/audit')).status, 403)
  t.equal((await caller(app, viewerKey.key)('GET', '/api/audit/verify')).status, 403)

  // a new workspace's chain starts with its own creation, apart from the default one's
  const created = await root('POST', '/api/workspaces', { name: 'acme' })
  t.equal(created.status, 201)
  const acme = caller(app, created.body.admin_key)
  const acmeKey = (await acme('GET', '/api/keys')).body.keys[0]
  t.same(
    (await trail(acme)).map((e) => [e.seq, e.action, e.actor, e.entity]),
    [
      [1, 'workspace.created', 'bootstrap', { type: 'workspace', id: 'acme' }],
      [2, 'key.created', 'bootstrap', { type: 'key', id: acmeKey.id }],
    ],
  )
  t.equal((await trail(admin)).length, 15, "the default workspace's chain did not move")
})

t.test('a cancel is recorded with who cancelled, whether the run was queued or running', async (t) => {
  const { app, dataDir } = await testApp(t, { env: { RUN_CONCURRENCY: '1' } })
  const l = ['id,ref,amount']
  const r = ['id,ref,amount']
  for (let i = 0; i < 200_000; i++) {
    l.push(`L${i},R${i},${i % 1000}.25`)
    r.push(`M${i},R${i},${i % 1000}.25`)
  }
  await writeFile(join(dataDir, 'l.csv'), `${l.join('\n')}\n`)
  await writeFile(join(dataDir, 'r.csv'), `${r.join('\n')}\n`)
  for (const side of ['l', 'r'])
    t.equal(
      (
        await app.inject({
          method: 'POST',
          url: '/api/sources',
          payload: { alias: side, type: 'csv', path: `${side}.csv` },
        })
      ).statusCode,
      201,
    )
  const big = {
    name: 'big',
    left: { source: 'l', key: ['id'] },
    right: { source: 'r', key: ['id'] },
    passes: [{ name: 'p', pattern: '1:1', when: 'l.ref = r.ref AND l.amount = r.amount' }],
  }
  const running = (await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe: big } })).json().id
  // one run at a time: the second waits in the queue behind the first
  const queued = (await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe: big } })).json().id
  t.equal((await waitForProgress(app, running, (p) => p.rows_loaded.left !== null)).status, 'running')
  const headers = { 'x-request-id': 'cancel-queued' }
  t.match((await app.inject({ method: 'POST', url: `/api/runs/${queued}/cancel`, headers })).json(), {
    status: 'cancelled',
  })
  t.match(
    (
      await app.inject({
        method: 'POST',
        url: `/api/runs/${running}/cancel`,
        headers: { 'x-request-id': 'cancel-running' },
      })
    ).json(),
    { status: 'cancelled' },
  )
  const entries = (await app.inject('/api/audit?entity_type=run&order=asc')).json().entries as Entry[]
  t.same(
    entries.map((e) => [e.action, e.entity.id, e.actor, e.request_id, e.before?.status ?? null, e.after?.status]),
    [
      ['run.started', running, 'open', entries[0].request_id, null, 'queued'],
      ['run.started', queued, 'open', entries[1].request_id, null, 'queued'],
      ['run.cancelled', queued, 'open', 'cancel-queued', 'queued', 'cancelled'],
      ['run.cancelled', running, 'open', 'cancel-running', 'running', 'cancelled'],
    ],
  )
})

t.test('open mode is its own actor', async (t) => {
  const { app } = await testApp(t, { files })
  const res = await app.inject({
    method: 'POST',
    url: '/api/sources',
    payload: { alias: 'bank', type: 'csv', path: 'bank.csv' },
  })
  t.equal(res.statusCode, 201)
  const entries = (await app.inject('/api/audit')).json().entries
  t.match(entries, [{ action: 'source.created', actor: 'open' }])
})

t.test('a change that rolls back leaves no audit row, and the chain head does not move', async (t) => {
  const { app } = await testApp(t)
  const entry = {
    workspace: 'default',
    actor: 'system',
    action: 'run.started',
    entity: { type: 'run' as const, id: 'x' },
  }
  await app.audit.record(app.db, entry)
  await t.rejects(
    app.db.transaction().execute(async (tx) => {
      await app.audit.record(tx, { ...entry, entity: { type: 'run', id: 'y' } })
      throw new Error('the change failed')
    }),
    /the change failed/,
  )
  await app.audit.record(app.db, { ...entry, entity: { type: 'run', id: 'z' } })
  const rows = (await app.inject('/api/audit?order=asc')).json().entries
  t.same(
    rows.map((e: Entry) => [e.seq, e.entity.id]),
    [
      [1, 'x'],
      [2, 'z'],
    ],
  )
  t.match((await app.inject('/api/audit/verify')).json(), { ok: true, checked: 2 })
})

/** n changes in the default workspace: sources registered and deleted. */
async function changes(app: FastifyInstance, n: number) {
  for (let i = 0; i < n; i++) {
    const res = await app.inject({
      method: 'POST',
      url: '/api/sources',
      payload: { alias: `s${i}`, type: 'csv', path: 'bank.csv' },
    })
    if (res.statusCode !== 201) throw new Error(res.body)
  }
}

t.test('verification names the row that was changed, deleted or cut off', async (t) => {
  const { app } = await testApp(t, { files })
  await changes(app, 6)
  t.match((await app.inject('/api/audit/verify')).json(), { ok: true, checked: 6 })

  // the table refuses changes outright: an UPDATE or DELETE needs the trigger disabled first
  await t.rejects(sql`UPDATE audit_log SET actor = 'key:someone-else' WHERE seq = 3`.execute(app.db), /append-only/)
  await t.rejects(sql`DELETE FROM audit_log WHERE seq = 3`.execute(app.db), /append-only/)
  await sql`ALTER TABLE audit_log DISABLE TRIGGER USER`.execute(app.db)

  const original = (await sql<{ actor: string }>`SELECT actor FROM audit_log WHERE seq = 3`.execute(app.db)).rows[0]
  await sql`UPDATE audit_log SET actor = 'key:someone-else' WHERE seq = 3`.execute(app.db)
  t.same((await app.inject('/api/audit/verify')).json(), {
    ok: false,
    checked: 2,
    head: { seq: 6, hash: (await app.inject('/api/audit?limit=1')).json().entries[0].hash },
    first_broken: { seq: 3, reason: 'its content does not match its hash: the row was changed after it was written' },
  })
  // the snapshot is covered too
  await sql`UPDATE audit_log SET actor = ${original.actor} WHERE seq = 3`.execute(app.db)
  t.match((await app.inject('/api/audit/verify')).json(), { ok: true, checked: 6 })
  await sql`UPDATE audit_log SET after = replace(after, '"bank.csv"', '"other.csv"') WHERE seq = 4`.execute(app.db)
  t.match((await app.inject('/api/audit/verify')).json(), { ok: false, first_broken: { seq: 4 } })
  await sql`UPDATE audit_log SET after = replace(after, '"other.csv"', '"bank.csv"') WHERE seq = 4`.execute(app.db)

  // a deleted row: the chain jumps
  await sql`DELETE FROM audit_log WHERE seq = 5`.execute(app.db)
  t.match((await app.inject('/api/audit/verify')).json(), {
    ok: false,
    checked: 4,
    first_broken: { seq: 5, reason: /row 5 is missing: the chain goes from 4 to 6/ },
  })

  // a rewritten row with its hash recomputed still breaks the next row's link
  const { app: other } = await testApp(t, { files })
  await changes(other, 4)
  await sql`ALTER TABLE audit_log DISABLE TRIGGER USER`.execute(other.db)
  const row2 = (await sql<Record<string, unknown>>`SELECT * FROM audit_log WHERE seq = 2`.execute(other.db)).rows[0]
  const forged = { ...row2, actor: 'key:someone-else' } as Parameters<typeof rowHash>[0]
  await sql`UPDATE audit_log SET actor = 'key:someone-else', hash = ${rowHash(forged)} WHERE seq = 2`.execute(other.db)
  t.match((await other.inject('/api/audit/verify')).json(), {
    ok: false,
    checked: 2,
    first_broken: { seq: 3, reason: /prev_hash does not match the hash of row 2/ },
  })

  // the last rows cut off: the head still says where the chain ended
  const { app: third } = await testApp(t, { files })
  await changes(third, 3)
  await sql`ALTER TABLE audit_log DISABLE TRIGGER USER`.execute(third.db)
  await sql`DELETE FROM audit_log WHERE seq = 3`.execute(third.db)
  t.match((await third.inject('/api/audit/verify')).json(), {
    ok: false,
    checked: 2,
    first_broken: { seq: 3, reason: /row 3 is missing: the head says the chain ends at 3/ },
  })
})

async function pgApp(t: Test, dataDir: string) {
  const pgdb = await testDatabase(t)
  const url = new URL(pgdb.url)
  url.searchParams.set('options', `-c search_path=${pgdb.schema}`)
  const config = loadConfig({ ...testEnv, DATA_DIR: dataDir, DATABASE_URL: url.toString() })
  const app = await buildApp({ config, logger: false })
  t.teardown(() => app.close())
  await app.ready()
  return { app, pgdb }
}

t.test('parallel requests on PostgreSQL append one unbroken chain', async (t) => {
  const { app, pgdb } = await pgApp(t, t.testdir(files))
  // 40 registrations at once: each appends in its own transaction, queued on the chain's head
  const replies = await Promise.all(
    Array.from({ length: 40 }, (_, i) =>
      app.inject({ method: 'POST', url: '/api/sources', payload: { alias: `s${i}`, type: 'csv', path: 'bank.csv' } }),
    ),
  )
  t.same(
    replies.map((r) => r.statusCode),
    Array(40).fill(201),
  )
  // and straight through the service, into two workspaces at once, one of them a new chain
  await app.keys.createWorkspace('acme')
  await Promise.all(
    Array.from({ length: 60 }, (_, i) =>
      app.audit.record(app.db, {
        workspace: i % 2 ? 'default' : 'acme',
        actor: 'system',
        action: 'run.started',
        entity: { type: 'run', id: `r${i}` },
        after: { i },
      }),
    ),
  )
  const seqs = await pgdb.query(
    'SELECT workspace_id, count(*)::int AS n, min(seq)::int AS lo, max(seq)::int AS hi FROM audit_log GROUP BY workspace_id ORDER BY workspace_id',
  )
  t.same(seqs.rows, [
    { workspace_id: 'acme', n: 31, lo: 1, hi: 31 },
    { workspace_id: 'default', n: 70, lo: 1, hi: 70 },
  ])
  t.same((await app.inject('/api/audit/verify')).json(), {
    ok: true,
    checked: 70,
    head: { seq: 70, hash: (await app.inject('/api/audit?limit=1')).json().entries[0].hash },
  })
  t.match(await app.audit.verify('acme'), { ok: true, checked: 31 })
  // the times stored in PostgreSQL are the ones hashed: a tampered time is caught there too
  await pgdb.query('ALTER TABLE audit_log DISABLE TRIGGER USER')
  await pgdb.query(
    `UPDATE audit_log SET at = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') WHERE workspace_id = 'default' AND seq = 17`,
  )
  t.match((await app.inject('/api/audit/verify')).json(), { ok: false, checked: 16, first_broken: { seq: 17 } })
})

t.test('a bulk append links every row, across workspaces and batches', async (t) => {
  const { app } = await testApp(t)
  await app.keys.createWorkspace('acme')
  const entry = (ws: string, i: number) => ({
    workspace: ws,
    actor: 'system',
    action: 'exception.resolved',
    entity: { type: 'exception' as const, id: `e${i}` },
    before: { status: 'open' },
    after: { status: 'resolved', i },
  })
  await app.audit.record(app.db, entry('default', -1))
  // 1,300 rows in one transaction: three INSERT batches in default, one in acme
  await app.db.transaction().execute((tx) =>
    app.audit.recordMany(
      tx,
      Array.from({ length: 1300 }, (_, i) => entry(i % 13 === 0 ? 'acme' : 'default', i)),
    ),
  )
  await app.audit.record(app.db, entry('default', 9999))
  t.same(await app.audit.verify('default'), {
    ok: true,
    checked: 1202,
    head: { seq: 1202, hash: (await app.audit.list('default', { limit: 1 })).entries[0].hash },
  })
  t.match(await app.audit.verify('acme'), { ok: true, checked: 101 }, 'the workspace creation and 100 rows')
  // in the order given
  const page = await app.audit.list('default', { order: 'asc', limit: 4 })
  t.same(
    page.entries.map((e) => e.entity.id),
    ['e-1', 'e1', 'e2', 'e3'],
  )
})
