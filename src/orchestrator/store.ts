// Sessions through Kysely (PGlite or PostgreSQL): the state row, the conversation, events and a
// snapshot after every turn. A turn's results are saved in one transaction; undo and redo move a
// cursor over the snapshots (the conversation the model sees is the one of the current snapshot),
// and a new turn after an undo drops what had been undone.

import { randomUUID } from 'node:crypto'
import { type Kysely, sql } from 'kysely'
import type { Database } from '../db/schema.js'
import { ConcordError, notFound } from '../errors.js'
import type { Message, TurnEvent } from './loop.js'
import { newSession, type PhaseName, type SessionState } from './session.js'

/**
 * A turn holds its session by a lease it renews while it runs (a third of the lease at a time);
 * a turn whose process died stops renewing, and the session is free once the lease has run out.
 * Only the holder of the token renews, saves or releases.
 */
export class Lease {
  private timer: NodeJS.Timeout | undefined
  private lost = false

  constructor(
    private readonly db: Kysely<Database>,
    readonly session: string,
    readonly token: string,
    private readonly ms: number,
  ) {
    this.timer = setInterval(() => void this.renew(), Math.max(10, Math.floor(ms / 3)))
    this.timer.unref()
  }

  async renew(): Promise<boolean> {
    if (this.lost) return false
    const renewed = await this.db
      .updateTable('sessions')
      .set({ busy_until: new Date(Date.now() + this.ms) })
      .where('id', '=', this.session)
      .where('busy_token', '=', this.token)
      .returning('id')
      .executeTakeFirst()
      .catch(() => null) // a database hiccup: the next renewal tries again
    if (renewed === undefined) this.lost = true
    return !this.lost
  }

  /** Ends the lease if it is still this turn's; a later holder's is left alone. */
  async release(): Promise<void> {
    clearInterval(this.timer)
    await this.db
      .updateTable('sessions')
      .set({ busy_until: null, busy_token: null })
      .where('id', '=', this.session)
      .where('busy_token', '=', this.token)
      .execute()
  }
}

/** The error of a turn that lost its session to another: it saves nothing. */
function leaseLost(): ConcordError {
  return new ConcordError(
    'lease_lost',
    'this turn outlived its hold on the session and another turn took it; nothing of this turn was saved',
    409,
    'send the message again',
  )
}

const JSON_FIELDS = [
  'sources_list',
  'schema_left',
  'schema_right',
  'scope_left',
  'scope_right',
  'sample_left',
  'sample_right',
  'proposals',
  'confirmed_pairs',
  'rules',
  'recipe_draft',
  'validation',
  'last_run',
  'artifacts',
] as const

function toRow(s: SessionState): Record<string, unknown> {
  const row: Record<string, unknown> = {
    phase: s.phase,
    status: s.status,
    left_alias: s.left_alias,
    right_alias: s.right_alias,
    validation_approved: s.validation_approved,
  }
  for (const f of JSON_FIELDS) row[f] = s[f] === null ? null : JSON.stringify(s[f])
  return row
}

function fromRow(row: Record<string, unknown>): SessionState {
  const s = newSession(String(row.id)) as unknown as Record<string, unknown>
  for (const k of Object.keys(s)) if (k in row && row[k] !== undefined) s[k] = row[k]
  return s as unknown as SessionState
}

export interface StoredEvent extends TurnEvent {
  seq: number
  turn: number
  created_at: string
}

export class SessionStore {
  constructor(private readonly db: Kysely<Database>) {}

  async create(ws: string): Promise<SessionState & { snapshot: number }> {
    const state = newSession(randomUUID())
    await this.db.transaction().execute(async (tx) => {
      await tx
        .insertInto('sessions')
        .values({ id: state.id, workspace_id: ws, ...toRow(state) } as never)
        .execute()
      await tx
        .insertInto('session_snapshots')
        .values({ session_id: state.id, seq: 0, state: JSON.stringify(state), messages: 0 })
        .execute()
    })
    return { ...state, snapshot: 0 }
  }

  async state(ws: string, id: string): Promise<SessionState & { snapshot: number }> {
    const row = await this.db
      .selectFrom('sessions')
      .selectAll()
      .where('workspace_id', '=', ws)
      .where('id', '=', id)
      .executeTakeFirst()
    if (!row) throw notFound('session', id, 'POST /api/chat without a session_id starts one')
    return { ...fromRow(row as unknown as Record<string, unknown>), snapshot: row.snapshot }
  }

  /** The conversation of the current snapshot. */
  async messages(id: string, snapshot: number): Promise<Message[]> {
    const snap = await this.db
      .selectFrom('session_snapshots')
      .select('messages')
      .where('session_id', '=', id)
      .where('seq', '=', snapshot)
      .executeTakeFirstOrThrow()
    const rows = await this.db
      .selectFrom('session_messages')
      .select(['role', 'content'])
      .where('session_id', '=', id)
      .where('seq', '<', snap.messages)
      .orderBy('seq')
      .execute()
    return rows.map((r) => ({ role: r.role as Message['role'], content: r.content as Message['content'] }))
  }

  /** Takes the session for one turn, or says it is busy (null). */
  async acquire(id: string, leaseMs: number): Promise<Lease | null> {
    const now = new Date()
    const token = randomUUID()
    const taken = await this.db
      .updateTable('sessions')
      .set({ busy_until: new Date(now.getTime() + leaseMs), busy_token: token })
      .where('id', '=', id)
      .where((eb) => eb.or([eb('busy_until', 'is', null), eb('busy_until', '<', now)]))
      .returning('id')
      .executeTakeFirst()
    return taken === undefined ? null : new Lease(this.db, id, token, leaseMs)
  }

  /** Inside a transaction: the session row locked, and still held by this lease (or leaseLost). */
  private async hold(tx: Kysely<Database>, lease: Lease): Promise<void> {
    const row = await tx
      .selectFrom('sessions')
      .select('busy_token')
      .where('id', '=', lease.session)
      .forUpdate()
      .executeTakeFirst()
    if (row?.busy_token !== lease.token) throw leaseLost()
  }

  /** A finished turn, all or nothing: state, new messages, events and the next snapshot. */
  async saveTurn(
    lease: Lease,
    state: SessionState & { snapshot: number },
    base: number,
    added: Message[],
    events: TurnEvent[],
  ): Promise<number> {
    const id = state.id
    return this.db.transaction().execute(async (tx) => {
      // only by the turn that holds the session: one that lost it would delete the next turn's work
      await this.hold(tx, lease)
      // a turn after an undo replaces what had been undone
      await tx.deleteFrom('session_snapshots').where('session_id', '=', id).where('seq', '>', state.snapshot).execute()
      await tx.deleteFrom('session_messages').where('session_id', '=', id).where('seq', '>=', base).execute()
      if (added.length)
        await tx
          .insertInto('session_messages')
          .values(
            added.map((m, n) => ({ session_id: id, seq: base + n, role: m.role, content: JSON.stringify(m.content) })),
          )
          .execute()
      const snapshot = state.snapshot + 1
      const { snapshot: _cursor, ...plain } = state
      await tx
        .insertInto('session_snapshots')
        .values({ session_id: id, seq: snapshot, state: JSON.stringify(plain), messages: base + added.length })
        .execute()
      await this.appendEvents(tx, id, snapshot, events)
      await tx
        .updateTable('sessions')
        .set({ ...toRow(state), snapshot, updated_at: new Date() } as never)
        .where('id', '=', id)
        .execute()
      return snapshot
    })
  }

  /**
   * Events outside a finished turn (a model error, a refused request): recorded, while nothing
   * else changes. A refused request records while another turn runs, so this takes the lock too.
   */
  async recordEvents(id: string, turn: number, events: TurnEvent[], lease?: Lease): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      if (lease) await this.hold(tx, lease)
      await this.appendEvents(tx, id, turn, events)
    })
  }

  /** Must run in a transaction: the session row's lock orders concurrent appends (seq is a key). */
  private async appendEvents(db: Kysely<Database>, id: string, turn: number, events: TurnEvent[]): Promise<void> {
    if (!events.length) return
    await db.selectFrom('sessions').select('id').where('id', '=', id).forUpdate().execute()
    const { max } = await db
      .selectFrom('session_events')
      .select((eb) => eb.fn.max<number>('seq').as('max'))
      .where('session_id', '=', id)
      .executeTakeFirstOrThrow()
    const start = max === null ? 0 : Number(max) + 1
    await db
      .insertInto('session_events')
      .values(
        events.map((e, n) => ({
          session_id: id,
          seq: start + n,
          turn,
          type: e.type,
          reason: e.reason ?? null,
          phase: e.phase,
          tool: e.tool ?? null,
          detail: e.detail === undefined ? null : JSON.stringify(e.detail),
        })),
      )
      .execute()
  }

  async events(ws: string, id: string, after = -1): Promise<StoredEvent[]> {
    await this.state(ws, id)
    const rows = await this.db
      .selectFrom('session_events')
      .selectAll()
      .where('session_id', '=', id)
      .where('seq', '>', after)
      .orderBy('seq')
      .execute()
    return rows.map((r) => ({
      seq: r.seq,
      turn: r.turn,
      type: r.type,
      reason: r.reason ?? '',
      phase: r.phase as PhaseName,
      tool: r.tool ?? undefined,
      detail: r.detail ?? undefined,
      created_at: new Date(r.created_at).toISOString(),
    }))
  }

  /** Moves the cursor one snapshot back (undo) or forward (redo); returns the restored state. */
  async move(ws: string, id: string, step: -1 | 1): Promise<(SessionState & { snapshot: number }) | null> {
    const current = await this.state(ws, id)
    const target = current.snapshot + step
    const snap = await this.db
      .selectFrom('session_snapshots')
      .select('state')
      .where('session_id', '=', id)
      .where('seq', '=', target)
      .executeTakeFirst()
    if (!snap || target < 0) return null
    const state = { ...(snap.state as unknown as SessionState), snapshot: target }
    await this.db
      .updateTable('sessions')
      .set({ ...toRow(state), snapshot: target, updated_at: new Date() } as never)
      .where('id', '=', id)
      .execute()
    return state
  }

  async counts(id: string): Promise<{ messages: number; snapshots: number }> {
    const m = await sql<{
      n: number
    }>`select count(*)::int as n from session_messages where session_id = ${id}`.execute(this.db)
    const s = await sql<{
      n: number
    }>`select count(*)::int as n from session_snapshots where session_id = ${id}`.execute(this.db)
    return { messages: Number(m.rows[0].n), snapshots: Number(s.rows[0].n) }
  }
}
