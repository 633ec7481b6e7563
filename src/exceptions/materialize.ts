// An exception becomes a database row when something changes it: an operator's action, or a later
// run that sees or closes it while it is already a row. Before an action's statements run, the
// exceptions it names that still live only in their run's set file (sets.ts) are inserted with the
// same id and their current state, in the action's transaction; from then on the row is the
// exception and the file's copy is ignored. Two operators materializing the same one: the second
// insert waits on the first's key, then does nothing, and the action's own checks decide (409).

import { sql, type Transaction } from 'kysely'
import type { Database } from '../db/schema.js'
import type { ExceptionSets } from './sets.js'

/** Exceptions ids that are database rows, among those given. */
export async function materializedAmong(
  trx: Pick<Transaction<Database>, 'selectFrom'>,
  ids: number[],
): Promise<Set<number>> {
  if (!ids.length) return new Set()
  const rows = await trx.selectFrom('exceptions').select('id').where('id', 'in', ids).execute()
  return new Set(rows.map((r) => Number(r.id)))
}

export async function materialize(
  trx: Transaction<Database>,
  sets: ExceptionSets,
  ws: string,
  ids: number[],
): Promise<void> {
  const unique = [...new Set(ids)]
  const have = await materializedAmong(trx, unique)
  const missing = unique.filter((id) => !have.has(id))
  if (!missing.length) return
  const file = await sets.of(ws, trx)
  const rows = []
  for (const id of missing.sort((a, b) => a - b)) {
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
  // a key an open row of the recipe already holds stays with that row (the open-item index)
  await trx
    .insertInto('exceptions')
    .values(rows)
    .onConflict((oc) => oc.doNothing())
    .execute()
  await trx
    .updateTable('exception_sets')
    .set((eb) => ({ touched: eb('touched', '+', 1) }))
    .where('run_id', 'in', [...new Set(rows.map((r) => r.run_id))])
    .execute()
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
