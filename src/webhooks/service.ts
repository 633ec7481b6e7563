// Webhooks: a workspace subscribes URLs to events; services emit events into the outbox inside
// the transaction of the change that caused them (a transactional outbox: the event exists if and
// only if the change committed, and survives any crash after it); the dispatcher delivers the
// outbox, signed, with retries (dispatcher.ts). Receivers on private networks are refused
// (guard.ts). Subscription changes are audited; their secret never leaves the service but once.

import { randomBytes, randomUUID } from 'node:crypto'
import fp from 'fastify-plugin'
import type { Kysely } from 'kysely'
import { type Attribution, type AuditService, type Executor, SYSTEM } from '../audit/service.js'
import type { Database, DeliveryStatus, WebhooksTable } from '../db/schema.js'
import { ConcordError, notFound } from '../errors.js'
import { decrypt, encrypt } from '../sources/secrets.js'
import { Dispatcher } from './dispatcher.js'
import { ReceiverGuard } from './guard.js'
import type { WebhookEvent } from './schema.js'

export type { WebhookEvent } from './schema.js'

export interface WebhookView {
  id: string
  url: string
  events: WebhookEvent[]
  active: boolean
  created_at: string
  updated_at: string
}

export interface DeliveryView {
  id: string
  event: WebhookEvent
  status: DeliveryStatus
  attempts: { attempt: number; status_code: number | null; error: string | null; duration_ms: number; at: string }[]
  next_attempt_at: string | null
  created_at: string
  finished_at: string | null
}

export interface WebhookInput {
  url: string
  events: WebhookEvent[]
  active?: boolean
}

const iso = (d: Date | string) => new Date(d).toISOString()

/** Outbox rows per INSERT of a bulk emit. */
const OUTBOX_BATCH = 1000

export class WebhooksService {
  constructor(
    private readonly db: Kysely<Database>,
    readonly guard: ReceiverGuard,
    readonly dispatcher: Dispatcher,
    private readonly secretKey: Buffer | undefined,
    private readonly audit: AuditService,
  ) {}

  /**
   * One outbox row per active subscription of `workspace` to `event`, written with `db` — the
   * caller's transaction, so the event is stored exactly when the change it reports commits.
   * The body (and so the signature's input) is fixed now: every attempt sends the same bytes.
   */
  async emit(db: Executor, workspace: string, event: WebhookEvent, payload: object): Promise<void> {
    return this.emitMany(db, workspace, event, [payload])
  }

  /** Several events of one kind (a bulk operation's): one lookup of the subscriptions, batched inserts. */
  async emitMany(db: Executor, workspace: string, event: WebhookEvent, payloads: object[]): Promise<void> {
    if (!payloads.length) return
    const subscribed = (
      await db
        .selectFrom('webhooks')
        .select(['id', 'events'])
        .where('workspace_id', '=', workspace)
        .where('active', '=', true)
        .orderBy('id')
        .execute()
    ).filter((w) => (JSON.parse(w.events) as string[]).includes(event))
    if (!subscribed.length) return
    const createdAt = new Date().toISOString()
    const rows = payloads.flatMap((data) =>
      subscribed.map((w) => {
        const id = randomUUID()
        const body = JSON.stringify({ id, event, created_at: createdAt, workspace, data })
        return { id, webhook_id: w.id, workspace_id: workspace, event, body }
      }),
    )
    for (let i = 0; i < rows.length; i += OUTBOX_BATCH)
      await db
        .insertInto('webhook_outbox')
        .values(rows.slice(i, i + OUTBOX_BATCH))
        .execute()
  }

  async create(ws: string, input: WebhookInput, by: Attribution = SYSTEM): Promise<WebhookView & { secret: string }> {
    const url = await this.guard.checkUrl(input.url)
    const secret = `whsec_${randomBytes(32).toString('base64url')}`
    const id = randomUUID()
    const view = await this.db.transaction().execute(async (tx) => {
      const row = await tx
        .insertInto('webhooks')
        .values({
          id,
          workspace_id: ws,
          url: url.href,
          events: JSON.stringify(unique(input.events)),
          secret: this.secretKey ? encrypt(this.secretKey, secret) : secret,
          active: input.active ?? true,
        })
        .returningAll()
        .executeTakeFirstOrThrow()
      const created = webhookView(row)
      await this.audit.record(tx, {
        workspace: ws,
        ...by,
        action: 'webhook.created',
        entity: { type: 'webhook', id },
        after: created,
      })
      return created
    })
    return { ...view, secret }
  }

  async list(ws: string): Promise<WebhookView[]> {
    const rows = await this.db
      .selectFrom('webhooks')
      .selectAll()
      .where('workspace_id', '=', ws)
      .orderBy('created_at')
      .orderBy('id')
      .execute()
    return rows.map(webhookView)
  }

  async get(ws: string, id: string): Promise<WebhookView> {
    return webhookView(await this.row(this.db, ws, id))
  }

  async update(ws: string, id: string, patch: Partial<WebhookInput>, by: Attribution = SYSTEM): Promise<WebhookView> {
    const url = patch.url === undefined ? undefined : (await this.guard.checkUrl(patch.url)).href
    return this.db.transaction().execute(async (tx) => {
      const before = webhookView(await this.row(tx, ws, id, true))
      const row = await tx
        .updateTable('webhooks')
        .set({
          ...(url === undefined ? {} : { url }),
          ...(patch.events === undefined ? {} : { events: JSON.stringify(unique(patch.events)) }),
          ...(patch.active === undefined ? {} : { active: patch.active }),
          updated_at: new Date(),
        })
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirstOrThrow()
      const after = webhookView(row)
      await this.audit.record(tx, {
        workspace: ws,
        ...by,
        action: 'webhook.updated',
        entity: { type: 'webhook', id },
        before,
        after,
      })
      return after
    })
  }

  /** Deletes the subscription with its outbox rows: its pending deliveries are dropped. */
  async remove(ws: string, id: string, by: Attribution = SYSTEM): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      const before = webhookView(await this.row(tx, ws, id, true))
      await tx.deleteFrom('webhooks').where('id', '=', id).execute()
      await this.audit.record(tx, {
        workspace: ws,
        ...by,
        action: 'webhook.deleted',
        entity: { type: 'webhook', id },
        before,
      })
    })
  }

  /** A subscription's deliveries, newest first, each with its attempts. */
  async deliveries(
    ws: string,
    id: string,
    opts: { offset: number; limit: number; status?: DeliveryStatus },
  ): Promise<{ deliveries: DeliveryView[]; total: number; offset: number; limit: number }> {
    await this.row(this.db, ws, id)
    let query = this.db.selectFrom('webhook_outbox').where('webhook_id', '=', id)
    if (opts.status) query = query.where('status', '=', opts.status)
    const rows = await query
      .selectAll()
      .orderBy('created_at', 'desc')
      .orderBy('id')
      .limit(opts.limit)
      .offset(opts.offset)
      .execute()
    const { count } = await query.select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow()
    const attempts = rows.length
      ? await this.db
          .selectFrom('webhook_attempts')
          .selectAll()
          .where(
            'delivery_id',
            'in',
            rows.map((r) => r.id),
          )
          .orderBy('attempt')
          .execute()
      : []
    return {
      deliveries: rows.map((r) => ({
        id: r.id,
        event: r.event as WebhookEvent,
        status: r.status,
        attempts: attempts
          .filter((a) => a.delivery_id === r.id)
          .map((a) => ({
            attempt: a.attempt,
            status_code: a.status_code,
            error: a.error,
            duration_ms: a.duration_ms,
            at: iso(a.at),
          })),
        next_attempt_at: r.status === 'pending' ? iso(r.next_attempt_at) : null,
        created_at: iso(r.created_at),
        finished_at: r.finished_at ? iso(r.finished_at) : null,
      })),
      total: Number(count),
      offset: opts.offset,
      limit: opts.limit,
    }
  }

  private async row(db: Executor, ws: string, id: string, lock = false) {
    let query = db.selectFrom('webhooks').selectAll().where('workspace_id', '=', ws).where('id', '=', id)
    if (lock) query = query.forUpdate()
    const row = await query.executeTakeFirst()
    if (!row) throw notFound('webhook', id, 'GET /api/webhooks lists the subscriptions of your workspace')
    return row
  }
}

/** A subscription's signing secret from its stored form (sealed under CONCORD_SECRET_KEY, or as generated). */
export function openSecret(stored: string, key: Buffer | undefined): string {
  if (stored.startsWith('whsec_')) return stored
  if (!key) throw new Error('the subscription secret is sealed and CONCORD_SECRET_KEY is not set: it cannot sign')
  return decrypt(key, stored)
}

function unique(events: WebhookEvent[]): WebhookEvent[] {
  if (!events.length)
    throw new ConcordError('invalid_request', 'a subscription needs at least one event', 400, 'e.g. ["run.completed"]')
  return [...new Set(events)]
}

function webhookView(
  row: Pick<WebhooksTable, 'id' | 'url' | 'events'> & { active: boolean; created_at: Date; updated_at: Date },
): WebhookView {
  return {
    id: row.id,
    url: row.url,
    events: JSON.parse(row.events) as WebhookEvent[],
    active: row.active,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    webhooks: WebhooksService
  }
}

export default fp(
  async (app) => {
    const config = app.config.webhooks
    const guard = new ReceiverGuard(config)
    const dispatcher = new Dispatcher(app.db, guard, config, app.log.child({ module: 'webhooks' }), (stored) =>
      openSecret(stored, app.config.secretKey),
    )
    app.decorate('webhooks', new WebhooksService(app.db, guard, dispatcher, app.config.secretKey, app.audit))
    // delivering starts once the app is ready, and stops (in-flight attempts aborted, their
    // rows released for the next process) before the database closes
    app.addHook('onReady', () => dispatcher.start(app.database.kind === 'pglite'))
    app.addHook('onClose', () => dispatcher.stop())
  },
  { name: 'webhooks', dependencies: ['db', 'audit'] },
)
