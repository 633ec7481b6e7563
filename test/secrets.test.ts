// Source credentials: a password planted in a connection string is stored only encrypted (or not
// at all, with password_env), and never appears in a response, a log line, the database or a
// request to the model, through registration, loads, runs, errors and the chat agent.

import { Writable } from 'node:stream'
import t from 'tap'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { decrypt } from '../src/sources/secrets.js'
import { fakeAnthropic, toolCalls } from './helpers/fake-anthropic.js'
import { freshDatabase, testApp, testEnv } from './helpers/app.js'
import { testDatabase } from './helpers/pg.js'
import { waitForRun } from './helpers/runs.js'

const KEY = '7f'.repeat(32)
const PLANTED = 'Pl4nted-S3cret-xq9'

t.test('a planted password appears nowhere: responses, logs, database, model requests', async (t) => {
  const pgdb = await testDatabase(t)
  await pgdb.query('CREATE TABLE bank (txn_id text PRIMARY KEY, ref text, amount numeric(10,2))')
  await pgdb.query('CREATE TABLE inv (id text PRIMARY KEY, ref text, total numeric(10,2))')
  await pgdb.query(`INSERT INTO bank VALUES ('T1', 'R1', 10.00), ('T2', 'R2', 20.00)`)
  await pgdb.query(`INSERT INTO inv VALUES ('I1', 'R1', 10.00), ('I2', 'R2', 20.00)`)
  const url = new URL(pgdb.url)
  url.password = PLANTED // trust auth (or PGlite) ignores it; it must still never come back

  const logs: string[] = []
  const stream = new Writable({
    write(chunk, _enc, done) {
      logs.push(String(chunk))
      done()
    },
  })
  const fake = await fakeAnthropic(t)
  const database = await freshDatabase()
  const config = loadConfig({
    ...testEnv,
    DATA_DIR: t.testdir({}),
    CONCORD_SECRET_KEY: KEY,
    ANTHROPIC_API_KEY: 'k',
    ANTHROPIC_BASE_URL: fake.baseURL,
    AI_MAX_RETRIES: '0',
    AI_MODE: 'deterministic',
  })
  const app = await buildApp({ config, database, logger: { level: 'trace', stream } })
  t.teardown(async () => {
    await app.close()
    await database.close()
  })
  const bodies: string[] = []
  const call = async (method: 'GET' | 'POST', path: string, payload?: unknown) => {
    const res = await app.inject({ method, url: path, payload: payload as object })
    bodies.push(res.body)
    return res
  }
  for (const [alias, table] of [
    ['bank', 'bank'],
    ['inv', 'inv'],
  ]) {
    const res = await call('POST', '/api/sources', {
      alias,
      type: 'postgres',
      connection_string: url.toString(),
      schema: pgdb.schema,
      table,
    })
    t.equal(res.statusCode, 201, res.body)
  }
  await call('GET', '/api/sources')
  await call('GET', '/api/sources/bank')
  await call('GET', '/api/sources/bank/preview')
  await call('POST', '/api/sources/bank/load-scoped', { conditions: [] })
  const recipe = {
    name: 'r',
    left: { source: 'bank', key: ['txn_id'] },
    right: { source: 'inv', key: ['id'] },
    passes: [{ name: 'p', pattern: '1:1', when: 'l.ref = r.ref AND l.amount = r.total' }],
  }
  for (const engine of ['memory', 'postgres']) {
    const started = await call('POST', '/api/runs', { recipe, engine })
    const run = await waitForRun(app, started.json().id)
    t.match(run, { status: 'completed', summary: { matches: 2 } }, engine)
    bodies.push(JSON.stringify(run))
  }
  // an unreachable database: its error message and the log line it makes
  await call('POST', '/api/sources', {
    alias: 'down',
    type: 'postgres',
    connection_string: `postgresql://u:${PLANTED}@127.0.0.1:1/x`,
    table: 't',
  })
  // the agent's tools: what the model is sent
  fake.script(
    { body: toolCalls(['list_sources', {}]) },
    { body: toolCalls(['get_source_preview', { alias: 'bank' }]) },
    { text: 'done' },
  )
  t.equal((await call('POST', '/api/chat', { message: 'show me bank' })).statusCode, 200)

  const stored = await database.db.selectFrom('sources').selectAll().execute()
  t.equal(stored.length, 2)
  const everything = [...bodies, ...logs, JSON.stringify(stored), JSON.stringify(fake.requests)].join('\n')
  t.ok(logs.length > 20, `logs were captured (${logs.length} lines)`)
  t.notOk(everything.includes(PLANTED), 'the password appears in no response, log line, stored row or model request')
  const sealed = stored[0].config.password_enc as string
  t.equal(decrypt(Buffer.from(KEY, 'hex'), sealed), PLANTED, 'it is stored encrypted, and only so')
})

t.test('without CONCORD_SECRET_KEY a password is refused, nothing stored; password_env stores none', async (t) => {
  const pgdb = await testDatabase(t)
  await pgdb.query('CREATE TABLE bank (txn_id text PRIMARY KEY)')
  const { app, database } = await testApp(t)
  const url = new URL(pgdb.url)
  url.password = PLANTED
  const refused = await app.inject({
    method: 'POST',
    url: '/api/sources',
    payload: { alias: 'bank', type: 'postgres', connection_string: url.toString(), schema: pgdb.schema, table: 'bank' },
  })
  t.equal(refused.statusCode, 400)
  t.match(refused.json(), { error: 'secret_key_required', suggestion: /password_env/ })
  t.same(await database.db.selectFrom('sources').selectAll().execute(), [])

  process.env.CONCORD_SOURCE_TEST_PASSWORD = PLANTED
  t.teardown(() => {
    delete process.env.CONCORD_SOURCE_TEST_PASSWORD
  })
  const byEnv = await app.inject({
    method: 'POST',
    url: '/api/sources',
    payload: {
      alias: 'bank',
      type: 'postgres',
      connection_string: pgdb.url,
      schema: pgdb.schema,
      table: 'bank',
      password_env: 'CONCORD_SOURCE_TEST_PASSWORD',
    },
  })
  t.equal(byEnv.statusCode, 201, byEnv.body)
  t.match(byEnv.json().config, { password: 'from the environment variable CONCORD_SOURCE_TEST_PASSWORD' })
  const [row] = await database.db.selectFrom('sources').selectAll().execute()
  t.notOk(JSON.stringify(row).includes(PLANTED))
  t.notOk('password_enc' in row.config)
  t.equal((await app.inject({ method: 'GET', url: '/api/sources/bank/preview' })).statusCode, 200)
  delete process.env.CONCORD_SOURCE_TEST_PASSWORD
  const missing = await app.inject({ method: 'GET', url: '/api/sources/bank/preview' })
  t.equal(missing.statusCode, 502)
  t.match(missing.json(), { error: 'secret_unavailable', message: /CONCORD_SOURCE_TEST_PASSWORD/ })
})

t.test('password_env may only name CONCORD_SOURCE_ variables: no other secret of the service leaves', async (t) => {
  const pgdb = await testDatabase(t)
  await pgdb.query('CREATE TABLE bank (txn_id text PRIMARY KEY)')
  const { app, database } = await testApp(t)
  // were the name accepted, this would be the password sent to the database
  process.env.CONCORD_ADMIN_KEY = 'admin-key-0123456789abcdef'
  t.teardown(() => {
    delete process.env.CONCORD_ADMIN_KEY
  })
  for (const name of ['CONCORD_ADMIN_KEY', 'ANTHROPIC_API_KEY', 'PATH', 'CONCORD_SOURCE_']) {
    const res = await app.inject({
      method: 'POST',
      url: '/api/sources',
      payload: {
        alias: 'bank',
        type: 'postgres',
        connection_string: pgdb.url,
        schema: pgdb.schema,
        table: 'bank',
        password_env: name,
      },
    })
    t.equal(res.statusCode, 400, name)
    t.match(res.json(), { error: 'password_env_not_allowed', suggestion: /CONCORD_SOURCE_/ }, name)
  }
  t.same(await database.db.selectFrom('sources').selectAll().execute(), [], 'nothing stored')
  // a row stored before the rule (or written by hand) is refused when used, not connected with
  await database.db
    .insertInto('sources')
    .values({
      workspace_id: 'default',
      alias: 'old',
      type: 'postgres',
      config: JSON.stringify({
        connection_string: pgdb.url,
        schema: pgdb.schema,
        table: 'bank',
        password_env: 'CONCORD_ADMIN_KEY',
      }),
      columns: JSON.stringify([{ name: 'txn_id', type: 'string', nullable: false }]),
    })
    .execute()
  const used = await app.inject({ method: 'GET', url: '/api/sources/old/preview' })
  t.equal(used.statusCode, 400)
  t.match(used.json(), { error: 'password_env_not_allowed' })
})

t.test('passwords in query parameters (?password=, sslpassword=) are sealed and redacted too', async (t) => {
  const pgdb = await testDatabase(t)
  await pgdb.query('CREATE TABLE bank (txn_id text PRIMARY KEY)')
  await pgdb.query(`INSERT INTO bank VALUES ('T1')`)
  const url = new URL(pgdb.url)
  url.searchParams.set('password', PLANTED) // trust auth ignores it
  url.searchParams.set('sslpassword', `${PLANTED}-ssl`) // no client key: unused
  url.searchParams.set('application_name', 'concord-test')
  const payload = {
    alias: 'bank',
    type: 'postgres',
    connection_string: url.toString(),
    schema: pgdb.schema,
    table: 'bank',
  }

  const bare = await testApp(t)
  const refused = await bare.app.inject({ method: 'POST', url: '/api/sources', payload })
  t.equal(refused.statusCode, 400)
  t.match(refused.json(), { error: 'secret_key_required' })
  t.same(await bare.database.db.selectFrom('sources').selectAll().execute(), [])

  const { app, database } = await testApp(t, { env: { CONCORD_SECRET_KEY: KEY } })
  const bodies: string[] = []
  const created = await app.inject({ method: 'POST', url: '/api/sources', payload })
  t.equal(created.statusCode, 201, created.body)
  t.match(created.json().config, { password: 'stored encrypted', connection: /application_name=concord-test/ })
  bodies.push(created.body)
  const preview = await app.inject({ method: 'GET', url: '/api/sources/bank/preview' })
  t.equal(preview.statusCode, 200, preview.body)
  t.equal(preview.json().total_rows, 1)
  bodies.push(preview.body, (await app.inject({ method: 'GET', url: '/api/sources' })).body)
  const [row] = await database.db.selectFrom('sources').selectAll().execute()
  t.notOk(JSON.stringify(row).includes(PLANTED), 'the stored row holds neither password')
  t.notOk(bodies.join('\n').includes(PLANTED), 'no response shows either')
  t.same(JSON.parse(decrypt(Buffer.from(KEY, 'hex'), row.config.params_enc as string)), {
    password: PLANTED,
    sslpassword: `${PLANTED}-ssl`,
  })
  // a refused connection's message is scrubbed of query-parameter passwords as well
  const down = await app.inject({
    method: 'POST',
    url: '/api/sources',
    payload: { ...payload, alias: 'down', connection_string: `postgresql://u@127.0.0.1:1/x?password=${PLANTED}` },
  })
  t.equal(down.statusCode, 502)
  t.notOk(down.body.includes(PLANTED), down.body)
})
