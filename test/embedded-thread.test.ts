// The embedded database on its own thread (src/db/embedded-worker.ts): a database in a folder is
// served to the calling thread over the wire protocol. It must behave as the in-thread one does:
// the same types (counts as numbers, dates and decimals as their text), transactions that others
// wait for and that roll back whole, a dump the in-thread database opens, the folder's lock held
// while open and released (with the socket's folder) at close, and a clear error when it cannot open.
// A socket's path has at most ~100 bytes: a folder deep enough serves it from the temporary folder.

import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { sql } from 'kysely'
import t from 'tap'
import { openDatabase } from '../src/db/connect.js'

t.test('a database in a folder runs on its own thread and behaves as the in-thread one', async (t) => {
  // a short path (tap's own test folders are too deep for a socket beside them)
  const root = await mkdtemp(join(tmpdir(), 'concord-et-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  const dir = join(root, 'db')
  const database = await openDatabase({ pgliteDir: dir })
  t.equal(database.socket, `${dir}.sock/.s.PGSQL.5432`)
  t.ok(existsSync(database.socket!), 'the socket is beside the folder')
  t.equal(database.kind, 'pglite')
  t.ok(await database.ping())
  const { db } = database
  await sql`create table t (id int8 primary key, amount numeric(18,2), day date, at timestamptz)`.execute(db)
  await sql`insert into t values (1, 10.10, '2024-02-29', '2024-02-29T10:00:00Z')`.execute(db)
  const row = (await sql<Record<string, unknown>>`select id, amount, day, at, count(*) over () as n from t`.execute(db))
    .rows[0]
  t.same(row, { id: 1, amount: '10.10', day: '2024-02-29', at: new Date('2024-02-29T10:00:00Z'), n: 1 })

  // a statement outside the transaction waits for it, then sees what it committed
  let inside = true
  const committed = db.transaction().execute(async (trx) => {
    await sql`insert into t values (2, 20.00, null, null)`.execute(trx)
    await new Promise((r) => setTimeout(r, 50))
    inside = false
  })
  const seen = await sql<{ n: number }>`select count(*)::int8 as n from t`.execute(db)
  t.equal(inside, false, 'the outside statement ran after the transaction')
  t.equal(seen.rows[0].n, 2)
  await committed
  await t.rejects(
    db.transaction().execute(async (trx) => {
      await sql`insert into t values (3, 30.00, null, null)`.execute(trx)
      await sql`insert into t values (3, 30.00, null, null)`.execute(trx)
    }),
    { code: '23505' },
  )
  t.equal((await sql<{ n: number }>`select count(*) as n from t`.execute(db)).rows[0].n, 2, 'rolled back whole')

  // a second opener of the folder is refused while it is open
  await t.rejects(openDatabase({ pgliteDir: dir }), { code: 'database_in_use' })

  const dump = await database.dump!()
  const copy = await openDatabase({ pgliteDir: 'memory://', pgliteDump: dump })
  t.same((await sql<{ id: number }>`select id from t order by id`.execute(copy.db)).rows, [{ id: 1 }, { id: 2 }])
  await copy.close()

  await database.close()
  t.notOk(existsSync(`${dir}.sock`), 'the socket folder is gone')
  const again = await openDatabase({ pgliteDir: dir })
  t.equal((await sql<{ n: number }>`select count(*) as n from t`.execute(again.db)).rows[0].n, 2, 'kept on disk')
  await again.close()
})

t.test('a folder the database cannot open is an error, and leaves no lock behind', async (t) => {
  const root = t.testdir()
  const dir = join(root, 'db')
  // a folder that claims another PostgreSQL's files
  await mkdir(dir)
  await writeFile(join(dir, 'PG_VERSION'), '9\n')
  await t.rejects(openDatabase({ pgliteDir: dir }), /^the embedded database did not open: /)
  t.notOk((await readdir(root)).includes('db.lock'), 'lock released')
})

t.test('a folder too deep for a socket path is served from the temporary folder', async (t) => {
  const dir = join(t.testdir(), 'a'.repeat(60), 'db')
  const database = await openDatabase({ pgliteDir: dir })
  const socket = database.socket!
  t.ok(socket.startsWith(join(tmpdir(), 'concord-db-')) && existsSync(socket), socket)
  t.equal((await sql<{ one: number }>`select 1::int8 as one`.execute(database.db)).rows[0].one, 1)
  await database.close()
  t.notOk(existsSync(dirname(socket)), 'removed at close')
  t.notOk(existsSync(`${dir}.sock`))
})
