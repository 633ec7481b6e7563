// What the keys service keeps in memory to spare the database a statement per request: a valid
// key (only as the database's sole writer, forgotten at a revoke), open mode's end, and a key's
// last use written at most once a minute.

import t, { type Test } from 'tap'
import { KeysService } from '../src/auth/keys.js'
import { freshDatabase } from './helpers/app.js'

async function database(t: Test) {
  const database = await freshDatabase()
  t.teardown(() => database.close())
  // every statement the services send, to count them
  const sent: string[] = []
  const db = database.db.withPlugin({
    transformQuery: (args) => {
      sent.push(args.node.kind)
      return args.node
    },
    transformResult: async (args) => args.result,
  })
  return {
    db,
    sent,
    lastUsed: async (id: string) => {
      const row = await database.db
        .selectFrom('api_keys')
        .select('last_used_at')
        .where('id', '=', id)
        .executeTakeFirstOrThrow()
      return row.last_used_at
    },
  }
}

t.test('sole writer: a valid key is looked up once, and stops at its revoke', async (t) => {
  const { db, sent, lastUsed } = await database(t)
  const keys = new KeysService(db, undefined, undefined, true)
  const { key, id } = await keys.create('default', 'k', 'operator')
  sent.length = 0
  t.match(await keys.authenticate(key), { workspace: 'default', role: 'operator', keyId: id })
  t.same(sent, ['SelectQueryNode', 'UpdateQueryNode'], 'looked up, and its use recorded')
  t.ok(await lastUsed(id))
  sent.length = 0
  for (let n = 0; n < 5; n++) t.match(await keys.authenticate(key), { keyId: id })
  t.same(sent, [], 'remembered, and its use recorded at most once a minute')
  t.equal(await keys.authenticate('ck_not-a-key'), null)
  await keys.revoke('default', id)
  t.equal(await keys.authenticate(key), null, 'a revoked key stops at once')
})

t.test('sole writer: a lookup that overlaps a revoke is not remembered', async (t) => {
  const { db } = await database(t)
  const keys = new KeysService(db, undefined, undefined, true)
  const { key, id } = await keys.create('default', 'k', 'operator')
  // the lookup starts first; the revoke's transaction waits for nothing it holds
  const lookup = keys.authenticate(key)
  const revoke = keys.revoke('default', id)
  await Promise.all([lookup, revoke])
  t.equal(await keys.authenticate(key), null)
})

t.test('another writer: every request asks the database, and open mode ends with a key made elsewhere', async (t) => {
  const { db, sent } = await database(t)
  const here = new KeysService(db)
  const elsewhere = new KeysService(db)
  t.equal(await here.decideOpenMode(), true)
  t.equal(await here.openNow(), true)
  const { key, id } = await elsewhere.create('default', 'k', 'viewer')
  t.equal(await here.openNow(), false, 'the other instance made a key')
  sent.length = 0
  t.match(await here.authenticate(key), { keyId: id })
  t.match(await here.authenticate(key), { keyId: id })
  t.same(sent, ['SelectQueryNode', 'UpdateQueryNode', 'SelectQueryNode'], 'looked up each time, its use written once')
  await elsewhere.revoke('default', id)
  t.equal(await here.authenticate(key), null, 'revoked by the other instance')
})

t.test('sole writer in open mode: no statement per request, and the first key ends it', async (t) => {
  const { db, sent } = await database(t)
  const keys = new KeysService(db, undefined, undefined, true)
  t.equal(await keys.decideOpenMode(), true)
  sent.length = 0
  t.equal(await keys.openNow(), true)
  t.same(sent, [])
  await keys.create('default', 'first', 'admin')
  t.equal(await keys.openNow(), false)
})
