// The embedded database on its own thread (src/db/embedded-worker.ts): a database in a folder is
// served to the calling thread over the wire protocol. It must behave as the in-thread one does:
// the same types (counts as numbers, dates and decimals as their text), transactions that others
// wait for and that roll back whole, a dump the in-thread database opens, the folder's lock held
// while open and released (with the socket's folder) at close, a clear error when it cannot open,
// a process that may end with it idle and unclosed, and a thread that stops unasked reported to
// its owner, its statements then failing as with a server gone (503, not 500).

import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, readdir, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import { sql } from 'kysely'
import t from 'tap'
import { isDatabaseUnavailable, openDatabase } from '../src/db/connect.js'

t.test('a database in a folder runs on its own thread and behaves as the in-thread one', async (t) => {
  const dir = join(t.testdir(), 'db')
  const database = await openDatabase({ pgliteDir: dir })
  t.equal(database.kind, 'pglite')
  const socket = database.socket!
  t.ok(socket.startsWith(join(tmpdir(), 'concord-db-')) && existsSync(socket), `the socket: ${socket}`)
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
  t.notOk(existsSync(dirname(socket)), 'the socket folder is gone')
  const again = await openDatabase({ pgliteDir: dir })
  t.equal((await sql<{ n: number }>`select count(*) as n from t`.execute(again.db)).rows[0].n, 2, 'kept on disk')
  await again.close()
  const inline = await openDatabase({ pgliteDir: dir, ownThread: false })
  t.equal(inline.socket, undefined, 'ownThread: false keeps it on the calling thread')
  t.equal((await sql<{ n: number }>`select count(*) as n from t`.execute(inline.db)).rows[0].n, 2)
  await inline.close()
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

t.test('a thread that stops unasked is reported; its statements fail as unavailable', async (t) => {
  const failures: Error[] = []
  const database = await openDatabase({ pgliteDir: join(t.testdir(), 'db'), onFailure: (err) => failures.push(err) })
  t.ok(await database.ping())
  await database.thread!.terminate()
  for (let n = 0; n < 100 && !failures.length; n++) await new Promise((r) => setTimeout(r, 10))
  t.equal(failures.length, 1, 'the owner was told')
  const err = await sql`select 1`.execute(database.db).then(
    () => null,
    (e: unknown) => e,
  )
  t.ok(isDatabaseUnavailable(err), `unavailable: ${(err as Error)?.message}`)
  t.equal(await database.ping(), false)
  await database.close()
  // before its exit is heard, a statement meets the socket gone: unavailable too, and only that
  t.ok(isDatabaseUnavailable({ code: 'ENOENT', message: 'connect ENOENT /tmp/concord-db-x/.s.PGSQL.5432' }))
  t.notOk(isDatabaseUnavailable({ code: 'ENOENT', message: "ENOENT: no such file or directory, open 'bank.csv'" }))
})

t.test('a process may end with the database idle and unclosed', async (t) => {
  const dir = t.testdir({
    'open.mjs': `import { openDatabase } from ${JSON.stringify(new URL('../src/db/connect.ts', import.meta.url).href)}
const database = await openDatabase({ pgliteDir: process.argv[2] })
await database.ping()
console.log('opened')
`,
  })
  const started = Date.now()
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', join(dir, 'open.mjs'), join(dir, 'db')],
    { timeout: 60_000 },
  )
  t.equal(stdout.trim(), 'opened')
  t.comment(`the process ended ${Date.now() - started} ms after it started`)
})
