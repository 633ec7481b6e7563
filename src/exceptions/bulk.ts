// Recording a run's exceptions in the transaction that records the run as completed: its set
// (the file its worker wrote beside the results, sidecar.ts) gets a block of ids and one row, so
// creating 250,000 exceptions is two statements. What the run did to earlier open items is in the
// set's overlay for those still in files; those already rows (materialized by an operator) are
// updated here, in chunks of UPDATE … FROM unnest(…), the event loop given a turn between chunks
// (PGlite runs each statement on this thread).

import { sql, type Transaction } from 'kysely'
import type { Database, RunRow } from '../db/schema.js'
import type { ExceptionBatch } from './batch.js'
import { type ExceptionChange, RESOLVED_IDS_IN_EVENT } from './changes.js'
import { materializedAmong, pgArray, reserveIds, turn } from './materialize.js'

export interface WrittenBatch {
  created: number
  firstId: number
  byReason: Record<string, { count: number; amount_at_risk: string }>
  seen: number
  closed: number[]
}

export async function writeBatch(
  trx: Transaction<Database>,
  run: RunRow,
  batch: ExceptionBatch,
  chunkRows: number,
): Promise<WrittenBatch> {
  // the counter row stays locked until this transaction commits: blocks never interleave
  const firstId = await reserveIds(trx, batch.count)
  await trx
    .insertInto('exception_sets')
    .values({
      run_id: run.id,
      workspace_id: run.workspace_id,
      recipe_id: run.recipe_id,
      recipe_version: run.recipe_version,
      first_id: firstId,
      count: batch.count,
      by_reason: JSON.stringify(batch.byReason),
    })
    .execute()

  const s = batch.seen
  const c = batch.closed
  // the sets of the open items it saw or closed, held against a concurrent materialization
  // (materialize.ts bumps them first): what is a row is then decided, not racing
  let lo = Infinity
  let hi = -Infinity
  for (const list of [s.ids, c.ids])
    for (const id of list) {
      if (id < lo) lo = id
      if (id > hi) hi = id
    }
  if (hi >= lo)
    await sql`
      select run_id from exception_sets
      where workspace_id = ${run.workspace_id} and first_id <= ${hi}::bigint and first_id + count > ${lo}::bigint
      for share
    `.execute(trx)
  const seenRows = await materializedAmong(trx, s.ids, chunkRows)
  let seen = s.ids.length - seenRows.size
  const at = s.ids.flatMap((id, i) => (seenRows.has(id) ? [i] : []))
  for (let from = 0; from < at.length; from += chunkRows) {
    const pick = <T>(a: T[]) => at.slice(from, from + chunkRows).map((i) => a[i])
    const result = await sql`
      update exceptions e set last_run_id = ${run.id}, reason = v.reason, candidate_key = v.candidate_key,
        amount_at_risk = coalesce(v.amount_at_risk, e.amount_at_risk), difference = v.difference, updated_at = now()
      from unnest(${pgArray(pick(s.ids).map(String))}::bigint[], ${pgArray(pick(s.reason))}::text[],
        ${pgArray(pick(s.candidate_key))}::text[], ${pgArray(pick(s.amount_at_risk))}::numeric[],
        ${pgArray(pick(s.difference))}::numeric[]) as v(id, reason, candidate_key, amount_at_risk, difference)
      where e.id = v.id and e.status = 'open'
    `.execute(trx)
    seen += Number(result.numAffectedRows ?? 0)
    await turn()
  }

  const closedRows = await materializedAmong(trx, c.ids, chunkRows)
  const closed = c.ids.filter((id) => !closedRows.has(id))
  const rowAt = c.ids.flatMap((id, i) => (closedRows.has(id) ? [i] : []))
  for (let from = 0; from < rowAt.length; from += chunkRows) {
    const pick = <T>(a: T[]) => rowAt.slice(from, from + chunkRows).map((i) => a[i])
    const { rows } = await sql<{ id: number }>`
      update exceptions e set status = 'resolved', resolution = 'matched_by_later_run',
        resolution_detail = jsonb_build_object('run_id', ${run.id}::text, 'match_id', v.match_id),
        resolved_by = ${`system:run:${run.id}`}, resolved_at = now(), version = e.version + 1, updated_at = now()
      from unnest(${pgArray(pick(c.ids).map(String))}::bigint[], ${pgArray(pick(c.match_id))}::text[]) as v(id, match_id)
      where e.id = v.id and e.status = 'open'
      returning e.id
    `.execute(trx)
    for (const r of rows) closed.push(Number(r.id))
    await turn()
  }
  closed.sort((a, b) => a - b)
  const byReason = Object.fromEntries(
    Object.entries(batch.byReason).map(([reason, v]) => [
      reason,
      { count: v.count, amount_at_risk: v.amount_at_risk ?? '0' },
    ]),
  )
  return { created: batch.count, firstId, byReason, seen, closed }
}

/** The changes a run's batch made, for the audit/webhook seam: one per kind, never one per record. */
export function runChanges(run: RunRow, written: WrittenBatch, carried: ExceptionBatch['carried']): ExceptionChange[] {
  const actor = `system:run:${run.id}`
  const entity = { type: 'run' as const, id: run.id }
  const base = { workspace: run.workspace_id, actor, entity }
  const out: ExceptionChange[] = []
  if (written.created)
    out.push({
      ...base,
      action: 'exceptions.create_for_run',
      after: { created: written.created, by_reason: written.byReason, carried },
      event: {
        type: 'exception.created',
        payload: {
          run_id: run.id,
          recipe_id: run.recipe_id,
          recipe_version: run.recipe_version,
          count: written.created,
          by_reason: written.byReason,
        },
      },
    })
  if (written.seen) out.push({ ...base, action: 'exceptions.seen_by_run', after: { seen: written.seen, carried } })
  if (written.closed.length)
    out.push({
      ...base,
      action: 'exceptions.close_by_run',
      after: { closed: written.closed.length, resolution: 'matched_by_later_run', ids: written.closed },
      event: {
        type: 'exception.resolved',
        payload: {
          run_id: run.id,
          resolution: 'matched_by_later_run',
          count: written.closed.length,
          ids: written.closed.slice(0, RESOLVED_IDS_IN_EVENT),
          ...(written.closed.length > RESOLVED_IDS_IN_EVENT
            ? { more: written.closed.length - RESOLVED_IDS_IN_EVENT }
            : {}),
        },
      },
    })
  return out
}
