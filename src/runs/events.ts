// What a run's changes tell the audit trail and webhook receivers: one compact snapshot of the run
// (what ran, its state, and its summary's headline counts and amounts — not the per-pass detail,
// which GET /api/runs/:id has), recorded or emitted in the transaction that changes the run's row.

import type { Attribution, AuditService, Executor } from '../audit/service.js'
import type { RunRow } from '../db/schema.js'
import type { SideSummary } from '../engine/reconcile.js'
import type { WebhooksService } from '../webhooks/service.js'

export interface RunSnapshot {
  id: string
  status: RunRow['status']
  recipe: { id: string | null; name: string; version: number | null }
  mode: RunRow['mode']
  engine: RunRow['engine']
  dry_run: boolean
  params: Record<string, string | number | boolean>
  retry_of: string | null
  error: RunRow['error']
  /** The summary's headline: counts and exact amounts (decimal strings) per side. */
  summary: {
    matches: number
    ambiguous: number
    match_rate: number
    left: SideSummary
    right: SideSummary
  } | null
  created_at: string
  started_at: string | null
  finished_at: string | null
}

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString())

export function runSnapshot(row: RunRow): RunSnapshot {
  const s = row.summary
  return {
    id: row.id,
    status: row.status,
    recipe: { id: row.recipe_id, name: row.recipe.name, version: row.recipe_version },
    mode: row.mode,
    engine: row.engine,
    dry_run: row.dry_run,
    params: row.params,
    retry_of: row.retry_of,
    error: row.error,
    summary: s
      ? { matches: s.matches, ambiguous: s.ambiguous, match_rate: s.match_rate, left: s.left, right: s.right }
      : null,
    created_at: iso(row.created_at)!,
    started_at: iso(row.started_at),
    finished_at: iso(row.finished_at),
  }
}

export interface RunObservers {
  audit?: AuditService
  webhooks?: WebhooksService
}

/**
 * A run's row changed from `before` (absent: it was just created) to `after`: the audit row, and
 * for a run that turned completed or failed the webhook event, written with `tx`.
 */
export async function runChanged(
  tx: Executor,
  observers: RunObservers,
  action: string,
  before: RunRow | undefined,
  after: RunRow | undefined,
  by: Attribution,
): Promise<void> {
  const run = (after ?? before)!
  const snapshot = after ? runSnapshot(after) : undefined
  await observers.audit?.record(tx, {
    workspace: run.workspace_id,
    ...by,
    action,
    entity: { type: 'run', id: run.id },
    before: before ? runSnapshot(before) : undefined,
    after: snapshot,
  })
  if (snapshot && before?.status !== after!.status && (snapshot.status === 'completed' || snapshot.status === 'failed'))
    await observers.webhooks?.emit(tx, run.workspace_id, `run.${snapshot.status}`, { run: snapshot })
}
