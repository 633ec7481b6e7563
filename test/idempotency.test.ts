// Idempotency-Key on POST /api/sources (JSON and uploads), POST /api/runs and chat turns: a retry
// with the same key gets the first answer and creates nothing new; the same key on another request
// is refused; a retry while the first is still being answered is a 409; a failure is not kept.

import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { testApp } from './helpers/app.js'
import { fakeAnthropic } from './helpers/fake-anthropic.js'
import { waitForRun } from './helpers/runs.js'
import { tinyFiles as files, tinyRecipe as recipe } from './helpers/tiny.js'

const fake = await fakeAnthropic(t)
const { app, dataDir } = await testApp(t, {
  files,
  env: { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: fake.baseURL, AI_MAX_RETRIES: '0', AI_MODE: 'deterministic' },
})
const post = (url: string, payload: unknown, key?: string) =>
  app.inject({ method: 'POST', url, payload: payload as object, headers: key ? { 'idempotency-key': key } : {} })
const count = async (table: 'sources' | 'runs' | 'session_messages') =>
  Number(
    (
      await app.db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  )

t.test('a retried source registration answers as the first and registers once', async (t) => {
  const first = await post('/api/sources', { alias: 'bank', type: 'csv', path: 'bank.csv' }, 'reg-bank-1')
  t.equal(first.statusCode, 201)
  const again = await post('/api/sources', { alias: 'bank', type: 'csv', path: 'bank.csv' }, 'reg-bank-1')
  t.equal(again.statusCode, 201, 'not 409 source_exists: the retry gets the first answer')
  t.equal(again.headers['idempotent-replayed'], 'true')
  t.same(again.json(), first.json())
  t.equal(await count('sources'), 1)
  const without = await post('/api/sources', { alias: 'bank', type: 'csv', path: 'bank.csv' })
  t.equal(without.statusCode, 409, 'without a key, the same request is a new one')
  const other = await post('/api/sources', { alias: 'inv', type: 'csv', path: 'inv.csv' }, 'reg-bank-1')
  t.match(other, { statusCode: 422 })
  t.equal(other.json().error, 'idempotency_key_reused')
  t.equal(await count('sources'), 1, 'the reused key registered nothing')
  t.equal((await post('/api/sources', { alias: 'inv', type: 'csv', path: 'inv.csv' }, 'reg-inv-1')).statusCode, 201)
  const bad = await post('/api/sources', { alias: 'x', type: 'csv', path: 'x.csv' }, 'has spaces in it')
  t.match(bad.json(), { error: 'invalid_idempotency_key' })
})

t.test('a retried upload is not stored twice', async (t) => {
  const boundary = '----concord'
  const payload = [
    `--${boundary}`,
    'Content-Disposition: form-data; name="alias"',
    '',
    'uploaded',
    `--${boundary}`,
    'Content-Disposition: form-data; name="file"; filename="rows.json"',
    '',
    '[{"id": 1, "amount": "2.50"}]',
    `--${boundary}--`,
    '',
  ].join('\r\n')
  const upload = () =>
    app.inject({
      method: 'POST',
      url: '/api/sources',
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'idempotency-key': 'upload-1' },
      payload,
    })
  const first = await upload()
  t.equal(first.statusCode, 201, first.body)
  const again = await upload()
  t.equal(again.statusCode, 201, again.body)
  t.equal(again.headers['idempotent-replayed'], 'true')
  t.same(again.json(), first.json())
  t.equal((await readdir(join(dataDir, 'uploads', 'default'))).length, 1, 'one file')
})

t.test('a retried run start returns the first run and starts no other', async (t) => {
  const before = await count('runs')
  const first = await post('/api/runs', { recipe }, 'run-1')
  t.equal(first.statusCode, 202)
  const again = await post('/api/runs', { recipe }, 'run-1')
  t.equal(again.statusCode, 202)
  t.equal(again.json().id, first.json().id)
  t.equal(await count('runs'), before + 1)
  await waitForRun(app, first.json().id)
  // a request that failed is not kept: the same key then serves the corrected retry
  const broken = { ...recipe, left: { source: 'nope', key: ['txn_id'] } }
  t.equal((await post('/api/runs', { recipe: broken }, 'run-2')).statusCode, 400)
  t.equal((await post('/api/runs', { recipe: broken }, 'run-2')).statusCode, 400, 'failed again, not replayed')
  t.equal(await count('runs'), before + 1)
})

t.test('a retried chat turn gets the first reply; a retry during the turn is a 409', async (t) => {
  fake.script({ text: 'Hello.' })
  const id = (await post('/api/chat', { message: 'hi' })).json().session_id as string
  fake.script({ delayMs: 400, text: 'Slow hello.' })
  const asked = fake.requests.length
  const first = post('/api/chat', { session_id: id, message: 'again' }, 'turn-1')
  while (fake.requests.length === asked) await new Promise((r) => setImmediate(r))
  const during = await post('/api/chat', { session_id: id, message: 'again' }, 'turn-1')
  t.equal(during.statusCode, 409)
  t.equal(during.json().error, 'idempotency_in_progress')
  const answered = await first
  t.equal(answered.statusCode, 200)
  const messages = await count('session_messages')
  const after = await post('/api/chat', { session_id: id, message: 'again' }, 'turn-1')
  t.equal(after.statusCode, 200)
  t.same(after.json(), answered.json(), 'the same reply')
  t.equal(fake.requests.length, asked + 1, 'the model was asked once')
  t.equal(await count('session_messages'), messages, 'the conversation did not grow')
})
