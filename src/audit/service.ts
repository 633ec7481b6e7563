// The audit trail: every change to sources, recipes, runs, keys, workspaces, webhooks (and, from
// their services, exceptions and schedules) appended to its workspace's chain, in the transaction
// of the change itself — a change that rolls back leaves no row, and no row exists without its
// change. Each row's hash covers its content and the previous row's hash (chain.ts), so a row
// changed or removed afterwards breaks the chain at that row, which verify() names.
//
// One chain per workspace: workspaces never wait for each other. Within one, appends queue on the
// chain's head row (audit_heads, locked FOR UPDATE until the appending transaction ends), so seqs
// are consecutive and each row links to the one committed before it; (workspace_id, seq) is the
// primary key besides.

import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Kysely, Transaction } from 'kysely'
import type { Principal } from '../auth/keys.js'
import type { AuditLogTable, Database } from '../db/schema.js'
import { ConcordError } from '../errors.js'
import { canonicalJson, GENESIS, rowHash } from './chain.js'

export type Executor = Kysely<Database> | Transaction<Database>

export const ENTITY_TYPES = [
  'source',
  'recipe',
  'run',
  'exception',
  'match',
  'key',
  'schedule',
  'webhook',
  'workspace',
] as const
export type EntityType = (typeof ENTITY_TYPES)[number]

export interface AuditEntry {
  workspace: string
  /** 'key:<api key id>' | 'bootstrap' | 'open' | 'system' | 'schedule:<id>' | 'chat:<session id>' … */
  actor: string
  /** '<entity type>.<verb>': 'source.created', 'recipe.updated', 'run.started', 'key.revoked', … */
  action: string
  entity: { type: EntityType; id: string }
  /** The entity before the change (absent for a creation). */
  before?: unknown
  /** The entity after the change (absent for a deletion). */
  after?: unknown
  request_id?: string
}

/** Who made a change, as services receive it from routes (or as 'system' for the service's own). */
export interface Attribution {
  actor: string
  request_id?: string
}

export const SYSTEM: Attribution = { actor: 'system' }

/** The actor a request's principal stands for: its key, the bootstrap key, or open mode. */
export function actorOf(principal: Principal | null | undefined): string {
  if (!principal) return 'system'
  if (principal.keyId) return `key:${principal.keyId}`
  return principal.open ? 'open' : 'bootstrap'
}

/** A request's actor and id, for the services it calls. */
export function attributionOf(request: FastifyRequest): Attribution {
  return { actor: actorOf(request.principal), request_id: request.id }
}

export interface AuditView {
  seq: number
  at: string
  actor: string
  action: string
  entity: { type: string; id: string }
  before: unknown
  after: unknown
  request_id: string | null
  prev_hash: string
  hash: string
}

export interface AuditQuery {
  entity_type?: string
  entity_id?: string
  action?: string
  actor?: string
  /** ISO times: from inclusive, to exclusive. */
  from?: string
  to?: string
  order?: 'asc' | 'desc'
  /** Continue after this seq (exclusive), in the order asked for. */
  cursor?: number
  limit?: number
}

export interface VerifyReport {
  ok: boolean
  /** Rows whose link was checked and found good. */
  checked: number
  /** The chain's head as stored: keep its hash elsewhere to detect a rewrite of the whole chain. */
  head: { seq: number; hash: string } | null
  first_broken?: { seq: number; reason: string }
}

/** Rows read per query while verifying: the event loop is given back between batches. */
const VERIFY_BATCH = 1000
/** Rows per INSERT of a bulk append (12 parameters a row, well under PostgreSQL's 65,535). */
const INSERT_BATCH = 500

export class AuditService {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * Appends one row to the workspace's chain, in the caller's transaction (one is opened when
   * `db` is not a transaction). The chain's head stays locked until that transaction ends: append
   * after the change's other writes, so the lock is held briefly.
   */
  async record(db: Executor, entry: AuditEntry): Promise<void> {
    return this.recordMany(db, [entry])
  }

  /**
   * Appends several rows (a bulk operation's), in order, in the caller's transaction: each
   * workspace's head is locked once and the rows are inserted in batches, instead of four
   * statements per row.
   */
  async recordMany(db: Executor, entries: AuditEntry[]): Promise<void> {
    if (!entries.length) return
    if (!db.isTransaction) return db.transaction().execute((tx) => this.recordMany(tx, entries))
    const byWorkspace = new Map<string, AuditEntry[]>()
    for (const entry of entries) {
      if (!ENTITY_TYPES.includes(entry.entity.type)) throw new Error(`unknown audit entity type ${entry.entity.type}`)
      if (!entry.actor || !entry.action) throw new Error('an audit entry needs an actor and an action')
      byWorkspace.set(entry.workspace, [...(byWorkspace.get(entry.workspace) ?? []), entry])
    }
    // heads locked in a fixed order: two bulk appends over the same workspaces cannot deadlock
    for (const ws of [...byWorkspace.keys()].sort()) await this.append(db, ws, byWorkspace.get(ws)!)
  }

  private async append(tx: Executor, ws: string, entries: AuditEntry[]): Promise<void> {
    const lockHead = () =>
      tx.selectFrom('audit_heads').select(['seq', 'hash']).where('workspace_id', '=', ws).forUpdate().executeTakeFirst()
    let head = await lockHead()
    if (!head) {
      // the chain's first append: two at once both insert, one waits on the key and skips
      await tx
        .insertInto('audit_heads')
        .values({ workspace_id: ws, seq: 0, hash: GENESIS })
        .onConflict((oc) => oc.column('workspace_id').doNothing())
        .execute()
      head = await lockHead()
      if (!head) throw new Error(`audit chain head of ${ws} could not be created`)
    }
    let seq = Number(head.seq)
    let prev = head.hash
    // the time is taken with the head locked, so a chain's times follow its seqs on one clock
    const at = new Date().toISOString()
    const rows = entries.map((entry) => {
      const link = {
        workspace_id: ws,
        seq: ++seq,
        at,
        actor: entry.actor,
        action: entry.action,
        entity_type: entry.entity.type,
        entity_id: entry.entity.id,
        before: entry.before === undefined || entry.before === null ? null : canonicalJson(entry.before),
        after: entry.after === undefined || entry.after === null ? null : canonicalJson(entry.after),
        request_id: entry.request_id ?? null,
        prev_hash: prev,
      }
      prev = rowHash(link)
      return { ...link, hash: prev }
    })
    for (let i = 0; i < rows.length; i += INSERT_BATCH)
      await tx
        .insertInto('audit_log')
        .values(rows.slice(i, i + INSERT_BATCH))
        .execute()
    await tx.updateTable('audit_heads').set({ seq, hash: prev }).where('workspace_id', '=', ws).execute()
  }

  /** A page of a workspace's audit rows, newest first by default, filtered. */
  async list(ws: string, q: AuditQuery): Promise<{ entries: AuditView[]; next_cursor: number | null }> {
    const order = q.order ?? 'desc'
    const limit = q.limit ?? 100
    let query = this.db.selectFrom('audit_log').selectAll().where('workspace_id', '=', ws)
    if (q.entity_type !== undefined) query = query.where('entity_type', '=', q.entity_type)
    if (q.entity_id !== undefined) query = query.where('entity_id', '=', q.entity_id)
    if (q.action !== undefined) query = query.where('action', '=', q.action)
    if (q.actor !== undefined) query = query.where('actor', '=', q.actor)
    // stored times are ISO text of one width and zone: text order is time order
    if (q.from !== undefined) query = query.where('at', '>=', isoTime('from', q.from))
    if (q.to !== undefined) query = query.where('at', '<', isoTime('to', q.to))
    if (q.cursor !== undefined) query = query.where('seq', order === 'asc' ? '>' : '<', q.cursor)
    const rows = await query
      .orderBy('seq', order)
      .limit(limit + 1)
      .execute()
    const more = rows.length > limit
    const page = rows.slice(0, limit)
    return { entries: page.map(view), next_cursor: more ? Number(page[page.length - 1].seq) : null }
  }

  /**
   * Walks the workspace's chain from its first row to the head it had when the walk began,
   * recomputing every hash: the first row that is missing, out of place or changed is named.
   * Rows appended during the walk are beyond that head and left for the next verification.
   */
  async verify(ws: string): Promise<VerifyReport> {
    const head = await this.db
      .selectFrom('audit_heads')
      .select(['seq', 'hash'])
      .where('workspace_id', '=', ws)
      .executeTakeFirst()
    const headView = head ? { seq: Number(head.seq), hash: head.hash } : null
    const last = headView?.seq ?? Number.MAX_SAFE_INTEGER
    let expected = 1
    let prev = GENESIS
    const broken = (seq: number, reason: string): VerifyReport => ({
      ok: false,
      checked: expected - 1,
      head: headView,
      first_broken: { seq, reason },
    })
    for (;;) {
      const rows = await this.db
        .selectFrom('audit_log')
        .selectAll()
        .where('workspace_id', '=', ws)
        .where('seq', '>=', expected)
        .where('seq', '<=', last)
        .orderBy('seq')
        .limit(VERIFY_BATCH)
        .execute()
      for (const row of rows) {
        const seq = Number(row.seq)
        if (seq !== expected)
          return broken(
            expected,
            `row ${expected} is missing: the chain goes from ${expected - 1} to ${seq} (deleted, or never committed)`,
          )
        if (row.prev_hash !== prev)
          return broken(seq, `its prev_hash does not match the hash of row ${seq - 1}: one of the two was rewritten`)
        if (rowHash({ ...row, seq }) !== row.hash)
          return broken(seq, 'its content does not match its hash: the row was changed after it was written')
        prev = row.hash
        expected++
      }
      if (rows.length < VERIFY_BATCH) break
    }
    const walked = expected - 1
    if (!headView) {
      if (walked > 0) return broken(walked, 'the chain has rows but no head: the head row was deleted')
      return { ok: true, checked: 0, head: null }
    }
    if (walked < headView.seq)
      return broken(
        walked + 1,
        `row ${walked + 1} is missing: the head says the chain ends at ${headView.seq}, its rows end at ${walked}`,
      )
    if (headView.hash !== prev)
      return broken(
        headView.seq,
        `the head's hash does not match row ${headView.seq}: the head or the row was rewritten`,
      )
    return { ok: true, checked: walked, head: headView }
  }
}

function isoTime(name: string, text: string): string {
  const t = new Date(text)
  if (Number.isNaN(t.getTime()))
    throw new ConcordError(
      'invalid_time',
      `${name} is not a date-time: "${text}"`,
      400,
      'an ISO 8601 time, e.g. 2025-01-31T00:00:00Z',
    )
  return t.toISOString()
}

/** A stored snapshot as JSON; text that no longer parses (a tampered row) is shown as it is. */
function stored(text: string | null): unknown {
  if (text === null) return null
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

function view(row: AuditLogTable): AuditView {
  return {
    seq: Number(row.seq),
    at: row.at,
    actor: row.actor,
    action: row.action,
    entity: { type: row.entity_type, id: row.entity_id },
    before: stored(row.before),
    after: stored(row.after),
    request_id: row.request_id,
    prev_hash: row.prev_hash,
    hash: row.hash,
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    audit: AuditService
  }
}

export default fp(
  async (app) => {
    app.decorate('audit', new AuditService(app.db))
  },
  { name: 'audit', dependencies: ['db'] },
)
