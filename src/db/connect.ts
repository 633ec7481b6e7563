// The service database: embedded PGlite in the data folder by default, PostgreSQL when a URL is
// given. Both run the same migrations; callers see one Kysely<Database>.

import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { once } from 'node:events'
import type { Worker } from 'node:worker_threads'
import type { PGlite } from '@electric-sql/pglite'
import { Kysely, sql } from 'kysely'
import { Migrator } from 'kysely/migration'
import pg from 'pg'
import { ServicePGliteDialect, ServicePostgresDialect } from './introspector.js'
import { migrations } from './migrations/index.js'
import type { Database } from './schema.js'
import { lockEmbedded, type DatabaseLock } from './lock.js'
import { moduleWorker } from '../runs/module-worker.js'
import type { EmbeddedReply, EmbeddedStart } from './embedded-worker.js'

export interface ServiceDatabase {
  db: Kysely<Database>
  kind: 'pglite' | 'postgres'
  /** The Unix socket an embedded database on its own thread is served on. */
  socket?: string
  /** That thread (for diagnostics and tests). */
  thread?: Worker
  /** The embedded database's files as a tarball (PGlite only), for `pgliteDump`. */
  dump?(): Promise<Blob>
  /** True when a trivial query answers. */
  ping(): Promise<boolean>
  close(): Promise<void>
}

export interface DatabaseOptions {
  /** postgres:// URL; without it the embedded database is used. */
  url?: string
  /** Folder of the embedded database, or 'memory://' for a throwaway one (tests). */
  pgliteDir?: string
  /**
   * A dump (`ServiceDatabase.dump`) the embedded database starts from. Tests open one migrated
   * database per process and start every other from its dump: a fresh PGlite takes seconds.
   */
  pgliteDump?: Blob
  /**
   * Run an embedded database in a folder on its own thread (embedded-worker.ts) and talk to it
   * over the wire protocol: the default (false keeps it on the calling thread). A 'memory://' one
   * (tests, `concord reconcile`'s throwaway) is always on the calling thread.
   */
  ownThread?: boolean
  /** Told when an embedded database's own thread stops unasked (its statements then fail). */
  onFailure?: (err: Error) => void
}

// pg parses int8 into strings and dates into local-midnight Dates: keep counts numbers (like
// PGlite does), and dates and decimals as their exact text.
const pgTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === 20) return (v: string) => Number(v)
    if (oid === 1082 || oid === 1700) return (v: string) => v
    return pg.types.getTypeParser(oid, format)
  },
}

/** The socket pg finds in a socket folder for a port: `.s.PGSQL.<port>`. */
const SOCKET_PORT = 5432
const SOCKET = `.s.PGSQL.${SOCKET_PORT}`

export async function openDatabase(opts: DatabaseOptions): Promise<ServiceDatabase> {
  if (opts.url) {
    // no request waits forever on the service's own database: bounded connects and statements
    const pool = new pg.Pool({
      connectionString: opts.url,
      max: 10,
      types: pgTypes,
      connectionTimeoutMillis: 5000,
      statement_timeout: 30_000,
      query_timeout: 35_000,
    })
    // A client losing its server must not crash the process, idle (the pool's 'error') or checked
    // out (the client's own 'error', emitted beside the failing query's rejection); the next
    // query reconnects.
    pool.on('error', () => {})
    pool.on('connect', (client) => client.on('error', () => {}))
    const db = new Kysely<Database>({ dialect: new ServicePostgresDialect({ pool }) })
    return wrap(db, 'postgres')
  }
  const dir = opts.pgliteDir ?? 'memory://'
  const inMemory = dir.startsWith('memory://')
  if (!inMemory) await mkdir(dir, { recursive: true })
  // taken before PGlite opens the files: a second process is refused before touching them
  const lock = inMemory ? null : lockEmbedded(dir)
  if (!inMemory && (opts.ownThread ?? true))
    return openOnOwnThread(resolve(dir), lock, opts.pgliteDump, opts.onFailure ?? (() => {}))
  let pglite: PGlite
  try {
    // imported here: an embedded database in a folder runs PGlite on its own thread, and the
    // service's thread need not load it
    const { PGlite } = await import('@electric-sql/pglite')
    pglite = await PGlite.create(dir, {
      parsers: { 20: (v: string) => Number(v), 1082: (v: string) => v },
      ...(opts.pgliteDump ? { loadDataDir: opts.pgliteDump } : {}),
    })
  } catch (err) {
    lock?.release()
    throw err
  }
  const db = new Kysely<Database>({ dialect: new ServicePGliteDialect({ pglite }) })
  const wrapped = wrap(db, 'pglite')
  return {
    ...wrapped,
    close: async () => {
      try {
        await wrapped.close()
      } finally {
        lock?.release()
      }
    },
    dump: async () => (await pglite.dumpDataDir('none')) as Blob,
  }
}

/**
 * The embedded database on a thread of its own, served over a Unix socket in a private folder
 * under the temporary folder (a data folder may be too deep for a socket's path, or on a file
 * system without sockets), through one pooled connection: PGlite is a single session, so
 * statements (and a transaction's statements) take turns exactly as they do on the calling thread.
 */
async function openOnOwnThread(
  dir: string,
  lock: DatabaseLock | null,
  dump: Blob | undefined,
  onFailure: (err: Error) => void,
): Promise<ServiceDatabase> {
  let socketDir: string
  try {
    socketDir = await mkdtemp(join(tmpdir(), 'concord-db-'))
  } catch (err) {
    lock?.release()
    throw err
  }
  const cleanUp = async () => {
    await rm(socketDir, { recursive: true, force: true })
    lock?.release()
  }
  let worker: Worker
  try {
    worker = moduleWorker('embedded-worker', import.meta.url)
  } catch (err) {
    await cleanUp()
    throw err
  }
  const replies: EmbeddedReply[] = []
  const waiting: ((r: EmbeddedReply) => void)[] = []
  worker.on('message', (r: EmbeddedReply) => (waiting.length ? waiting.shift()!(r) : replies.push(r)))
  let failure: Error | null = null
  let closing = false
  worker.on('error', (err) => (failure = err))
  const exited = once(worker, 'exit')
  // a thread that stops unasked leaves the service without its database: the owner hears why,
  // and every statement from then on fails as with a server gone (503 database_unavailable)
  void exited.then(([code]) => {
    if (closing) return
    failure ??= new Error(`the embedded database thread exited with code ${code}`)
    onFailure(failure)
  })
  const next = () =>
    new Promise<EmbeddedReply>((resolve, reject) => {
      if (replies.length) return resolve(replies.shift()!)
      waiting.push(resolve)
      void exited.then(
        () => reject(new Error(`the embedded database thread stopped${failure ? `: ${failure.message}` : ''}`)),
        reject,
      )
    })
  const data = dump ? await dump.arrayBuffer() : undefined
  const start: EmbeddedStart = { dir, socket: join(socketDir, SOCKET), dump: data }
  worker.postMessage(start, data ? [data] : [])
  const ready = await next().catch((err: Error) => ({ kind: 'failed' as const, message: err.message }))
  if (ready.kind !== 'ready') {
    closing = true
    await worker.terminate()
    await cleanUp()
    const err = new Error(`the embedded database did not open: ${'message' in ready ? ready.message : ready.kind}`)
    throw Object.assign(err, 'code' in ready && ready.code ? { code: ready.code } : {})
  }
  // like a connection to a server: the process may end while the database is idle and unclosed
  worker.unref()
  const pool = new pg.Pool({
    host: socketDir,
    port: SOCKET_PORT,
    database: 'postgres',
    user: 'postgres',
    max: 1,
    // kept open: a reconnect could find the server still letting go of the last connection
    idleTimeoutMillis: 0,
    allowExitOnIdle: true,
    // bounded as a server's: a statement that never answers fails instead of holding every other
    connectionTimeoutMillis: 5000,
    query_timeout: 120_000,
    types: pgTypes,
  })
  pool.on('error', () => {})
  pool.on('connect', (client) => {
    client.on('error', () => {})
    prepareRepeated(client)
  })
  const gone = () =>
    Object.assign(new Error(`the embedded database stopped: ${failure?.message ?? 'closed'}`), { code: '57P01' })
  const guarded = {
    connect: async () => {
      if (failure) throw gone()
      return pool.connect()
    },
    end: () => pool.end(),
    options: pool.options,
  }
  const db = new Kysely<Database>({ dialect: new ServicePostgresDialect({ pool: guarded }) })
  const wrapped = wrap(db, 'pglite')
  return {
    ...wrapped,
    socket: start.socket,
    thread: worker,
    close: async () => {
      closing = true
      try {
        await wrapped.close()
        worker.ref() // awaited: an answer from an unreferenced thread would not keep the process up
        worker.postMessage({ kind: 'close' })
        await Promise.race([next(), exited])
        await exited
      } finally {
        await cleanUp()
      }
    },
    dump: async () => {
      worker.ref()
      worker.postMessage({ kind: 'dump' })
      const r = await next().finally(() => worker.unref())
      if (r.kind !== 'dump')
        throw new Error(`the embedded database could not dump itself: ${'message' in r ? r.message : r.kind}`)
      return new Blob([r.data])
    },
  }
}

/** Statement texts prepared on one connection to the embedded database; later ones run unnamed. */
const PREPARED = 500

/**
 * Statements with parameters are prepared once on the connection, named after their text, and
 * then only bound and executed: PGlite parses and plans an unnamed statement every time (the
 * exceptions list's page over the socket: 0.45 ms a round trip unnamed, 0.23 ms named). Only for
 * the embedded database: its one process runs every migration before any request, so a prepared
 * statement never outlives its table's shape, and no pooler sits between (PgBouncer's transaction
 * mode loses named statements). Past PREPARED texts (bulk inserts of every row count, say),
 * statements run unnamed again.
 */
function prepareRepeated(client: pg.PoolClient): void {
  const names = new Map<string, string>()
  const query = client.query.bind(client) as (...args: unknown[]) => unknown
  client.query = ((text: unknown, values?: unknown, ...rest: unknown[]) => {
    if (typeof text === 'string' && Array.isArray(values) && values.length > 0 && rest.length === 0) {
      let name = names.get(text)
      if (name === undefined && names.size < PREPARED) names.set(text, (name = `concord_${names.size}`))
      if (name !== undefined) return query({ name, text, values })
    }
    return query(text, values, ...rest)
  }) as typeof client.query
}

function wrap(db: Kysely<Database>, kind: ServiceDatabase['kind']): ServiceDatabase {
  return {
    db,
    kind,
    /** True when a trivial query answers within two seconds. */
    async ping() {
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), 2000)
      })
      try {
        return await Promise.race([sql`select 1`.execute(db).then(() => true), late])
      } catch {
        return false
      } finally {
        clearTimeout(timer)
      }
    },
    close: () => db.destroy(),
  }
}

export async function migrateToLatest(db: Kysely<Database>): Promise<void> {
  // the bookkeeping tables named in the schema the service's tables go to: unnamed, Kysely looks
  // for them in every schema and, finding another schema's (a second deployment, parallel tests
  // in one database), skips creating its own and then fails to lock it
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db)
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableSchema: rows[0].schema,
  })
  const { error, results } = await migrator.migrateToLatest()
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName
    throw new Error(
      `database migration ${failed ?? ''} failed: ${error instanceof Error ? error.message : String(error)}`,
    )
  }
}

export function embeddedDir(dataDir: string): string {
  return join(dataDir, 'db')
}

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P02', '57P03'])

/**
 * True for errors that mean the service database is not answering (refused, dropped, timed out),
 * as opposed to a query it refused: those become a 503 the caller can retry, not a 500.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined
  if (!e) return false
  if (e.code && (CONNECTION_CODES.has(e.code) || e.code.startsWith('08'))) return true
  // a socket's path (`.s.PGSQL.`): the embedded database's thread is gone (ENOENT, ECONNREFUSED)
  return /Connection terminated|timeout exceeded when trying to connect|not queryable|Query read timeout|\.s\.PGSQL\./i.test(
    e.message ?? '',
  )
}
