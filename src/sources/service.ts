// The source registry: register, describe, preview and scope sources. Routes and (later) the
// agent and the CLI call this; it owns the invariant that a failed registration or load leaves
// nothing behind.

import { realpath, rm } from 'node:fs/promises'
import { isAbsolute, join, relative, resolve, sep } from 'node:path'
import type { FastifyBaseLogger } from 'fastify'
import fp from 'fastify-plugin'
import type { Kysely } from 'kysely'
import { Value } from 'typebox/value'
import { type Attribution, type AuditService, SYSTEM } from '../audit/service.js'
import type { Database, SourceRow } from '../db/schema.js'
import { nearestNames } from '../language/similarity.js'
import { describeTable, type JsonRow, rowsAsJson } from '../engine/data/table.js'
import type { ColumnInfo, FilterCondition, NativeQuery } from '../engine/data/types.js'
import { ConcordError, notFound } from '../errors.js'
import { type FilterWarning, filterWarnings } from '../engine/load/filter.js'
import { EngineContext, type PushdownEngine, type Source, type SourceConnector } from './connector.js'
import { openConfig, sealConfig } from './secrets.js'
import type { ConnectorRegistry } from './registry.js'

export interface SourceView {
  alias: string
  type: string
  config: Record<string, unknown>
  columns: ColumnInfo[]
  created_at: string
}

export interface RegisterInput {
  alias: string
  type: string
  config: Record<string, unknown>
}

export interface LoadScopedResult {
  alias: string
  columns: ColumnInfo[]
  rows: JsonRow[]
  total_rows: number
  loaded_rows: number
  preview_rows: number
  native_query: NativeQuery
  warnings: FilterWarning[]
}

const ALIAS_RE = /^[A-Za-z][A-Za-z0-9_]{0,62}$/

/**
 * Sources belong to a workspace: every method takes the workspace it acts in, and aliases are
 * unique within one. Scoped tables are kept per workspace.
 */
/** The owner of a REST client's named set of scoped tables (apart from chat sessions' ids). */
export const scopeOwner = (scopeSet: string) => `rest:${scopeSet}`

export class SourcesService {
  private readonly engines = new Map<string, EngineContext>()

  constructor(
    private readonly db: Kysely<Database>,
    private readonly connectors: ConnectorRegistry,
    private readonly dataDir: string,
    private readonly log: FastifyBaseLogger,
    private readonly secretKey?: Buffer,
    /** Where run results are kept (the service's, even inside the data folder). */
    private readonly runsDir: string = join(dataDir, 'runs'),
    /** Registrations and deletions are appended to the audit trail with the change. */
    private readonly audit?: AuditService,
  ) {}

  /** The scoped tables loaded in a workspace. */
  /**
   * The scoped tables of a workspace (REST loads), or of one owner in it (a chat session's loads,
   * a REST client's named `scope_set`): two owners scoping the same source each keep their own.
   */
  engine(ws: string, owner = ''): EngineContext {
    const key = owner ? `${ws}\u0000${owner}` : ws
    let e = this.engines.get(key)
    if (!e) {
      e = new EngineContext()
      this.engines.set(key, e)
    }
    return e
  }

  /** Uploads are kept per workspace, so a path can tell whose an upload is. */
  uploadDir(ws: string): string {
    return join(this.dataDir, 'uploads', ws)
  }

  /**
   * The data folder also holds the service's own files: the embedded database (db/), run results
   * (runs/, or RUNS_DIR inside it) and every workspace's uploads. None of them is a source (their
   * contents would be another tenant's data, or the service's), except the caller's own uploads.
   * `path` is relative to the data folder with symlinks resolved, as the file connectors prepare it.
   */
  private async refuseReserved(ws: string, path: string): Promise<void> {
    const root = await realpath(this.dataDir).catch(() => resolve(this.dataDir))
    const runs = relative(root, await realpath(this.runsDir).catch(() => resolve(this.runsDir)))
    const within = (dir: string) =>
      dir !== '' && !dir.startsWith('..') && !isAbsolute(dir) && (path === dir || path.startsWith(dir + sep))
    const [top, owner] = path.split(sep)
    const reserved = top === 'db' || within(runs) || within('runs') || (top === 'uploads' && owner !== ws)
    if (reserved)
      throw new ConcordError(
        'path_reserved',
        `"${path}" is one of the service's own files, not a source`,
        400,
        "db/, runs/ and other workspaces' uploads belong to the service: put source files elsewhere in the data folder, or upload them",
      )
  }

  /** Checks a registration's config against its connector's schema, with a readable first error. */
  checkConfig(type: string, config: Record<string, unknown>): void {
    const connector = this.connectors.get(type)
    if (!Value.Check(connector.configSchema, config)) {
      const first = [...Value.Errors(connector.configSchema, config)][0]
      const at = first?.instancePath ? first.instancePath.slice(1) : 'config'
      throw new ConcordError(
        'invalid_source_config',
        `${type} source: ${at} ${first?.message ?? 'is invalid'}`,
        400,
        this.configHint(connector),
      )
    }
  }

  private configHint(connector: SourceConnector): string {
    const props = Object.keys((connector.configSchema as { properties?: object }).properties ?? {})
    return `a ${connector.type} source takes: alias, type, ${props.join(', ')}`
  }

  async register(ws: string, input: RegisterInput, by: Attribution = SYSTEM): Promise<SourceView> {
    if (!ALIAS_RE.test(input.alias)) {
      throw new ConcordError(
        'invalid_alias',
        `"${input.alias}" is not a valid alias`,
        400,
        'start with a letter; then letters, digits or _',
      )
    }
    this.checkConfig(input.type, input.config)
    if (await this.find(ws, input.alias)) {
      throw new ConcordError(
        'duplicate_alias',
        `a source named "${input.alias}" already exists`,
        409,
        'choose another alias or delete the existing source',
      )
    }
    const connector = this.connectors.get(input.type)
    // the connector sees the full connection string; the database gets it without its password
    const opened = openConfig(input.config, this.secretKey)
    const prepared = await connector.prepare(opened)
    if (typeof prepared.path === 'string') await this.refuseReserved(ws, prepared.path)
    const columns = await connector.describe({ alias: input.alias, type: input.type, config: prepared })
    // a header with U+0000 cannot be stored (PostgreSQL text/jsonb refuses it) nor named in a recipe
    const nul = columns.findIndex((c) => c.name.includes('\u0000'))
    if (nul >= 0)
      throw new ConcordError(
        'nul_character',
        `column ${nul + 1} of the source has a name containing a NUL character (U+0000)`,
        400,
        'rename the column without U+0000: PostgreSQL text cannot hold it, and no recipe could name it',
      )
    const passwordEnv = input.config.password_env
    const config = sealConfig(
      {
        ...prepared,
        ...(passwordEnv ? { password_env: passwordEnv } : {}),
        connection_string: opened.connection_string ?? prepared.connection_string,
      },
      this.secretKey,
    )
    try {
      const source = await this.db.transaction().execute(async (tx) => {
        const row = await tx
          .insertInto('sources')
          .values({
            workspace_id: ws,
            alias: input.alias,
            type: input.type,
            config: JSON.stringify(config),
            columns: JSON.stringify(columns),
          })
          .returningAll()
          .executeTakeFirstOrThrow()
        // the view, as GET shows it: credentials redacted
        const after = this.view(row)
        await this.audit?.record(tx, {
          workspace: ws,
          ...by,
          action: 'source.created',
          entity: { type: 'source', id: input.alias },
          after,
        })
        return after
      })
      this.log.info(
        { workspace: ws, alias: input.alias, type: input.type, columns: columns.length },
        'source registered',
      )
      return source
    } catch (err) {
      if ((err as { code?: string }).code === '23505') {
        throw new ConcordError('duplicate_alias', `a source named "${input.alias}" already exists`, 409)
      }
      throw err
    }
  }

  async list(ws: string): Promise<SourceView[]> {
    const rows = await this.db
      .selectFrom('sources')
      .selectAll()
      .where('workspace_id', '=', ws)
      .orderBy('alias')
      .execute()
    return rows.map((r) => this.view(r))
  }

  async get(ws: string, alias: string): Promise<SourceView> {
    return this.view(await this.row(ws, alias))
  }

  async remove(ws: string, alias: string, by: Attribution = SYSTEM): Promise<void> {
    const row = await this.row(ws, alias)
    await this.db.transaction().execute(async (tx) => {
      const deleted = await tx
        .deleteFrom('sources')
        .where('workspace_id', '=', ws)
        .where('alias', '=', alias)
        .returningAll()
        .executeTakeFirst()
      // deleted meanwhile by another request: that one recorded it
      if (!deleted) return
      await this.audit?.record(tx, {
        workspace: ws,
        ...by,
        action: 'source.deleted',
        entity: { type: 'source', id: alias },
        before: this.view(deleted),
      })
    })
    this.engine(ws).drop(alias)
    const path = typeof row.config.path === 'string' ? row.config.path : undefined
    if (path?.startsWith('uploads/')) await rm(join(this.dataDir, path), { force: true })
    this.log.info({ workspace: ws, alias }, 'source deleted')
  }

  async preview(ws: string, alias: string, limit: number, signal?: AbortSignal) {
    const source = await this.source(ws, alias)
    const scratch = new EngineContext()
    const scoped = await this.connectors.get(source.type).registerScoped(scratch, alias, source, [], { limit, signal })
    const rows = rowsAsJson(scoped.table, limit)
    return {
      alias,
      columns: describeTable(scoped.table),
      rows,
      total_rows: scoped.totalRows,
      preview_rows: rows.length,
    }
  }

  async loadScoped(
    ws: string,
    alias: string,
    body: { conditions?: FilterCondition[]; limit?: number; preview?: number },
    signal?: AbortSignal,
    /** Whose table this is (a chat session), else the workspace's. */
    owner = '',
  ): Promise<LoadScopedResult> {
    const source = await this.source(ws, alias)
    const connector = this.connectors.get(source.type)
    const conditions = body.conditions ?? []
    // Load into a scratch context first: the engine's scoped table changes only when the load succeeded.
    const scratch = new EngineContext()
    const scoped = await connector.registerScoped(scratch, alias, source, conditions, { limit: body.limit, signal })
    this.engine(ws, owner).register(scoped)
    const rows = rowsAsJson(scoped.table, body.preview ?? 20)
    this.log.info({ alias, total: scoped.totalRows, loaded: scoped.table.length }, 'scoped table loaded')
    return {
      alias,
      columns: describeTable(scoped.table),
      rows,
      total_rows: scoped.totalRows,
      loaded_rows: scoped.table.length,
      preview_rows: rows.length,
      native_query: scoped.nativeQuery,
      warnings: filterWarnings(describeTable(scoped.table), conditions),
    }
  }

  /** The engine `name` as `source`'s connector offers it, or pushdown_unavailable (registry.ts). */
  pushdownEngine(source: Source, name: string): PushdownEngine {
    return this.connectors.pushdownEngine(source, name)
  }

  /** The connector of a source type. */
  connector(type: string): SourceConnector {
    return this.connectors.get(type)
  }

  /** The stored source with its full (unredacted) config, for connectors. */
  async source(ws: string, alias: string): Promise<Source> {
    const row = await this.row(ws, alias)
    return { alias: row.alias, type: row.type, config: openConfig(row.config, this.secretKey) }
  }

  private async find(ws: string, alias: string): Promise<SourceRow | undefined> {
    return this.db
      .selectFrom('sources')
      .selectAll()
      .where('workspace_id', '=', ws)
      .where('alias', '=', alias)
      .executeTakeFirst()
  }

  private async row(ws: string, alias: string): Promise<SourceRow> {
    const row = await this.find(ws, alias)
    if (!row) {
      const all = await this.db.selectFrom('sources').select('alias').where('workspace_id', '=', ws).execute()
      const near = nearestNames(
        alias,
        all.map((r) => r.alias),
      )
      throw notFound(
        'source',
        alias,
        near.length
          ? `did you mean ${near.map((n) => `"${n}"`).join(', ')}?`
          : 'GET /api/sources lists the registered sources',
      )
    }
    return row
  }

  private view(row: SourceRow): SourceView {
    const connector = this.connectors.get(row.type)
    return {
      alias: row.alias,
      type: row.type,
      config: { ...connector.redact(row.config), ...credentials(row.config) },
      columns: row.columns,
      created_at: new Date(row.created_at).toISOString(),
    }
  }
}

/** How a source's password is kept, for views (never the password itself). */
function credentials(config: Record<string, unknown>): Record<string, unknown> {
  if (typeof config.password_env === 'string')
    return { password: `from the environment variable ${config.password_env}` }
  if (typeof config.password_enc === 'string' || typeof config.params_enc === 'string')
    return { password: 'stored encrypted' }
  return {}
}

declare module 'fastify' {
  interface FastifyInstance {
    sources: SourcesService
  }
}

export default fp(
  async (app) => {
    app.decorate(
      'sources',
      new SourcesService(
        app.db,
        app.connectors,
        app.config.dataDir,
        app.log,
        app.config.secretKey,
        app.config.runsDir,
        app.audit,
      ),
    )
  },
  { name: 'sources', dependencies: ['db', 'connectors', 'audit'] },
)
