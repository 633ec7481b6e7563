// An exception becomes a database row when something changes it: an operator's action, or a later
// run that sees or closes it while it is already a row. Before an action's statements run, the
// exceptions it names that still live only in their run's set file (sets.ts) are inserted with the
// same id and their current state, in the action's transaction; from then on the row is the
// exception and the file's copy is ignored. Two operators materializing the same one: the second
// waits on the first's lock of the set row, then finds the row, and the action's own checks
// decide (409).

import { sql, type Transaction } from 'kysely'
import type { Database } from '../db/schema.js'
import { ConcordError } from '../errors.js'
import type { ExceptionSets } from './sets.js'

/** A PostgreSQL array literal (text form) of text values; NULL where null. */
export function pgArray(values: readonly (string | null)[]): string {
  const parts = new Array<string>(values.length)
  for (let i = 0; i < values.length; i++) {
    const v = values[i]
    parts[i] = v === null ? 'NULL' : `"${v.replace(/[\\"]/g, '\\$&')}"`
  }
  return `{${parts.join(',')}}`
}

export const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * The exception ids that are database rows, among those given: one array parameter per chunk (a
 * run may ask about 250,000 it saw), the event loop given a turn between chunks.
 */
export async function materializedAmong(
  trx: Pick<Transaction<Database>, 'selectFrom'>,
  ids: number[],
  chunkRows = 50_000,
): Promise<Set<number>> {
  const found = new Set<number>()
  for (let at = 0; at < ids.length; at += chunkRows) {
    const rows = await trx
      .selectFrom('exceptions')
      .select('id')
      .where(sql<boolean>`id = any(${pgArray(ids.slice(at, at + chunkRows).map(String))}::bigint[])`)
      .execute()
    for (const r of rows) found.add(Number(r.id))
    if (at + chunkRows < ids.length) await turn()
  }
  return found
}

const INSERT_ROWS = 1_000

export async function materialize(
  trx: Transaction<Database>,
  sets: ExceptionSets,
  ws: string,
  ids: number[],
): Promise<void> {
  const unique = [...new Set(ids)]
  const have = await materializedAmong(trx, unique)
  const missing = unique.filter((id) => !have.has(id)).sort((a, b) => a - b)
  if (!missing.length) return
  let file = await sets.of(ws, trx)
  const runIds = [...new Set(missing.flatMap((id) => (file.locate(id) < 0 ? [] : [file.item(file.locate(id)).run_id])))]
  if (!runIds.length) return
  // their sets first: a run recording what it saw of them holds these rows FOR SHARE (bulk.ts), so
  // either it committed before this (and the state read next includes its overlay) or it waits
  // for this transaction (and then finds these exceptions as rows)
  await trx
    .updateTable('exception_sets')
    .set((eb) => ({ touched: eb('touched', '+', 1) }))
    .where('run_id', 'in', runIds)
    .execute()
  sets.invalidate()
  file = await sets.of(ws, trx)
  const rows = []
  for (const id of missing) {
    const g = file.locate(id)
    if (g < 0) continue
    const { age_days: _age, workspace_id: _ws, ...v } = file.view(g)
    rows.push({
      ...v,
      workspace_id: ws,
      keys: v.keys === null ? null : JSON.stringify(v.keys),
      resolution_detail: v.resolution_detail === null ? null : JSON.stringify(v.resolution_detail),
    })
  }
  if (!rows.length) return
  try {
    // the same exception materialized by a concurrent action: its row stands
    // a statement's parameters are at most 65,535: ~25 a row
    for (let at = 0; at < rows.length; at += INSERT_ROWS)
      await trx
        .insertInto('exceptions')
        .values(rows.slice(at, at + INSERT_ROWS))
        .onConflict((oc) => oc.column('id').doNothing())
        .execute()
  } catch (err) {
    // another open exception of the recipe holds the same record (two runs of the recipe opened it
    // at once): refused clearly rather than hidden
    if ((err as { code?: string }).code !== '23505') throw err
    throw new ConcordError(
      'open_item_conflict',
      `another open exception of the recipe already holds one of these records (${(err as Error).message})`,
      409,
      'list the open exceptions of the record (GET /api/exceptions?recipe_id=…) and resolve the duplicate',
    )
  }
}

/** The ids within the given ranges (set files' blocks) that are database rows. */
export async function materializedIn(
  db: Pick<Transaction<Database>, 'selectFrom'>,
  ranges: [number, number][],
): Promise<Set<number>> {
  const found = new Set<number>()
  // a few ranges per statement keep it planned as index range scans
  for (let at = 0; at < ranges.length; at += 50) {
    const part = ranges.slice(at, at + 50)
    const rows = await db
      .selectFrom('exceptions')
      .select('id')
      .where((eb) => eb.or(part.map(([from, to]) => eb.and([eb('id', '>=', from), eb('id', '<=', to)]))))
      .execute()
    for (const r of rows) found.add(Number(r.id))
  }
  return found
}

/** A block of n new exception ids (the counter row is held until the transaction commits). */
export async function reserveIds(trx: Transaction<Database>, n: number): Promise<number> {
  const { rows } = await sql<{ first: number }>`
    update exception_ids set next = next + ${n}::bigint returning next - ${n}::bigint as first
  `.execute(trx)
  return Number(rows[0].first)
}
