// Record keys: per side, the column that names a record of that side alone. A reference shared
// with the other side is not one: chargebacks repeat a sale's order_id, so the ledger's key is
// ledger_tx_id. A shared column is the fallback only when the side has nothing of its own.

import { isOneToken, textOf } from './links.js'
import type { ColumnT, RowT } from './schemas.js'

function uniqueIdLike(rows: RowT[], c: ColumnT): boolean {
  if (c.type !== 'string' && c.type !== 'integer') return false
  const seen = new Set<string>()
  for (const row of rows) {
    const v = textOf(row[c.name])
    if (v === null || !isOneToken(v) || (c.type === 'string' && !/\d/.test(v)) || seen.has(v)) return false
    seen.add(v)
  }
  return seen.size > 0
}

/** The record key of one side: its own unique id-like column, an `…id` name first. */
export function recordKey(schema: ColumnT[], rows: RowT[], shared: Set<string>, fixed?: string): string[] {
  if (fixed && schema.some((c) => c.name === fixed)) return [fixed]
  const candidates = schema.filter((c) => uniqueIdLike(rows, c))
  const idNamed = (c: ColumnT) => /(^|_)(id|key|no|number|ref)$/i.test(c.name)
  const rank = (c: ColumnT) => (shared.has(c.name) ? 2 : 0) + (idNamed(c) ? 0 : 1)
  const best = [...candidates].sort((x, y) => rank(x) - rank(y))[0]
  return best ? [best.name] : schema.length ? [schema[0].name] : []
}
