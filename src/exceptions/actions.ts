// What operators do to exceptions, each in one transaction that also hands the change to the
// audit/webhook seam: assign, comment, accept or write off with a reason, match chosen records by
// hand (checked against the recipe's own amount checks, or booking an adjustment), unmatch an
// automatic match (its records open again), and the bulk versions (all or nothing). A resolution
// only applies to an open exception, and with `version` only to the version the operator saw:
// of two operators resolving the same exception one wins, the other gets 409.

import { randomUUID } from 'node:crypto'
import { type Kysely, sql, type Transaction } from 'kysely'
import type { Database, RunRow } from '../db/schema.js'
import { ConcordError } from '../errors.js'
import { addDecimal, decimalText, type ExactDecimal, exactDecimal, ZERO } from '../language/decimal.js'
import type { RunsService } from '../runs/service.js'
import type { Actor, ExceptionChange, OnChange } from './changes.js'
import { exceptionRow, type ExceptionRowWithAge, exceptionView, type ExceptionView } from './queries.js'
import { materialize, reserveIds } from './materialize.js'
import type { ExceptionSets } from './sets.js'
import { type Agreement, amountAgreement } from './tolerance.js'

export type Resolution = 'accepted' | 'written_off'

interface Deps {
  db: Kysely<Database>
  runs: RunsService
  sets: ExceptionSets
  onChange: OnChange
}

const withAge = sql<number>`current_date - age_from`.as('age_days')

/** Why a conditional update touched nothing: 404, resolved (409), or another version (409). */
async function refusal(trx: Transaction<Database>, ws: string, id: number, version?: number): Promise<ConcordError> {
  const row = await trx
    .selectFrom('exceptions')
    .select(['status', 'resolution', 'resolved_by', 'version'])
    .where('workspace_id', '=', ws)
    .where('id', '=', id)
    .executeTakeFirst()
  if (!row) return new ConcordError('exception_not_found', `no exception ${id}`, 404, 'GET /api/exceptions lists them')
  if (row.status !== 'open')
    return new ConcordError(
      'exception_resolved',
      `exception ${id} is already resolved (${row.resolution} by ${row.resolved_by})`,
      409,
      'GET /api/exceptions/<id> shows who resolved it and how',
    )
  return new ConcordError(
    'version_conflict',
    `exception ${id} changed since version ${version} (it is at version ${row.version})`,
    409,
    'read it again and retry with the current version',
  )
}

async function history(
  trx: Transaction<Database>,
  entries: { exception_id: number; action: string; detail: Record<string, unknown> }[],
  actor: Actor,
): Promise<void> {
  if (!entries.length) return
  await trx
    .insertInto('exception_history')
    .values(entries.map((e) => ({ ...e, actor: actor.actor, detail: JSON.stringify(e.detail) })))
    .execute()
}

const change = (ws: string, actor: Actor, rest: Omit<ExceptionChange, 'workspace' | 'actor' | 'request_id'>) => ({
  workspace: ws,
  actor: actor.actor,
  ...(actor.request_id ? { request_id: actor.request_id } : {}),
  ...rest,
})

export async function assign(
  deps: Deps,
  ws: string,
  id: number,
  body: { assignee: string | null; version?: number },
  actor: Actor,
): Promise<ExceptionView> {
  return deps.db.transaction().execute(async (trx) => {
    await materialize(trx, deps.sets, ws, [id])
    const before = await trx
      .selectFrom('exceptions')
      .select('assignee')
      .where('workspace_id', '=', ws)
      .where('id', '=', id)
      .executeTakeFirst()
    let q = trx
      .updateTable('exceptions')
      .set((eb) => ({ assignee: body.assignee, version: eb('version', '+', 1), updated_at: sql`now()` }))
      .where('workspace_id', '=', ws)
      .where('id', '=', id)
      .where('status', '=', 'open')
    if (body.version !== undefined) q = q.where('version', '=', body.version)
    const row = (await q.returningAll().returning(withAge).executeTakeFirst()) as ExceptionRowWithAge | undefined
    if (!row) throw await refusal(trx, ws, id, body.version)
    await history(
      trx,
      [{ exception_id: id, action: 'assign', detail: { from: before?.assignee ?? null, to: body.assignee } }],
      actor,
    )
    await deps.onChange(
      trx,
      change(ws, actor, {
        action: 'exception.assign',
        entity: { type: 'exception', id: String(id) },
        before: { assignee: before?.assignee ?? null },
        after: { assignee: body.assignee },
      }),
    )
    return exceptionView(row)
  })
}

export async function comment(deps: Deps, ws: string, id: number, text: string, actor: Actor) {
  return deps.db.transaction().execute(async (trx) => {
    await materialize(trx, deps.sets, ws, [id])
    await exceptionRow(trx, null, ws, id)
    const entry = await trx
      .insertInto('exception_history')
      .values({ exception_id: id, actor: actor.actor, action: 'comment', detail: JSON.stringify({ text }) })
      .returningAll()
      .executeTakeFirstOrThrow()
    await deps.onChange(
      trx,
      change(ws, actor, {
        action: 'exception.comment',
        entity: { type: 'exception', id: String(id) },
        after: { text },
      }),
    )
    return {
      id: Number(entry.id),
      actor: entry.actor,
      action: entry.action,
      detail: entry.detail,
      created_at: new Date(entry.created_at).toISOString(),
    }
  })
}

export async function resolve(
  deps: Deps,
  ws: string,
  id: number,
  resolution: Resolution,
  body: { reason: string; version?: number },
  actor: Actor,
): Promise<ExceptionView> {
  return deps.db.transaction().execute(async (trx) => {
    await materialize(trx, deps.sets, ws, [id])
    let q = trx
      .updateTable('exceptions')
      .set((eb) => ({
        status: 'resolved',
        resolution,
        resolution_detail: JSON.stringify({ reason: body.reason }),
        resolved_by: actor.actor,
        resolved_at: new Date(),
        version: eb('version', '+', 1),
        updated_at: sql`now()`,
      }))
      .where('workspace_id', '=', ws)
      .where('id', '=', id)
      .where('status', '=', 'open')
    if (body.version !== undefined) q = q.where('version', '=', body.version)
    const row = (await q.returningAll().returning(withAge).executeTakeFirst()) as ExceptionRowWithAge | undefined
    if (!row) throw await refusal(trx, ws, id, body.version)
    await history(trx, [{ exception_id: id, action: resolution, detail: { reason: body.reason } }], actor)
    await deps.onChange(
      trx,
      change(ws, actor, {
        action: resolution === 'accepted' ? 'exception.accept' : 'exception.write_off',
        entity: { type: 'exception', id: String(id) },
        before: { status: 'open' },
        after: { status: 'resolved', resolution, reason: body.reason },
        event: { type: 'exception.resolved', payload: { ids: [id], resolution, reason: body.reason } },
      }),
    )
    return exceptionView(row)
  })
}

export interface ManualMatch {
  exception_ids: number[]
  adjustment?: { amount: string; reason: string }
  note?: string
  versions?: Record<string, number>
}

export interface ManualMatchResult {
  match_group: string
  exceptions: ExceptionView[]
  left_amount: string | null
  right_amount: string | null
  difference: string | null
  adjustment: { amount: string; reason: string } | null
  accepted_by: { pass: string | null; checks: string[] } | null
}

/**
 * Locks the exceptions (in id order, so two requests over the same ids cannot deadlock) and checks
 * each is in the workspace, open, and at the version the caller saw.
 */
async function lockOpen(
  trx: Transaction<Database>,
  sets: ExceptionSets,
  ws: string,
  ids: number[],
  versions: Record<string, number> = {},
): Promise<ExceptionRowWithAge[]> {
  const unique = [...new Set(ids)].sort((a, b) => a - b)
  await materialize(trx, sets, ws, unique)
  const rows = (await trx
    .selectFrom('exceptions')
    .selectAll()
    .select(withAge)
    .where('workspace_id', '=', ws)
    .where('id', 'in', unique)
    .orderBy('id')
    .forUpdate()
    .execute()) as ExceptionRowWithAge[]
  const missing = unique.filter((id) => !rows.some((r) => Number(r.id) === id))
  if (missing.length)
    throw new ConcordError(
      'exception_not_found',
      `no exception ${missing.join(', ')}`,
      404,
      'GET /api/exceptions lists them',
    )
  const resolved = rows.filter((r) => r.status !== 'open')
  if (resolved.length)
    throw new ConcordError(
      'exception_resolved',
      `already resolved: ${resolved.map((r) => `${r.id} (${r.resolution})`).join(', ')}`,
      409,
      'leave them out; nothing was changed',
    )
  const stale = rows.filter((r) => versions[String(r.id)] !== undefined && versions[String(r.id)] !== r.version)
  if (stale.length)
    throw new ConcordError(
      'version_conflict',
      `changed since you read them: ${stale.map((r) => `${r.id} (now version ${r.version})`).join(', ')}`,
      409,
      'read them again and retry',
    )
  return rows
}

function sum(rows: ExceptionRowWithAge[]): ExactDecimal | null {
  let total = ZERO
  for (const r of rows) {
    const d = r.amount === null ? null : exactDecimal(r.amount)
    if (!d) return null
    total = addDecimal(total, d, 1n)
  }
  return total
}

export async function manualMatch(deps: Deps, ws: string, body: ManualMatch, actor: Actor): Promise<ManualMatchResult> {
  return deps.db.transaction().execute(async (trx) => {
    const rows = await lockOpen(trx, deps.sets, ws, body.exception_ids, body.versions)
    const left = rows.filter((r) => r.side === 'left')
    const right = rows.filter((r) => r.side === 'right')
    if (rows.some((r) => r.side === 'both'))
      throw new ConcordError(
        'invalid_match',
        'an ambiguous match is not a record: accept it, or unmatch it and match its records',
        400,
        'choose exceptions of side left and right',
      )
    if (!left.length || !right.length)
      throw new ConcordError('invalid_match', 'a match needs at least one left and one right record', 400)
    const recipes = new Set(rows.map((r) => r.recipe_id ?? `run:${r.run_id}`))
    if (recipes.size > 1)
      throw new ConcordError(
        'invalid_match',
        'the exceptions come from different recipes',
        400,
        'match records that one recipe reconciles',
      )
    // the run of the recipe that saw them last: its recipe and stored columns are what they were matched with
    const run = await trx
      .selectFrom('runs')
      .selectAll()
      .where('id', 'in', [...new Set(rows.map((x) => x.last_run_id ?? x.run_id))])
      .orderBy('created_at', 'desc')
      .limit(1)
      .executeTakeFirstOrThrow()
    const l = sum(left)
    const r = sum(right)
    let adjustment: ExactDecimal = ZERO
    if (body.adjustment) {
      const a = exactDecimal(body.adjustment.amount)
      if (!a) throw new ConcordError('invalid_request', 'adjustment.amount is not a decimal', 400)
      adjustment = a
    }
    let accepted: Agreement | null = null
    if (l && r) {
      const schemas = await deps.runs.pages.storedSchemas(deps.runs.resultsDir(run.id)).catch(() => null)
      if (!schemas)
        throw new ConcordError(
          'results_missing',
          `run ${run.id}'s stored results are gone: the recipe's amount checks cannot be read`,
          409,
          'give an adjustment equal to the difference, or write the exceptions off',
        )
      accepted = amountAgreement(run.recipe, schemas, addDecimal(l, adjustment, -1n), r)
      if (!accepted.agrees)
        throw new ConcordError(
          'amounts_disagree',
          `left ${decimalText(l)} and right ${decimalText(r)} differ by ${decimalText(addDecimal(l, r, -1n))}` +
            (body.adjustment
              ? ` (${decimalText(addDecimal(addDecimal(l, r, -1n), adjustment, -1n))} after the adjustment)`
              : '') +
            ", beyond the recipe's amount checks",
          400,
          'book the difference: add "adjustment": { "amount": "<left minus right>", "reason": "…" }',
        )
    }
    const group = randomUUID()
    const detail = {
      match_group: group,
      exception_ids: rows.map((x) => Number(x.id)),
      left_keys: left.map((x) => x.record_key),
      right_keys: right.map((x) => x.record_key),
      left_amount: l && decimalText(l),
      right_amount: r && decimalText(r),
      difference: l && r ? decimalText(addDecimal(l, r, -1n)) : null,
      adjustment: body.adjustment ?? null,
      note: body.note ?? null,
      checked: accepted !== null,
      accepted_by: accepted ? { pass: accepted.pass, checks: accepted.checks } : null,
    }
    const ids = rows.map((x) => Number(x.id))
    const updated = (await trx
      .updateTable('exceptions')
      .set((eb) => ({
        status: 'resolved',
        resolution: 'manual_match',
        resolution_detail: JSON.stringify(detail),
        resolved_by: actor.actor,
        resolved_at: new Date(),
        version: eb('version', '+', 1),
        updated_at: sql`now()`,
      }))
      .where('id', 'in', ids)
      .returningAll()
      .returning(withAge)
      .execute()) as ExceptionRowWithAge[]
    await history(
      trx,
      ids.map((id) => ({ exception_id: id, action: 'manual_match', detail })),
      actor,
    )
    await deps.onChange(
      trx,
      change(ws, actor, {
        action: 'exception.match',
        entity: { type: 'match', id: group },
        before: rows.map((x) => ({ id: Number(x.id), status: 'open' })),
        after: detail,
        event: {
          type: 'exception.resolved',
          payload: { ids, resolution: 'manual_match', match_group: group, adjustment: body.adjustment ?? null },
        },
      }),
    )
    return {
      match_group: group,
      exceptions: updated.sort((a, b) => Number(a.id) - Number(b.id)).map(exceptionView),
      left_amount: detail.left_amount,
      right_amount: detail.right_amount,
      difference: detail.difference,
      adjustment: body.adjustment ?? null,
      accepted_by: detail.accepted_by,
    }
  })
}

/**
 * Undoes an automatic match of a completed run: its records become open exceptions again (class
 * unmatched_by_operator) — an exception that match had closed (a carried record matched by a
 * later run) is reopened, the others are new — and an ambiguous match's exception is resolved as
 * `unmatched`. A match is unmatched once.
 */
export async function unmatch(
  deps: Deps,
  ws: string,
  body: { run_id: string; match_id: string; reason: string },
  actor: Actor,
): Promise<{ run_id: string; match_id: string; exceptions: ExceptionView[] }> {
  const dir = await deps.runs.completedDir(ws, body.run_id)
  const number = Number(body.match_id.slice(1))
  const page = await deps.runs.pages.matchesPage(dir, number - 1, 1)
  const match = page.items[0]
  if (!match || match.match_id !== body.match_id)
    throw new ConcordError('match_not_found', `run ${body.run_id} has no match ${body.match_id}`, 404)
  return deps.db.transaction().execute(async (trx) => {
    const run = (await trx
      .selectFrom('runs')
      .selectAll()
      .where('id', '=', body.run_id)
      .executeTakeFirstOrThrow()) as RunRow
    const first = await trx
      .insertInto('unmatched_matches')
      .values({ run_id: body.run_id, match_id: body.match_id, actor: actor.actor, reason: body.reason })
      .onConflict((oc) => oc.doNothing())
      .returning('match_id')
      .executeTakeFirst()
    if (!first)
      throw new ConcordError(
        'already_unmatched',
        `match ${body.match_id} of run ${body.run_id} was already unmatched`,
        409,
      )
    const detail = { run_id: body.run_id, match_id: body.match_id, reason: body.reason, pass: match.pass }
    // what the match closed or held for review that is still in set files becomes rows first
    const file = await deps.sets.of(ws, trx)
    await materialize(trx, deps.sets, ws, file.touchedByMatch(body.run_id, body.match_id))
    const reopened = (await trx
      .updateTable('exceptions')
      .set((eb) => ({
        status: 'open',
        resolution: null,
        resolution_detail: null,
        resolved_by: null,
        resolved_at: null,
        reason: 'unmatched_by_operator',
        version: eb('version', '+', 1),
        updated_at: sql`now()`,
      }))
      .where('workspace_id', '=', ws)
      .where('status', '=', 'resolved')
      .where('resolution', '=', 'matched_by_later_run')
      .where(
        sql<boolean>`resolution_detail->>'run_id' = ${body.run_id} and resolution_detail->>'match_id' = ${body.match_id}`,
      )
      .returningAll()
      .returning(withAge)
      .execute()) as ExceptionRowWithAge[]
    const fresh = [
      ...match.left_keys.map((key) => ({ side: 'left' as const, key })),
      ...match.right_keys.map((key) => ({ side: 'right' as const, key })),
    ].filter((k) => !reopened.some((r) => r.side === k.side && r.record_key === k.key))
    // a record that is already an open item in a later run's file stays that item: made a row,
    // the insert below skips it on the open-item index as it skips any open row
    await materialize(trx, deps.sets, ws, file.openWithKeys(run.recipe_id, fresh))
    const firstId = fresh.length ? await reserveIds(trx, fresh.length) : 0
    const created = fresh.length
      ? ((await trx
          .insertInto('exceptions')
          .values(
            fresh.map((k, i) => ({
              id: firstId + i,
              workspace_id: ws,
              run_id: body.run_id,
              recipe_id: run.recipe_id,
              recipe_version: run.recipe_version,
              side: k.side,
              record_key: k.key,
              match_id: body.match_id,
              age_from: sql<string>`current_date`,
              reason: 'unmatched_by_operator',
              // a matched record's columns are not stored with the run: nothing to carry it from
              carry: false,
              keys: null,
              resolution_detail: null,
            })),
          )
          .onConflict((oc) =>
            oc
              .columns(['recipe_id', 'side', 'record_key'])
              .where('status', '=', 'open')
              .where('recipe_id', 'is not', null)
              .doNothing(),
          )
          .returningAll()
          .returning(withAge)
          .execute()) as ExceptionRowWithAge[])
      : []
    const opened = [...reopened, ...created].sort((a, b) => Number(a.id) - Number(b.id))
    // the ambiguous match's own exception, when it had one, is settled by undoing the match
    const ambiguous = await trx
      .updateTable('exceptions')
      .set((eb) => ({
        status: 'resolved',
        resolution: 'unmatched',
        resolution_detail: JSON.stringify(detail),
        resolved_by: actor.actor,
        resolved_at: new Date(),
        version: eb('version', '+', 1),
        updated_at: sql`now()`,
      }))
      .where('workspace_id', '=', ws)
      .where('run_id', '=', body.run_id)
      .where('match_id', '=', body.match_id)
      .where('side', '=', 'both')
      .where('status', '=', 'open')
      .returning('id')
      .execute()
    await history(
      trx,
      [
        ...opened.map((x) => ({ exception_id: Number(x.id), action: 'unmatch', detail })),
        ...ambiguous.map((x) => ({ exception_id: Number(x.id), action: 'unmatched', detail })),
      ],
      actor,
    )
    for (const x of opened)
      await deps.onChange(
        trx,
        change(ws, actor, {
          action: 'exception.unmatch',
          entity: { type: 'exception', id: String(x.id) },
          before: reopened.includes(x) ? { status: 'resolved', resolution: 'matched_by_later_run' } : undefined,
          after: exceptionView(x),
          event: {
            type: 'exception.created',
            payload: {
              ids: [Number(x.id)],
              reason: 'unmatched_by_operator',
              run_id: body.run_id,
              match_id: body.match_id,
            },
          },
        }),
      )
    if (ambiguous.length)
      await deps.onChange(
        trx,
        change(ws, actor, {
          action: 'exception.unmatch',
          entity: { type: 'exception', id: String(ambiguous[0].id) },
          before: { status: 'open' },
          after: { status: 'resolved', resolution: 'unmatched' },
          event: {
            type: 'exception.resolved',
            payload: { ids: ambiguous.map((x) => Number(x.id)), resolution: 'unmatched', match_id: body.match_id },
          },
        }),
      )
    return { run_id: body.run_id, match_id: body.match_id, exceptions: opened.map(exceptionView) }
  })
}

export type BulkAction = 'assign' | 'comment' | 'accept' | 'write_off'

/** One action over many exceptions, all or nothing: any of them missing, resolved (or for comments: missing) refuses the lot. */
export async function bulk(
  deps: Deps,
  ws: string,
  body: { action: BulkAction; ids: number[]; assignee?: string | null; reason?: string; text?: string },
  actor: Actor,
): Promise<{ action: string; ids: number[]; count: number }> {
  const need = (field: 'reason' | 'text' | 'assignee') => {
    if (body[field] === undefined)
      throw new ConcordError('invalid_request', `bulk ${body.action} needs "${field}"`, 400)
  }
  if (body.action === 'assign') need('assignee')
  if (body.action === 'comment') need('text')
  if (body.action === 'accept' || body.action === 'write_off') need('reason')
  return deps.db.transaction().execute(async (trx) => {
    const ids = [...new Set(body.ids)].sort((a, b) => a - b)
    let rows: ExceptionRowWithAge[]
    if (body.action === 'comment') {
      await materialize(trx, deps.sets, ws, ids)
      rows = (await trx
        .selectFrom('exceptions')
        .selectAll()
        .select(withAge)
        .where('workspace_id', '=', ws)
        .where('id', 'in', ids)
        .forShare()
        .execute()) as ExceptionRowWithAge[]
      const missing = ids.filter((id) => !rows.some((r) => Number(r.id) === id))
      if (missing.length) throw new ConcordError('exception_not_found', `no exception ${missing.join(', ')}`, 404)
    } else rows = await lockOpen(trx, deps.sets, ws, ids)
    const resolution = body.action === 'accept' ? 'accepted' : body.action === 'write_off' ? 'written_off' : null
    if (body.action === 'assign')
      await trx
        .updateTable('exceptions')
        .set((eb) => ({ assignee: body.assignee ?? null, version: eb('version', '+', 1), updated_at: sql`now()` }))
        .where('id', 'in', ids)
        .execute()
    if (resolution)
      await trx
        .updateTable('exceptions')
        .set((eb) => ({
          status: 'resolved',
          resolution,
          resolution_detail: JSON.stringify({ reason: body.reason, bulk: true }),
          resolved_by: actor.actor,
          resolved_at: new Date(),
          version: eb('version', '+', 1),
          updated_at: sql`now()`,
        }))
        .where('id', 'in', ids)
        .execute()
    const detail =
      body.action === 'assign'
        ? { to: body.assignee ?? null }
        : body.action === 'comment'
          ? { text: body.text }
          : { reason: body.reason }
    await history(
      trx,
      ids.map((id) => ({ exception_id: id, action: resolution ?? body.action, detail: { ...detail, bulk: true } })),
      actor,
    )
    await deps.onChange(
      trx,
      change(ws, actor, {
        action: `exceptions.bulk_${body.action}`,
        entity: { type: 'exception', id: ids.join(',') },
        before: rows.map((r) => ({ id: Number(r.id), status: r.status, assignee: r.assignee })),
        after: { ids, ...detail, ...(resolution ? { status: 'resolved', resolution } : {}) },
        ...(resolution
          ? { event: { type: 'exception.resolved' as const, payload: { ids, resolution, reason: body.reason } } }
          : {}),
      }),
    )
    return { action: body.action, ids, count: ids.length }
  })
}
