// The one seam every change to exceptions and schedules passes through, inside the transaction
// that makes it: an audit trail appends what changed, webhooks enqueue the event it implies, both
// in the caller's transaction, so a change that rolls back leaves neither behind.
//
// Event granularity: webhooks get one event per action, never one per record a run touched:
//   exception.created   one per run that created exceptions (counts and amount at risk by reason,
//                       the run and recipe), and one per exception an operator's unmatch creates
//                       (with the ids: an unmatch creates a handful)
//   exception.resolved  one per resolution action — a manual match, a write-off, an accept, a bulk
//                       action (listing every id it resolved), or a run that matched carried items
//                       (the run, the count, and the ids up to RESOLVED_IDS_IN_EVENT)
// Assignments, comments and schedule changes imply no webhook event (event: undefined).

import type { Transaction } from 'kysely'
import type { AuditService } from '../audit/service.js'
import type { Database } from '../db/schema.js'
import type { WebhooksService } from '../webhooks/service.js'

export type WebhookEvent = 'exception.created' | 'exception.resolved' | 'run.completed' | 'run.failed'

export interface ExceptionChange {
  workspace: string
  /** Who: `key:<id>` for an API key, `bootstrap` (the admin key, or open mode), `system:<what>` for the service. */
  actor: string
  /** What: `exception.assign`, `exception.comment`, `exception.match`, `exception.unmatch`,
   * `exception.write_off`, `exception.accept`, `exceptions.bulk_<action>`, `exceptions.create_for_run`,
   * `exceptions.seen_by_run`, `exceptions.close_by_run`, `schedule.create|update|delete|fire`. */
  action: string
  entity: { type: 'exception' | 'run' | 'schedule' | 'match'; id: string }
  before?: unknown
  after?: unknown
  request_id?: string
  /** The webhook event the change implies, with its payload; none for assignments and comments. */
  event?: { type: WebhookEvent; payload: Record<string, unknown> }
}

export type OnChange = (trx: Transaction<Database>, change: ExceptionChange) => Promise<void>

/** Who made a request's change, in the words of ExceptionChange.actor. */
export interface Actor {
  actor: string
  request_id?: string
}

/** Ids listed in a run's exception.resolved event; past this the event says how many more. */
export const RESOLVED_IDS_IN_EVENT = 1000

/**
 * The seam as the service wires it: the webhook event the change implies goes to the outbox, then
 * the change to the audit trail — last, as the trail's head row stays locked until the
 * transaction ends (audit/service.ts), so concurrent changes never wait on it holding other locks.
 */
export function recordChanges(audit: AuditService, webhooks: WebhooksService): OnChange {
  return async (trx, change) => {
    if (change.event) await webhooks.emit(trx, change.workspace, change.event.type, change.event.payload)
    await audit.record(trx, {
      workspace: change.workspace,
      actor: change.actor,
      action: change.action,
      entity: change.entity,
      before: change.before,
      after: change.after,
      request_id: change.request_id,
    })
  }
}
