// Reading exceptions: the filtered, sorted work queue (keyset-paged: a page costs the same at the
// millionth row as at the first, and the open queue's indexes serve each sort), one exception
// with its comments and history, and a run's open exceptions by age.

import { type Kysely, type SelectQueryBuilder, sql } from 'kysely'
import type { Database, ExceptionRow } from '../db/schema.js'
import { ConcordError } from '../errors.js'
import { parseDate } from '../engine/data/values.js'
import { addDecimal, decimalText, exactDecimal, ZERO } from '../language/decimal.js'
import { REASONS } from './classify.js'
import type { ExceptionSets, FileFilter, SortKey, WorkspaceSets } from './sets.js'

export interface ExceptionView {
  id: number
  run_id: string
  last_run_id: string | null
  recipe_id: string | null
  recipe_version: number | null
  side: 'left' | 'right' | 'both'
  record_key: string
  keys: { left: string[]; right: string[] } | null
  match_id: string | null
  candidate_key: string | null
  amount: string | null
  amount_at_risk: string
  difference: string | null
  record_date: string | null
  age_days: number
  reason: string
  carry: boolean
  status: 'open' | 'resolved'
  resolution: string | null
  resolution_detail: Record<string, unknown> | null
  resolved_by: string | null
  resolved_at: string | null
  assignee: string | null
  version: number
  created_at: string
  updated_at: string
}

export type ExceptionRowWithAge = ExceptionRow & { age_days: number }

/** A time as ISO text; a page's file rows share their set's times, so the last one is kept. */
let lastTime: Date | string | null = null
let lastIso = ''
function iso(d: Date | string | null): string | null {
  if (d === null) return null
  if (d !== lastTime) {
    lastIso = (d instanceof Date ? d : new Date(d)).toISOString()
    lastTime = d
  }
  return lastIso
}

export function exceptionView(row: ExceptionRowWithAge): ExceptionView {
  return {
    id: Number(row.id),
    run_id: row.run_id,
    last_run_id: row.last_run_id,
    recipe_id: row.recipe_id,
    recipe_version: row.recipe_version,
    side: row.side,
    record_key: row.record_key,
    keys: row.keys,
    match_id: row.match_id,
    candidate_key: row.candidate_key,
    amount: row.amount,
    amount_at_risk: row.amount_at_risk,
    difference: row.difference,
    record_date: row.record_date,
    age_days: Number(row.age_days),
    reason: row.reason,
    carry: row.carry,
    status: row.status,
    resolution: row.resolution,
    resolution_detail: row.resolution_detail,
    resolved_by: row.resolved_by,
    resolved_at: iso(row.resolved_at),
    assignee: row.assignee,
    version: row.version,
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  }
}

export interface ExceptionQuery {
  run_id?: string
  recipe_id?: string
  reason?: string
  status?: 'open' | 'resolved' | 'all'
  side?: 'left' | 'right' | 'both'
  assignee?: string
  age_min?: number
  age_max?: number
  amount_min?: string
  amount_max?: string
  sort?: 'amount' | 'age' | 'created'
  order?: 'asc' | 'desc'
  limit?: number
  cursor?: string
  count?: boolean
}

/** The sort's column and its SQL type; age sorts by the date it counts from, the other way round. */
const SORTS = {
  amount: { column: 'amount_at_risk', cast: 'numeric', flip: false },
  age: { column: 'age_from', cast: 'date', flip: true },
  created: { column: 'id', cast: 'bigint', flip: false },
} as const

type Query = SelectQueryBuilder<Database, 'exceptions', object>

function filtered(db: Kysely<Database>, ws: string, q: ExceptionQuery): Query {
  let query: Query = db.selectFrom('exceptions').where('workspace_id', '=', ws)
  const status = q.status ?? 'open'
  if (status !== 'all') query = query.where('status', '=', status)
  if (q.run_id !== undefined) query = query.where('run_id', '=', q.run_id)
  if (q.recipe_id !== undefined) query = query.where('recipe_id', '=', q.recipe_id)
  if (q.side !== undefined) query = query.where('side', '=', q.side)
  if (q.reason !== undefined) {
    const reasons = q.reason.split(',').map((r) => r.trim())
    const unknown = reasons.filter((r) => !(REASONS as readonly string[]).includes(r))
    if (unknown.length)
      throw new ConcordError(
        'invalid_request',
        `unknown reason ${unknown.join(', ')}`,
        400,
        `use: ${REASONS.join(', ')}`,
      )
    query = query.where('reason', 'in', reasons)
  }
  if (q.assignee !== undefined)
    query = q.assignee === '-' ? query.where('assignee', 'is', null) : query.where('assignee', '=', q.assignee)
  if (q.age_min !== undefined) query = query.where(sql<boolean>`age_from <= current_date - ${q.age_min}::integer`)
  if (q.age_max !== undefined) query = query.where(sql<boolean>`age_from >= current_date - ${q.age_max}::integer`)
  if (q.amount_min !== undefined) query = query.where(sql<boolean>`amount_at_risk >= ${q.amount_min}::numeric`)
  if (q.amount_max !== undefined) query = query.where(sql<boolean>`amount_at_risk <= ${q.amount_max}::numeric`)
  return query
}

function badCursor(): ConcordError {
  return new ConcordError('invalid_cursor', 'the cursor is not one this list gave', 400, 'start again without cursor')
}

/** The list's filters as set files' rows are read (sets.ts). */
function fileFilter(q: ExceptionQuery): FileFilter {
  const day = Math.floor(Date.now() / 86_400_000)
  return {
    status: q.status ?? 'open',
    run_id: q.run_id,
    recipe_id: q.recipe_id,
    side: q.side,
    reasons: q.reason?.split(',').map((r) => r.trim()),
    assigned: q.assignee !== undefined && q.assignee !== '-',
    ageFromMax: q.age_min === undefined ? undefined : day - q.age_min,
    ageFromMin: q.age_max === undefined ? undefined : day - q.age_max,
    amountMin: q.amount_min === undefined ? undefined : Number(q.amount_min),
    amountMax: q.amount_max === undefined ? undefined : Number(q.amount_max),
  }
}

/** Up to `want` rows of set files in the list's order after the cursor (those that are not database rows). */
function filePage(
  file: WorkspaceSets,
  q: ExceptionQuery,
  sort: SortKey,
  desc: boolean,
  after: { value: string; id: number } | null,
  want: number,
): ExceptionRowWithAge[] {
  const out: ExceptionRowWithAge[] = []
  if (file.length === 0) return out
  for (const g of file.walk(fileFilter(q), sort, desc, after)) {
    out.push(file.view(g))
    if (out.length >= want) break
  }
  return out
}

export async function listExceptions(
  db: Kysely<Database>,
  sets: ExceptionSets,
  ws: string,
  q: ExceptionQuery,
): Promise<{ items: ExceptionView[]; next_cursor: string | null; total?: number }> {
  const sortKey = q.sort ?? 'created'
  const sort = SORTS[sortKey]
  const desc = ((q.order ?? 'desc') === 'desc') !== sort.flip
  const limit = q.limit ?? 50
  let query = filtered(db, ws, q)
  let after: { value: string; id: number } | null = null
  if (q.cursor !== undefined) {
    let parsed: unknown[]
    try {
      parsed = JSON.parse(Buffer.from(q.cursor, 'base64url').toString()) as unknown[]
    } catch {
      throw badCursor()
    }
    if (!Array.isArray(parsed) || parsed.length !== 2 || typeof parsed[1] !== 'number') throw badCursor()
    after = { value: String(parsed[0]), id: parsed[1] }
    if (sortKey === 'age' && parseDate(after.value) === null) throw badCursor()
    if (sortKey === 'amount' && !Number.isFinite(Number(after.value))) throw badCursor()
    const value = sql`${after.value}::${sql.raw(sort.cast)}`
    const cmp = sql.raw(desc ? '<' : '>')
    query = query.where(sql<boolean>`(${sql.ref(sort.column)}, id) ${cmp} (${value}, ${after.id}::bigint)`)
  }
  // the files' copy first: an exception materialized between the two reads is then a row to the
  // second (the dedupe below keeps it once); read the other way round it could be in neither
  const file = await sets.of(ws)
  const fromRows = (await query
    .selectAll()
    .select(sql<number>`current_date - age_from`.as('age_days'))
    .orderBy(sql.ref(sort.column), desc ? 'desc' : 'asc')
    .orderBy('id', desc ? 'desc' : 'asc')
    .limit(limit + 1)
    .execute()) as ExceptionRowWithAge[]
  // the same order over both: the sort's value, then the id
  // an exception that became a row a moment ago may still be in this copy's files: the row wins
  const asRows = new Set(fromRows.map((r) => Number(r.id)))
  const fromFiles = filePage(file, q, sortKey, desc, after, limit + 1).filter((r) => !asRows.has(r.id))
  const key = (r: ExceptionRowWithAge) =>
    sortKey === 'amount' ? Number(r.amount_at_risk) : sortKey === 'age' ? parseDate(String(r.age_from))! : Number(r.id)
  const rows = [...fromRows, ...fromFiles]
    .sort((a, b) => (key(a) - key(b) || Number(a.id) - Number(b.id)) * (desc ? -1 : 1))
    .slice(0, limit + 1)
  const more = rows.length > limit
  const items = rows.slice(0, limit).map(exceptionView)
  const last = rows[limit - 1]
  const next = more
    ? Buffer.from(
        JSON.stringify([String((last as unknown as Record<string, unknown>)[sort.column]), Number(last.id)]),
      ).toString('base64url')
    : null
  const out: { items: ExceptionView[]; next_cursor: string | null; total?: number } = { items, next_cursor: next }
  if (q.count) {
    const { n } = await filtered(db, ws, q)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    out.total = Number(n) + file.count(fileFilter(q))
  }
  return out
}

export async function exceptionRow(
  db: Kysely<Database>,
  sets: ExceptionSets | null,
  ws: string,
  id: number,
): Promise<ExceptionRowWithAge> {
  const row = await db
    .selectFrom('exceptions')
    .selectAll()
    .select(sql<number>`current_date - age_from`.as('age_days'))
    .where('workspace_id', '=', ws)
    .where('id', '=', id)
    .executeTakeFirst()
  if (row) return row as ExceptionRowWithAge
  // not a row: still in its run's set file (an id in no set of the workspace is no exception)
  const file = sets ? await sets.of(ws, db) : null
  const g = file?.locate(id) ?? -1
  if (g < 0) throw new ConcordError('exception_not_found', `no exception ${id}`, 404, 'GET /api/exceptions lists them')
  return file!.view(g)
}

export const AGE_BUCKETS = [
  { bucket: '0-1 d', from: 0, to: 1 },
  { bucket: '2-7 d', from: 2, to: 7 },
  { bucket: '8-30 d', from: 8, to: 30 },
  { bucket: '>30 d', from: 31, to: null },
] as const

/**
 * A run's open exceptions by age (days since the record's date): those it created and those it
 * saw still open (carried in). Every bucket is listed, empty ones with 0.
 */
export async function agingForRun(
  db: Kysely<Database>,
  sets: ExceptionSets,
  ws: string,
  runId: string,
): Promise<{ bucket: string; count: number; amount: string }[]> {
  const bucketOf = (age: number) => (age <= 1 ? 0 : age <= 7 ? 1 : age <= 30 ? 2 : 3)
  const totals = AGE_BUCKETS.map(() => ({ count: 0, amount: ZERO }))
  const { rows } = await sql<{ bucket: number; count: number; amount: string }>`
    select case when age <= 1 then 0 when age <= 7 then 1 when age <= 30 then 2 else 3 end as bucket,
      count(*)::integer as count, sum(amount_at_risk)::text as amount
    from (
      select current_date - age_from as age, amount_at_risk from exceptions
      where workspace_id = ${ws} and status = 'open' and run_id = ${runId}
      union all
      select current_date - age_from as age, amount_at_risk from exceptions
      where workspace_id = ${ws} and status = 'open' and last_run_id = ${runId} and run_id <> ${runId}
    ) open_items
    group by 1
  `.execute(db)
  for (const r of rows) {
    const into = totals[Number(r.bucket)]
    into.count += Number(r.count)
    into.amount = addDecimal(into.amount, exactDecimal(r.amount) ?? ZERO, 1n)
  }
  // the open ones still in set files: this run's own, and earlier runs' this run saw
  const file = await sets.of(ws)
  const fromFiles = file.tally(runId, true, AGE_BUCKETS.length, (g, age) => (file.isOpen(g) ? bucketOf(age) : -1))
  fromFiles.forEach((f, n) => {
    totals[n].count += f.count
    totals[n].amount = addDecimal(totals[n].amount, f.amount, 1n)
  })
  return AGE_BUCKETS.map((b, n) => ({
    bucket: b.bucket,
    count: totals[n].count,
    amount: totals[n].count ? decimalText(totals[n].amount) : '0',
  }))
}
