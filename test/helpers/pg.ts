// A real PostgreSQL for tests: the local server (127.0.0.1:5432, database `test`) when it answers,
// otherwise PGlite served over the wire protocol by @electric-sql/pglite-socket, so the same
// tests pass on any machine. Each call gets its own schema (test files run in parallel).
// CONCORD_TEST_PG=pglite forces the PGlite path.

import { randomBytes } from 'node:crypto'
import { PGlite } from '@electric-sql/pglite'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'
import pg from 'pg'
import type { Test } from 'tap'

export interface TestDatabase {
  /** Connection string of the database. */
  url: string
  /** A schema created for this test and dropped at teardown. */
  schema: string
  kind: 'local' | 'pglite'
  /** Runs SQL as the test's admin connection (search_path = the test schema). */
  query(text: string, params?: unknown[]): Promise<pg.QueryResult>
}

const LOCAL_URLS = ['postgresql://postgres@127.0.0.1:5432/test', 'postgresql://root@127.0.0.1:5432/test']

async function localUrl(): Promise<string | undefined> {
  if (process.env.CONCORD_TEST_PG === 'pglite') return undefined
  for (const url of LOCAL_URLS) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1500 })
    try {
      await client.connect()
      await client.query('select 1')
      return url
    } catch {
      // try the next, then fall back to PGlite
    } finally {
      await client.end().catch(() => {})
    }
  }
  return undefined
}

export async function testDatabase(t: Test): Promise<TestDatabase> {
  let url = await localUrl()
  let kind: TestDatabase['kind'] = 'local'
  let stopServer = async () => {}
  if (!url) {
    kind = 'pglite'
    const db = await PGlite.create()
    const server = new PGLiteSocketServer({ db, port: 0, host: '127.0.0.1', maxConnections: 16 })
    await server.start()
    url = `postgresql://postgres@${server.getServerConn()}/postgres`
    stopServer = async () => {
      await server.stop()
      await db.close()
    }
  }
  const schema = `t_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  await admin.query(`CREATE SCHEMA ${schema}`)
  await admin.query(`SET search_path TO ${schema}, public`)
  // One teardown, in order: the schema goes before the connection, the connection before the server.
  t.teardown(async () => {
    await admin.query(`DROP SCHEMA ${schema} CASCADE`).catch(() => {})
    await admin.end()
    await stopServer()
  })
  return { url, schema, kind, query: (text, params) => admin.query(text, params) }
}
