// PostgreSQL table sources. Filters are pushed down as one WHERE clause rendered from the
// engine's resolved conditions (src/engine/load/filter.ts), with casts that make PostgreSQL
// compare exactly what the engine compares, and values only ever bound as parameters. Rows come
// by COPY … TO STDOUT in its text format, decoded from the bytes straight into typed column
// builders (copyRows): never the whole result as JS objects, never lossy numbers.

import type { FastifyBaseLogger } from 'fastify'
import type pg from 'pg'
import { Type } from 'typebox'
import { type ColumnBuilder, columnBuilder, ValueTypeError } from '../src/engine/data/builder.js'
import { type ResolvedCondition, resolveConditions } from '../src/engine/load/filter.js'
import { nearestNames } from '../src/language/similarity.js'
import type { Table } from '../src/engine/data/table.js'
import type { ColumnInfo, ColumnType, FilterCondition, NativeQuery } from '../src/engine/data/types.js'
import { ConcordError } from '../src/errors.js'
import type { EngineContext, LoadOptions, ScopedTable, Source, SourceConnector } from '../src/sources/connector.js'
import type { ConnectorContext } from '../src/sources/registry.js'
import { connectionSecrets, redactConnection } from '../src/sources/secrets.js'
import { pushdownProblem, runPushdown } from './postgres/pushdown.js'

export interface PostgresSourceConfig {
  connection_string: string
  table: string
  schema?: string
  [key: string]: unknown
}

export interface PostgresConnectorOptions {
  statementTimeoutMs: number
  poolMax: number
  log?: FastifyBaseLogger
}

const ConfigSchema = Type.Object(
  {
    connection_string: Type.String({
      pattern: '^postgres(ql)?://',
      description: 'postgresql://user:password@host:port/database',
    }),
    table: Type.String({ minLength: 1, maxLength: 63 }),
    schema: Type.Optional(Type.String({ minLength: 1, maxLength: 63, default: 'public' })),
    password_env: Type.Optional(
      Type.String({
        pattern: '^[A-Z_][A-Z0-9_]{0,127}$',
        description: 'the name of an environment variable holding the password (it is then never stored)',
      }),
    ),
  },
  { additionalProperties: false },
)

export interface CatalogColumn extends ColumnInfo {
  pgType: string
}

// Every value arrives as the text PostgreSQL sent: the builders convert it exactly.
/**
 * The driver, loaded on first use: pg with its cursor and COPY streams is ~40 modules, and a
 * `concord reconcile` on files (or a service without PostgreSQL sources) never connects.
 */
interface Driver {
  pg: typeof import('pg').default
  copyTo: typeof import('pg-copy-streams').to
  Cursor: typeof import('pg-cursor')
}
let driver: Driver | undefined

export async function loadDriver(): Promise<Driver> {
  if (!driver) {
    const [pgModule, copyStreams, cursor] = await Promise.all([
      import('pg'),
      import('pg-copy-streams'),
      import('pg-cursor'),
    ])
    driver = { pg: pgModule.default, copyTo: copyStreams.to, Cursor: cursor.default as typeof import('pg-cursor') }
  }
  return driver
}

const TEXT_TYPES = { getTypeParser: () => (v: string) => v }

export const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`

export function postgresConnector(opts: PostgresConnectorOptions): SourceConnector<PostgresSourceConfig> {
  const pools = new Map<string, pg.Pool>()
  const catalogs = new Map<string, CatalogColumn[]>()

  async function pool(conn: string): Promise<pg.Pool> {
    const { pg } = await loadDriver()
    let p = pools.get(conn)
    if (!p) {
      p = new pg.Pool({
        connectionString: conn,
        max: opts.poolMax,
        connectionTimeoutMillis: 10_000,
        idleTimeoutMillis: 30_000,
      })
      // An idle connection dropped by the server must not crash the service.
      p.on('error', (err) => opts.log?.warn({ err: redactError(err, conn) }, 'source connection error'))
      pools.set(conn, p)
    }
    return p
  }

  /** Connections whose session settings are applied (withClient applies them on first use). */
  const configured = new WeakSet<pg.PoolClient>()

  async function withClient<T>(conn: string, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient
    try {
      client = await (await pool(conn)).connect()
    } catch (err) {
      throw unreachable(err, conn)
    }
    if (!configured.has(client)) {
      // a new connection gets its session settings before its first query, and one that cannot
      // take them (no statement timeout would bound its queries) is not used
      try {
        await client.query(
          `SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET statement_timeout = ${Math.floor(opts.statementTimeoutMs)}`,
        )
        configured.add(client)
      } catch (err) {
        client.release(true)
        throw sourceError(err, conn)
      }
    }
    let broken: Error | undefined
    // A connection dropped mid-query surfaces as an 'error' event on the client, and a cursor read
    // waiting on it may never settle: race the work against the loss so the caller gets a 502.
    let onLost: (err: Error) => void = () => {}
    const lost = new Promise<never>((_resolve, reject) => {
      onLost = (err) => reject(err)
      client.on('error', onLost)
      client.on('end', () => onLost(new Error('Connection terminated unexpectedly')))
    })
    lost.catch(() => {})
    try {
      return await Promise.race([fn(client), lost])
    } catch (err) {
      broken = err as Error
      throw sourceError(err, conn)
    } finally {
      client.removeListener('error', onLost)
      client.removeAllListeners('end')
      client.release(broken !== undefined && !(broken instanceof ConcordError))
    }
  }

  async function catalog(config: PostgresSourceConfig): Promise<CatalogColumn[]> {
    const columns = await withClient(config.connection_string, (c) =>
      readCatalog(c, config.schema ?? 'public', config.table),
    )
    catalogs.set(catalogKey(config), columns)
    return columns
  }

  /**
   * The scoped query as parts: the rows' query and the count's are assembled from them, never by
   * cutting one SQL text at a keyword (a quoted column may contain " FROM ").
   */
  function scopeQuery(
    config: PostgresSourceConfig,
    columns: CatalogColumn[],
    resolved: ResolvedCondition[],
    placeholder: Placeholder = bindParam,
  ) {
    const params: unknown[] = []
    const clauses = resolved.map((c) => condition(c, columns[c.index], params, placeholder))
    const select = columns.map(selectExpr).join(', ')
    const from = `${quoteIdent(config.schema ?? 'public')}.${quoteIdent(config.table)}`
    const where = clauses.length ? ` WHERE ${clauses.join(' AND ')}` : ''
    return {
      native: { language: 'postgresql', sql: `SELECT ${select} FROM ${from}${where}`, params } satisfies NativeQuery,
      countSql: `SELECT count(*) AS n FROM ${from}${where}`,
    }
  }

  return {
    type: 'postgres',
    configSchema: ConfigSchema,
    async prepare(config) {
      const normalized: PostgresSourceConfig = {
        connection_string: config.connection_string,
        schema: config.schema ?? 'public',
        table: config.table,
      }
      await catalog(normalized)
      return normalized
    },
    redact(config) {
      return { connection: redactUrl(config.connection_string), schema: config.schema ?? 'public', table: config.table }
    },
    async describe(source) {
      return (await catalog(source.config)).map(({ pgType: _, ...info }) => info)
    },
    translate(source, columns, conditions) {
      const cat =
        catalogs.get(catalogKey(source.config)) ??
        columns.map((c) => ({ ...c, pgType: c.type === 'timestamp' ? 'timestamptz' : c.type }))
      return scopeQuery(source.config, cat, resolveConditions(cat, conditions)).native
    },
    async registerScoped(
      ctx: EngineContext,
      alias: string,
      source: Source<PostgresSourceConfig>,
      conditions: FilterCondition[],
      lo: LoadOptions = {},
    ) {
      const config = source.config
      const columns = await catalog(config)
      const resolved = resolveConditions(columns, conditions)
      const { native: query, countSql } = scopeQuery(config, columns, resolved)
      const limited = lo.limit !== undefined
      const limit = limited ? ` LIMIT ${Math.floor(lo.limit!)}` : ''
      lo.signal?.throwIfAborted()
      const { table, total } = await withClient(config.connection_string, async (client) => {
        const stopCancel = cancelOnAbort(client, config.connection_string, lo.signal)
        try {
          // the rows by COPY, its filter values bound as settings read back (copyRows)
          const copied = scopeQuery(config, columns, resolved, settingParam)
          const table = await copyRows(client, `${copied.native.sql}${limit}`, query.params ?? [], columns, lo.signal)
          let total = table.length
          if (limited && table.length === lo.limit) {
            const res = await client.query({
              text: countSql,
              values: query.params,
              types: TEXT_TYPES,
            })
            total = Number(res.rows[0].n)
          }
          return { table, total }
        } finally {
          stopCancel()
        }
      })
      lo.signal?.throwIfAborted()
      const scoped: ScopedTable = {
        alias,
        conditions,
        table,
        totalRows: total,
        nativeQuery: query,
        loadedAt: new Date(),
      }
      ctx.register(scoped)
      return scoped
    },
    // engine "postgres": a recipe over two tables of one database runs inside it
    pushdown: {
      engine: 'postgres',
      problem: (recipe, sources) => pushdownProblem(recipe, sources),
      run: (recipe, sources, runOpts) =>
        runPushdown(recipe, sources as { left: Source<PostgresSourceConfig>; right: Source<PostgresSourceConfig> }, {
          ...runOpts,
          statementTimeoutMs: opts.statementTimeoutMs,
        }),
    },
    async close() {
      const all = [...pools.values()]
      pools.clear()
      await Promise.all(all.map((p) => p.end().catch(() => {})))
    },
  }
}

function catalogKey(c: PostgresSourceConfig): string {
  return `${c.connection_string}\0${c.schema ?? 'public'}\0${c.table}`
}

/** The columns of a table with their engine types, from the catalog; unknown_table when there is none. */
export async function readCatalog(c: pg.ClientBase, schema: string, table: string): Promise<CatalogColumn[]> {
  const res = await c.query<{ name: string; typname: string; typmod: number; notnull: boolean }>(
    `SELECT a.attname AS name, t.typname, a.atttypmod AS typmod, a.attnotnull AS notnull
       FROM pg_attribute a
       JOIN pg_class cl ON cl.oid = a.attrelid
       JOIN pg_namespace n ON n.oid = cl.relnamespace
       JOIN pg_type t ON t.oid = a.atttypid
      WHERE n.nspname = $1 AND cl.relname = $2 AND cl.relkind IN ('r', 'v', 'm', 'f', 'p')
        AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY a.attnum`,
    [schema, table],
  )
  if (res.rows.length === 0) {
    const tables = await c.query<{ relname: string }>(
      `SELECT cl.relname FROM pg_class cl JOIN pg_namespace n ON n.oid = cl.relnamespace
        WHERE n.nspname = $1 AND cl.relkind IN ('r', 'v', 'm', 'f', 'p')`,
      [schema],
    )
    const near = nearestNames(
      table,
      tables.rows.map((r) => r.relname),
    )
    throw new ConcordError(
      'unknown_table',
      `no table "${schema}"."${table}" in the source database`,
      400,
      near.length ? `did you mean ${near.map((n) => `"${n}"`).join(', ')}?` : `schema "${schema}" has no tables`,
    )
  }
  return res.rows.map((r) => toColumn(r.name, r.typname, Number(r.typmod), r.notnull))
}

function toColumn(name: string, typname: string, typmod: number, notnull: boolean): CatalogColumn {
  let type: ColumnType = 'string'
  let scale: number | undefined
  if (['int2', 'int4', 'int8', 'oid'].includes(typname)) type = 'integer'
  else if (typname === 'numeric') {
    type = 'decimal'
    if (typmod >= 4) scale = (typmod - 4) & 0xffff
  } else if (typname === 'float4' || typname === 'float8') type = 'float'
  else if (typname === 'bool') type = 'boolean'
  else if (typname === 'date') type = 'date'
  else if (typname === 'timestamp' || typname === 'timestamptz') type = 'timestamp'
  const col: CatalogColumn = { name, type, nullable: !notnull, pgType: typname }
  if (scale !== undefined) col.scale = scale
  return col
}

/** The select-list expression giving text the engine's parsers read exactly. */
export function selectExpr(c: CatalogColumn): string {
  const id = quoteIdent(c.name)
  if (c.pgType === 'timestamptz') return `to_char(${id} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
  if (c.pgType === 'timestamp') return `to_char(${id}, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
  return `${id}::text`
}

const OPS: Record<string, string> = { eq: '=', neq: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' }

/** How the n-th (1-based) bound value is written in the SQL: `$n`, or a setting read back (settingParam). */
export type Placeholder = (n: number) => string
const bindParam: Placeholder = (n) => `$${n}`

/** One condition as SQL; values go to `params`, never into the text. */
export function condition(
  c: ResolvedCondition,
  col: CatalogColumn,
  params: unknown[],
  placeholder: Placeholder = bindParam,
): string {
  const isString = col.type === 'string'
  // Text types compare in place (indexes stay usable); other types shown as strings (uuid,
  // json, …) compare as their text, which is what the engine holds.
  const nativeText = col.pgType === 'text' || col.pgType === 'varchar'
  const lhs = isString ? `${quoteIdent(col.name)}${nativeText ? '' : '::text'} COLLATE "C"` : quoteIdent(col.name)
  const cast =
    col.type === 'string'
      ? 'text'
      : col.type === 'integer' || col.type === 'decimal'
        ? 'numeric'
        : col.type === 'float'
          ? 'float8'
          : col.type === 'date'
            ? 'date'
            : col.type === 'timestamp'
              ? col.pgType === 'timestamptz'
                ? 'timestamptz'
                : 'timestamp'
              : 'boolean'
  const param = (text: string) => {
    params.push(text)
    return `${placeholder(params.length)}::${cast}`
  }
  const v = c.values.map((x) => x.text)
  switch (c.op) {
    case 'between':
      return `${lhs} BETWEEN ${param(v[0])} AND ${param(v[1])}`
    case 'in':
      return `${lhs} IN (${v.map(param).join(', ')})`
    case 'like':
      return `${lhs} LIKE ${param(v[0])}`
    default:
      return `${lhs} ${OPS[c.op]} ${param(v[0])}`
  }
}

/** A bound value as COPY can take it: a setting of the transaction (copyRows), cast where it is used. */
export const settingParam: Placeholder = (n) => `current_setting('concord.p${n}')`

/**
 * The rows of `sql` by `COPY (…) TO STDOUT`, decoded from its text format straight into the typed
 * builders: about 3× faster than a cursor, whose driver makes every field of every row a string
 * in an array first (bench:pg). COPY takes no bind parameters, so `sql` reads its values with
 * `current_setting()` (settingParam) and they are bound, as parameters, to `set_config()` in the
 * same transaction: a value never becomes SQL text.
 */
export async function copyRows(
  client: pg.ClientBase,
  sql: string,
  params: unknown[],
  columns: CatalogColumn[],
  signal?: AbortSignal,
): Promise<Table> {
  // exact: a database's 'b2 ' and '' are values, not text to tidy up
  const builders = columns.map((c) => columnBuilder(c, 4096, true))
  await client.query('BEGIN READ ONLY')
  try {
    if (params.length)
      await client.query(
        `SELECT ${params.map((_, i) => `set_config('concord.p${i + 1}', $${i + 1}, true)`).join(', ')}`,
        params,
      )
    const decoder = new CopyTextDecoder(builders)
    const { copyTo } = await loadDriver()
    const stream = client.query(copyTo(`COPY (${sql}) TO STDOUT`))
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      signal?.throwIfAborted()
      decoder.push(chunk)
    }
    decoder.end()
    await client.query('COMMIT')
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {})
    throw dataError(err)
  }
  return tableOf(columns, builders)
}

const TAB = 0x09
const LF = 0x0a
const BACKSLASH = 0x5c
const UNESCAPE: Record<string, string> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' }

/**
 * COPY's text format: a row per line, fields split by tabs, NULL as \N, and a backslash before
 * a backslash, tab, newline, carriage return, backspace, form feed or vertical tab (COPY TO
 * writes no octal or hex escapes). A row may be split across chunks.
 */
class CopyTextDecoder {
  private rest: Buffer | null = null

  constructor(private readonly builders: ColumnBuilder[]) {}

  push(chunk: Buffer): void {
    const buf = this.rest ? Buffer.concat([this.rest, chunk]) : chunk
    let start = 0
    for (let nl = buf.indexOf(LF, start); nl >= 0; nl = buf.indexOf(LF, start)) {
      this.row(buf, start, nl)
      start = nl + 1
    }
    this.rest = start < buf.length ? Buffer.from(buf.subarray(start)) : null
  }

  end(): void {
    if (this.rest) throw new Error('COPY ended inside a row')
  }

  private row(buf: Buffer, s: number, e: number): void {
    const builders = this.builders
    let c = 0
    let f = s
    let escaped = false
    for (let i = s; i <= e; i++) {
      const b = i === e ? TAB : buf[i]
      if (b === BACKSLASH) {
        escaped = true
        i++ // the escaped byte is never a separator
      } else if (b === TAB) {
        if (c >= builders.length) throw new Error('COPY sent more fields than columns')
        if (escaped) builders[c++].append(field(buf, f, i))
        else builders[c++].appendBytes(buf, f, i)
        f = i + 1
        escaped = false
      }
    }
    if (c !== builders.length) throw new Error('COPY sent fewer fields than columns')
  }
}

/** A field holding a backslash: \N (NULL) or text with escapes. */
function field(buf: Buffer, s: number, e: number): string | null {
  if (e - s === 2 && buf[s + 1] === 0x4e) return null // \N
  return buf.toString('utf8', s, e).replace(/\\(.)/g, (_, x: string) => UNESCAPE[x] ?? x)
}

function dataError(err: unknown): unknown {
  if (err instanceof ValueTypeError)
    return new ConcordError(
      'source_data_error',
      `the source sent a value Concord cannot hold exactly: ${err.message}`,
      502,
      'cast the column to text in a view',
    )
  return err
}

function tableOf(columns: CatalogColumn[], builders: ColumnBuilder[]): Table {
  const data = builders.map((b) => b.finish())
  return {
    columns: columns.map((c, i) => ({
      name: c.name,
      type: c.type,
      nullable: c.nullable || data[i].valid !== null,
      ...(data[i].type === 'decimal' ? { scale: (data[i] as { scale: number }).scale } : {}),
    })),
    data,
    length: data[0]?.length ?? 0,
  }
}

export async function streamRows(
  client: pg.ClientBase,
  sql: string,
  params: unknown[],
  columns: CatalogColumn[],
  batchSize: number,
  signal?: AbortSignal,
): Promise<Table> {
  // exact: a database's 'b2 ' and '' are values, not text to tidy up
  const builders = columns.map((c) => columnBuilder(c, 4096, true))
  const { Cursor } = await loadDriver()
  const cursor = client.query(new Cursor(sql, params, { rowMode: 'array', types: TEXT_TYPES }))
  try {
    for (;;) {
      const rows = (await cursor.read(batchSize)) as unknown as (string | null)[][]
      signal?.throwIfAborted()
      if (rows.length === 0) break
      for (let c = 0; c < builders.length; c++) {
        const b = builders[c]
        for (let r = 0; r < rows.length; r++) b.append(rows[r][c])
      }
    }
  } catch (err) {
    throw dataError(err)
  } finally {
    await cursor.close().catch(() => {})
  }
  return tableOf(columns, builders)
}

/** Cancels the running statement through a separate connection when the signal aborts. */
function cancelOnAbort(client: pg.PoolClient, conn: string, signal?: AbortSignal): () => void {
  if (!signal) return () => {}
  const pid = (client as unknown as { processID?: number }).processID
  const onAbort = () => {
    // the driver is loaded: `client` came from it
    if (!pid || !driver) return
    const killer = new driver.pg.Client({ connectionString: conn, connectionTimeoutMillis: 5000 })
    killer
      .connect()
      .then(() => killer.query('SELECT pg_cancel_backend($1)', [pid]))
      .catch(() => {})
      .finally(() => killer.end().catch(() => {}))
  }
  signal.addEventListener('abort', onAbort, { once: true })
  return () => signal.removeEventListener('abort', onAbort)
}

/** The connection string with its password (userinfo or query parameter) shown as ***. */
export const redactUrl = redactConnection

/** A driver message with the connection string and every secret in it taken out. */
function scrub(message: string, conn: string): string {
  let out = message.split(conn).join(redactUrl(conn))
  for (const secret of connectionSecrets(conn)) out = out.split(secret).join('***')
  return out
}

function redactError(err: Error, conn: string): { message: string; code?: string } {
  return { message: scrub(err.message, conn), code: (err as { code?: string }).code }
}

const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'ETIMEDOUT',
  'ECONNRESET',
  'EHOSTUNREACH',
  '28P01',
  '28000',
  '3D000',
  '57P01',
  '57P02',
  '57P03',
  '08001',
  '08006',
  '08003',
  '08004',
])

export function unreachable(err: unknown, conn: string): ConcordError {
  const e = err as Error & { code?: string }
  return new ConcordError(
    'source_unreachable',
    `cannot reach the source database at ${redactUrl(conn).replace(/^postgres(ql)?:\/\/[^@]*@/, '')}: ${scrub(e.message || String(e), conn)}`,
    502,
    'check the host, port, database name and credentials, and that the server is running',
  )
}

export function sourceError(err: unknown, conn: string): Error {
  if (err instanceof ConcordError || (err as Error).name === 'AbortError') return err as Error
  const e = err as Error & { code?: string }
  if (e.code && UNREACHABLE_CODES.has(e.code)) return unreachable(err, conn)
  if (e.code === '57014') {
    return new ConcordError(
      'source_timeout',
      `the source query was cancelled: ${scrub(e.message, conn)}`,
      504,
      'narrow the scope or raise SOURCE_STATEMENT_TIMEOUT_MS',
    )
  }
  if (!e.code) return unreachable(err, conn)
  return new ConcordError(
    'source_query_failed',
    `the source database refused the query: ${scrub(e.message, conn)}`,
    502,
  )
}

export default (ctx: ConnectorContext) =>
  postgresConnector({ statementTimeoutMs: ctx.statementTimeoutMs, poolMax: ctx.poolMax, log: ctx.log })
