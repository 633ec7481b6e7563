// Access control: API keys with roles, workspaces that cannot see each other (404s, lists without
// the other's resources) over every route family, the bootstrap key, probes without a key, and
// what open mode allows.

import t, { type Test } from 'tap'
import { freshDatabase, testApp } from './helpers/app.js'
import { fakeAnthropic } from './helpers/fake-anthropic.js'
import { tinyFiles as files, tinyRecipe as recipe } from './helpers/tiny.js'

const ROOT = 'root-key-for-tests-0123456789'

async function setup(t: Test) {
  const fake = await fakeAnthropic(t)
  const { app } = await testApp(t, {
    files,
    env: { CONCORD_ADMIN_KEY: ROOT, ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: fake.baseURL, AI_MAX_RETRIES: '0' },
  })
  const as = (key: string) => async (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown) => {
    const res = await app.inject({
      method,
      url,
      payload: payload as object,
      headers: { authorization: `Bearer ${key}` },
    })
    return { status: res.statusCode, body: res.body ? res.json() : null }
  }
  const root = as(ROOT)
  const a = (await root('POST', '/api/workspaces', { name: 'acme' })).body
  const b = (await root('POST', '/api/workspaces', { name: 'globex' })).body
  return { app, fake, root, as, adminA: as(a.admin_key), adminB: as(b.admin_key) }
}

t.test("workspaces cannot see each other's sources, recipes, runs or sessions", async (t) => {
  const { adminA, adminB, fake } = await setup(t)
  for (const [alias, path] of [
    ['bank', 'bank.csv'],
    ['inv', 'inv.csv'],
  ])
    t.equal((await adminA('POST', '/api/sources', { alias, type: 'csv', path })).status, 201)
  // the same alias in another workspace is another source
  t.equal((await adminB('POST', '/api/sources', { alias: 'bank', type: 'csv', path: 'inv.csv' })).status, 201)
  t.same(
    (await adminA('GET', '/api/sources')).body.sources.map((s: { alias: string }) => s.alias),
    ['bank', 'inv'],
  )
  t.same(
    (await adminB('GET', '/api/sources')).body.sources.map((s: { alias: string }) => s.alias),
    ['bank'],
  )
  t.equal((await adminB('GET', '/api/sources/inv')).status, 404)
  t.equal((await adminB('GET', '/api/sources/inv/preview')).status, 404)
  t.equal((await adminB('POST', '/api/sources/inv/load-scoped', {})).status, 404)
  t.equal((await adminB('DELETE', '/api/sources/inv')).status, 404)
  t.match((await adminA('GET', '/api/sources/bank')).body, {
    columns: [{ name: 'txn_id' }, { name: 'ref' }, { name: 'amount' }],
  })

  const saved = (await adminA('POST', '/api/recipes', recipe)).body
  t.equal((await adminB('GET', `/api/recipes/${saved.id}`)).status, 404)
  t.equal((await adminB('PUT', `/api/recipes/${saved.id}`, recipe)).status, 404)
  t.equal((await adminB('DELETE', `/api/recipes/${saved.id}`)).status, 404)
  t.same((await adminB('GET', '/api/recipes')).body.recipes, [])
  t.match((await adminB('POST', '/api/recipes/validate', recipe)).body, {
    valid: false,
    issues: [{ code: 'unknown_source' }],
  })

  const run = (await adminA('POST', '/api/runs', { recipe_id: saved.id })).body
  const done = await (async () => {
    for (;;) {
      const r = (await adminA('GET', `/api/runs/${run.id}`)).body
      if (r.status !== 'queued' && r.status !== 'running') return r
      await new Promise((res) => setTimeout(res, 50))
    }
  })()
  t.match(done, { status: 'completed', summary: { matches: 2 } })
  for (const url of [
    `/api/runs/${run.id}`,
    `/api/runs/${run.id}/matches`,
    `/api/runs/${run.id}/unmatched/left`,
    `/api/runs/${run.id}/export`,
  ])
    t.equal((await adminB('GET', url)).status, 404, url)
  for (const url of [`/api/runs/${run.id}/cancel`, `/api/runs/${run.id}/retry`])
    t.equal((await adminB('POST', url)).status, 404, url)
  t.equal((await adminB('DELETE', `/api/runs/${run.id}`)).status, 404)
  t.same((await adminB('GET', '/api/runs')).body, { runs: [], total: 0 })
  t.equal((await adminB('POST', '/api/runs', { recipe_id: saved.id })).status, 404)

  fake.script({ text: 'Hello.' })
  const session = (await adminA('POST', '/api/chat', { message: 'hi' })).body.session_id
  for (const url of [`/api/sessions/${session}`, `/api/sessions/${session}/events`, `/api/sessions/${session}/prompt`])
    t.equal((await adminB('GET', url)).status, 404, url)
  t.equal((await adminB('POST', `/api/sessions/${session}/undo`)).status, 404)
  t.equal((await adminB('POST', '/api/chat', { session_id: session, message: 'x' })).status, 404)
  t.equal(fake.requests.length, 1, 'the other workspace reached no model')
})

t.test('roles: viewer reads, operator runs and loads, admin manages keys and sources', async (t) => {
  const { adminA, as } = await setup(t)
  const viewer = as((await adminA('POST', '/api/keys', { name: 'v', role: 'viewer' })).body.key)
  const operator = as((await adminA('POST', '/api/keys', { name: 'o', role: 'operator' })).body.key)
  t.equal((await operator('POST', '/api/sources', { alias: 'bank', type: 'csv', path: 'bank.csv' })).status, 403)
  t.equal((await adminA('POST', '/api/sources', { alias: 'bank', type: 'csv', path: 'bank.csv' })).status, 201)
  await adminA('POST', '/api/sources', { alias: 'inv', type: 'csv', path: 'inv.csv' })
  t.equal((await viewer('GET', '/api/sources')).status, 200)
  t.equal((await viewer('GET', '/api/sources/bank/preview')).status, 200)
  t.match(await viewer('POST', '/api/sources/bank/load-scoped', {}), {
    status: 403,
    body: { error: 'forbidden', message: /operator/ },
  })
  t.equal((await operator('POST', '/api/sources/bank/load-scoped', {})).status, 200)
  t.equal((await viewer('POST', '/api/recipes/validate', recipe)).status, 200, 'validating changes nothing')
  t.equal((await viewer('POST', '/api/runs', { recipe })).status, 403)
  const run = await operator('POST', '/api/runs', { recipe })
  t.equal(run.status, 202)
  t.equal((await viewer('POST', '/api/ai', { tool: 'build_recipe', input: {} })).status, 403)
  t.equal((await operator('DELETE', '/api/sources/bank')).status, 403)
  t.equal((await operator('GET', '/api/keys')).status, 403)
  const keys = (await adminA('GET', '/api/keys')).body.keys
  t.same(
    keys.map((k: { name: string; role: string }) => [k.name, k.role]),
    [
      ['admin', 'admin'],
      ['v', 'viewer'],
      ['o', 'operator'],
    ],
  )
  t.ok(keys.every((k: Record<string, unknown>) => !('key' in k) && !('key_hash' in k)))
  // rotation: revoke, and the key stops working at once
  const revoked = await adminA('DELETE', `/api/keys/${keys[2].id}`)
  t.ok(revoked.body.revoked_at)
  t.match(await operator('GET', '/api/sources'), { status: 401, body: { error: 'unauthorized' } })
  t.equal(
    (await adminA('POST', '/api/workspaces', { name: 'initech' })).status,
    403,
    'only the bootstrap key creates workspaces',
  )
  t.equal((await adminA('POST', '/api/keys', { name: 'x', role: 'admin', workspace: 'globex' })).status, 403)
})

t.test('without a key: 401, except the probes and the API documentation', async (t) => {
  const { app } = await setup(t)
  const res = await app.inject({ method: 'GET', url: '/api/sources' })
  t.equal(res.statusCode, 401)
  t.match(res.json(), { error: 'unauthorized', suggestion: /Bearer/ })
  t.equal(
    (await app.inject({ method: 'GET', url: '/api/sources', headers: { authorization: 'Bearer nope' } })).statusCode,
    401,
  )
  t.equal(
    (await app.inject({ method: 'GET', url: '/api/sources', headers: { authorization: 'Basic abc' } })).statusCode,
    401,
  )
  for (const url of ['/health', '/ready', '/openapi.json', '/docs']) {
    const probe = await app.inject({ method: 'GET', url })
    t.ok(probe.statusCode < 400, `${url} answers without a key (${probe.statusCode})`)
  }
})

t.test('open mode: no key configured, every request is an admin of the default workspace', async (t) => {
  const { app } = await testApp(t, { files })
  t.equal(await app.keys.open(), true)
  t.equal(
    (
      await app.inject({
        method: 'POST',
        url: '/api/sources',
        payload: { alias: 'bank', type: 'csv', path: 'bank.csv' },
      })
    ).statusCode,
    201,
  )
  // the first key ends open mode
  const key = (await app.inject({ method: 'POST', url: '/api/keys', payload: { name: 'first', role: 'admin' } })).json()
    .key
  t.equal(await app.keys.open(), false)
  t.equal((await app.inject({ method: 'GET', url: '/api/sources' })).statusCode, 401)
  const withKey = await app.inject({ method: 'GET', url: '/api/sources', headers: { authorization: `Bearer ${key}` } })
  t.equal(withKey.json().sources.length, 1)
  // and revoking that key does not bring it back: open mode never begins while running
  const auth = { authorization: `Bearer ${key}` }
  const [{ id }] = (await app.inject({ method: 'GET', url: '/api/keys', headers: auth })).json().keys
  await app.inject({ method: 'DELETE', url: `/api/keys/${id}`, headers: auth })
  t.equal(await app.keys.open(), true, 'no key is left')
  t.equal((await app.inject({ method: 'GET', url: '/api/sources' })).statusCode, 401, 'still closed')
})

t.test('open mode is decided at start-up: a service started with keys stays closed when all are revoked', async (t) => {
  const database = await freshDatabase()
  t.teardown(() => database.close())
  const first = await testApp(t, { files, database })
  const key = (
    await first.app.inject({ method: 'POST', url: '/api/keys', payload: { name: 'k', role: 'admin' } })
  ).json()
  // the service restarts (same database) with that key: not in open mode; then the key is revoked
  const { app } = await testApp(t, { dataDir: first.dataDir, database })
  t.equal(app.keys.openAtStart, false)
  const auth = { authorization: `Bearer ${key.key}` }
  t.equal((await app.inject({ method: 'DELETE', url: `/api/keys/${key.id}`, headers: auth })).statusCode, 200)
  t.equal(await app.keys.open(), true, 'no key is left')
  const res = await app.inject({ method: 'GET', url: '/api/sources' })
  t.equal(res.statusCode, 401, 'a request without a key is still refused')
})
