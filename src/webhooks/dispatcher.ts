// Delivers the outbox. Every WEBHOOK_POLL_MS the dispatcher claims due rows — pending, due, not
// leased, of an active subscription — by leasing them to this instance in one UPDATE over a
// `FOR UPDATE SKIP LOCKED` selection: instances sharing a PostgreSQL database each get other
// rows, and a row leased by an instance that died is claimed again once its lease lapses. The
// claim counts the attempt. The POST happens outside any transaction; its outcome (delivered,
// retry later with backoff, dead after WEBHOOK_MAX_ATTEMPTS) and the attempt's log row are then
// written together. A receiver may so see one delivery id more than once (a crash between its
// 2xx and our write), never a delivery id it answered being dropped: at least once, and exactly
// once for a receiver that deduplicates by the id.

import http from 'node:http'
import https from 'node:https'
import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import { type Kysely, sql } from 'kysely'
import type { WebhookConfig } from '../config.js'
import type { Database } from '../db/schema.js'
import type { ReceiverGuard } from './guard.js'
import { DELIVERY_HEADERS, sign } from './signature.js'

interface Claimed {
  id: string
  webhook_id: string
  event: string
  body: string
  attempts: number
}

interface Outcome {
  status: number | null
  error: string | null
  duration: number
  /** The attempt was cut short by this instance stopping: retried at once, never the one that kills it. */
  aborted: boolean
}

/** How often finished deliveries past their retention are deleted. */
const PRUNE_EVERY_MS = 3_600_000

/** How long a claim holds a row: past one attempt's timeout, so a live attempt is never claimed twice. */
const leaseMs = (timeoutMs: number) => 2 * timeoutMs + 5000

export class Dispatcher {
  /** This dispatcher's lease owner name. */
  readonly owner = randomUUID()
  private timer: NodeJS.Timeout | undefined
  private stopped = true
  private ticking = false
  /** The last claim filled every free slot: more may be due, so the next tick comes sooner. */
  private backlog = false
  private readonly inFlight = new Map<string, { abort: AbortController; done: Promise<void> }>()
  /** When finished deliveries were last pruned (ms). */
  private prunedAt = 0

  constructor(
    private readonly db: Kysely<Database>,
    private readonly guard: ReceiverGuard,
    private readonly config: WebhookConfig,
    private readonly log: FastifyBaseLogger,
    /** The signing secret of a subscription, from its stored (possibly sealed) form. */
    private readonly secretOf: (stored: string) => string,
  ) {}

  /**
   * Starts polling. `soleInstance`: no other process can hold a lease (the embedded database
   * belongs to one process), so leases left by a previous process are released at once instead
   * of lapsing.
   */
  async start(soleInstance: boolean): Promise<void> {
    if (soleInstance)
      await this.db
        .updateTable('webhook_outbox')
        .set({ lease_owner: null, lease_until: null })
        .where('status', '=', 'pending')
        .where('lease_owner', 'is not', null)
        .execute()
    this.stopped = false
    this.schedule(0)
  }

  /** Stops polling, aborts the attempts in flight (they are retried at once by whoever runs next) and waits for their bookkeeping. */
  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    for (const { abort } of this.inFlight.values()) abort.abort()
    await Promise.allSettled([...this.inFlight.values()].map((f) => f.done))
  }

  private schedule(ms: number): void {
    if (this.stopped) return
    clearTimeout(this.timer)
    this.timer = setTimeout(() => void this.tick(), ms)
    // the HTTP server keeps a service alive; the dispatcher alone must not keep a process up
    this.timer.unref()
  }

  private async tick(): Promise<void> {
    if (this.stopped || this.ticking) return
    this.ticking = true
    try {
      if (Date.now() - this.prunedAt > PRUNE_EVERY_MS) await this.prune()
      const room = this.config.concurrency - this.inFlight.size
      if (room > 0) {
        const claimed = await this.claim(room)
        this.backlog = claimed.length === room
        for (const row of claimed) this.launch(row)
      }
    } catch (err) {
      this.log.warn({ err }, 'webhook dispatch: claiming deliveries failed')
    } finally {
      this.ticking = false
      this.schedule(this.config.pollMs)
    }
  }

  /** Forgets deliveries finished more than WEBHOOK_RETENTION_DAYS ago (their attempts go with them). */
  async prune(): Promise<number> {
    this.prunedAt = Date.now()
    const rows = await this.db
      .deleteFrom('webhook_outbox')
      .where('status', 'in', ['delivered', 'dead'])
      .where('finished_at', '<', sql<Date>`now() - ${`${this.config.retentionDays} days`}::interval`)
      .executeTakeFirst()
    return Number(rows.numDeletedRows)
  }

  private async claim(n: number): Promise<Claimed[]> {
    const lease = `${leaseMs(this.config.timeoutMs)} milliseconds`
    const { rows } = await sql<Claimed>`
      UPDATE webhook_outbox
      SET lease_owner = ${this.owner}, lease_until = now() + ${lease}::interval, attempts = attempts + 1
      WHERE id IN (
        SELECT o.id FROM webhook_outbox o
        WHERE o.status = 'pending' AND o.next_attempt_at <= now()
          AND (o.lease_until IS NULL OR o.lease_until < now())
          AND EXISTS (SELECT 1 FROM webhooks w WHERE w.id = o.webhook_id AND w.active)
        ORDER BY o.next_attempt_at
        LIMIT ${n}
        FOR UPDATE SKIP LOCKED
      )
      RETURNING id, webhook_id, event, body, attempts`.execute(this.db)
    return rows
  }

  private launch(row: Claimed): void {
    const abort = new AbortController()
    const done = this.deliver(row, abort.signal)
      .catch((err) => this.log.error({ err, delivery: row.id }, 'webhook delivery bookkeeping failed'))
      .finally(() => {
        this.inFlight.delete(row.id)
        if (this.backlog) this.schedule(0)
      })
    this.inFlight.set(row.id, { abort, done })
  }

  private async deliver(row: Claimed, signal: AbortSignal): Promise<void> {
    const hook = await this.db
      .selectFrom('webhooks')
      .select(['url', 'secret'])
      .where('id', '=', row.webhook_id)
      .executeTakeFirst()
    if (!hook) return // deleted meanwhile: its outbox rows went with it
    const outcome = await this.post(hook.url, hook.secret, row, signal)
    await this.settle(row, outcome)
  }

  /** One attempt: the signed POST, its status or error, and how long it took. */
  private async post(url: string, storedSecret: string, row: Claimed, signal: AbortSignal): Promise<Outcome> {
    const started = performance.now()
    const elapsed = () => Math.round(performance.now() - started)
    const timeout = AbortSignal.timeout(this.config.timeoutMs)
    try {
      const target = new URL(url)
      const refused = this.guard.literalRefusal(target)
      if (refused) return { status: null, error: `refused: ${refused}`, duration: elapsed(), aborted: false }
      const timestamp = Math.floor(Date.now() / 1000)
      const status = await send(
        target,
        row.body,
        {
          'content-type': 'application/json',
          'user-agent': 'Concord-Webhooks/1',
          [DELIVERY_HEADERS.id]: row.id,
          [DELIVERY_HEADERS.event]: row.event,
          [DELIVERY_HEADERS.timestamp]: String(timestamp),
          [DELIVERY_HEADERS.signature]: sign(this.secretOf(storedSecret), timestamp, row.body),
        },
        AbortSignal.any([signal, timeout]),
        this.guard,
      )
      const ok = status >= 200 && status < 300
      return { status, error: ok ? null : `the receiver answered ${status}`, duration: elapsed(), aborted: false }
    } catch (err) {
      if (signal.aborted)
        return { status: null, error: 'aborted: the service stopped', duration: elapsed(), aborted: true }
      const e = err as Error & { code?: string }
      const message = timeout.aborted ? `no answer within ${this.config.timeoutMs} ms` : e.message
      return { status: null, error: message || e.code || 'the request failed', duration: elapsed(), aborted: false }
    }
  }

  /** Records the attempt and moves the row: delivered, due again after a backoff, or dead. */
  private async settle(row: Claimed, outcome: Outcome): Promise<void> {
    const delivered = outcome.error === null
    const dead = !delivered && !outcome.aborted && row.attempts >= this.config.maxAttempts
    const delay = delivered || outcome.aborted ? 0 : this.backoff(row.attempts)
    await this.db.transaction().execute(async (tx) => {
      await tx
        .insertInto('webhook_attempts')
        .values({
          delivery_id: row.id,
          attempt: row.attempts,
          webhook_id: row.webhook_id,
          status_code: outcome.status,
          error: outcome.error,
          duration_ms: outcome.duration,
        })
        .onConflict((oc) => oc.columns(['delivery_id', 'attempt']).doNothing())
        .execute()
      let update = tx
        .updateTable('webhook_outbox')
        .set({
          status: delivered ? 'delivered' : dead ? 'dead' : 'pending',
          next_attempt_at: sql`now() + ${`${delay} milliseconds`}::interval`,
          lease_owner: null,
          lease_until: null,
          last_error: outcome.error,
          finished_at: delivered || dead ? sql`now()` : null,
        })
        .where('id', '=', row.id)
        .where('status', '=', 'pending')
      // a success counts even if the lease lapsed meanwhile; a failure only moves a row still ours
      if (!delivered) update = update.where('lease_owner', '=', this.owner)
      await update.execute()
    })
    const level = delivered ? 'debug' : dead ? 'warn' : 'info'
    this.log[level](
      { delivery: row.id, event: row.event, attempt: row.attempts, status: outcome.status, error: outcome.error, dead },
      delivered ? 'webhook delivered' : 'webhook attempt failed',
    )
  }

  /** Exponential backoff with equal jitter: between half and all of base·2^(attempt-1), capped. */
  backoff(attempt: number): number {
    const full = Math.min(this.config.backoffMaxMs, this.config.backoffMs * 2 ** Math.min(attempt - 1, 30))
    return Math.round(full / 2 + (Math.random() * full) / 2)
  }
}

/**
 * POSTs the body and resolves with the status code once the response's head arrives (its body is
 * not read). Redirects are not followed: a 3xx is a failed attempt (following one would also go
 * around the receiver check). Names are resolved through the guard's lookup.
 */
function send(
  url: URL,
  body: string,
  headers: Record<string, string>,
  signal: AbortSignal,
  guard: ReceiverGuard,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = (url.protocol === 'https:' ? https : http).request(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        signal,
        lookup: guard.lookup,
        // one connection per attempt: a pooled socket would skip the lookup, and its check
        agent: false,
      },
      (response) => {
        resolve(response.statusCode ?? 0)
        response.destroy()
      },
    )
    request.on('error', reject)
    request.end(body)
  })
}
