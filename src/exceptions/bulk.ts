// Writing a run's exceptions (batch.ts) in the transaction that records the run as completed: the
// new ones in chunks of INSERT … SELECT FROM unnest(array literals) (one statement per chunk, no
// per-row round trip: COPY is no faster on PGlite, and Kysely's transaction offers no raw COPY
// stream), the seen ones and the closed ones as UPDATE … FROM unnest(…). A key another run of the
// recipe opened meanwhile is skipped (ON CONFLICT on the open-item index), and what was inserted
// is counted by the statement itself, so the event's counts are what the table holds. Between
// chunks the event loop gets a turn: PGlite runs each statement on this thread.

import { sql, type Transaction } from 'kysely'
import type { Database, RunRow } from '../db/schema.js'
import { addDecimal, decimalText, exactDecimal } from '../language/decimal.js'
import { type ExceptionBatch, pgArray } from './batch.js'
import { type ExceptionChange, RESOLVED_IDS_IN_EVENT } from './changes.js'

const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

export interface WrittenBatch {
  created: number
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
  const byReason: WrittenBatch['byReason'] = {}
  let created = 0
  for (const c of batch.created) {
    const { rows } = await sql<{ reason: string; count: number; amount: string }>`
      with inserted as (
        insert into exceptions (workspace_id, run_id, recipe_id, recipe_version, side, record_key, keys,
          match_id, candidate_key, amount, amount_at_risk, difference, record_date, age_from, reason, carry)
        select ${run.workspace_id}::text, ${run.id}::text, ${run.recipe_id}::text, ${run.recipe_version}::integer, t.side, t.record_key,
          t.keys, t.match_id, t.candidate_key, t.amount, coalesce(t.amount_at_risk, 0), t.difference, t.record_date,
          coalesce(t.record_date, current_date), t.reason, t.carry
        from unnest(${c.side}::text[], ${c.record_key}::text[], ${c.keys}::jsonb[], ${c.match_id}::text[],
          ${c.candidate_key}::text[], ${c.amount}::numeric[], ${c.amount_at_risk}::numeric[],
          ${c.difference}::numeric[], ${c.record_date}::date[], ${c.reason}::text[], ${c.carry}::boolean[])
          as t(side, record_key, keys, match_id, candidate_key, amount, amount_at_risk, difference, record_date,
            reason, carry)
        on conflict (recipe_id, side, record_key) where status = 'open' and recipe_id is not null do nothing
        returning reason, amount_at_risk
      )
      select reason, count(*)::integer as count, sum(amount_at_risk)::text as amount from inserted group by reason
    `.execute(trx)
    for (const r of rows) {
      const into = (byReason[r.reason] ??= { count: 0, amount_at_risk: '0' })
      into.count += Number(r.count)
      into.amount_at_risk = decimalText(addDecimal(exactDecimal(into.amount_at_risk)!, exactDecimal(r.amount)!, 1n))
      created += Number(r.count)
    }
    await turn()
  }
  let seen = 0
  const s = batch.seen
  for (let at = 0; at < s.ids.length; at += chunkRows) {
    const slice = <T>(a: T[]) => a.slice(at, at + chunkRows)
    const result = await sql`
      update exceptions e set last_run_id = ${run.id}, reason = v.reason, candidate_key = v.candidate_key,
        amount_at_risk = coalesce(v.amount_at_risk, e.amount_at_risk), difference = v.difference, updated_at = now()
      from unnest(${pgArray(slice(s.ids).map(String))}::bigint[], ${pgArray(slice(s.reason))}::text[],
        ${pgArray(slice(s.candidate_key))}::text[], ${pgArray(slice(s.amount_at_risk))}::numeric[],
        ${pgArray(slice(s.difference))}::numeric[]) as v(id, reason, candidate_key, amount_at_risk, difference)
      where e.id = v.id and e.status = 'open'
    `.execute(trx)
    seen += Number(result.numAffectedRows ?? 0)
    await turn()
  }
  const closed: number[] = []
  const c = batch.closed
  for (let at = 0; at < c.ids.length; at += chunkRows) {
    const { rows } = await sql<{ id: number }>`
      update exceptions e set status = 'resolved', resolution = 'matched_by_later_run',
        resolution_detail = jsonb_build_object('run_id', ${run.id}::text, 'match_id', v.match_id),
        resolved_by = ${`system:run:${run.id}`}, resolved_at = now(), version = e.version + 1, updated_at = now()
      from unnest(${pgArray(c.ids.slice(at, at + chunkRows).map(String))}::bigint[],
        ${pgArray(c.match_id.slice(at, at + chunkRows))}::text[]) as v(id, match_id)
      where e.id = v.id and e.status = 'open'
      returning e.id
    `.execute(trx)
    for (const r of rows) closed.push(Number(r.id))
    await turn()
  }
  // a bulk load leaves the planner's statistics behind: without them the open queue's pages were
  // planned as full sorts (seconds each on PGlite, which runs no autovacuum)
  if (created + seen + closed.length >= ANALYZE_AFTER) await sql`analyze exceptions`.execute(trx)
  return { created, byReason, seen, closed }
}

/** Rows a run must write before it refreshes the table's statistics. */
const ANALYZE_AFTER = 10_000

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
