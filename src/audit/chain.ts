// The audit chain's arithmetic, apart from storage: the canonical JSON a snapshot is stored as,
// and the hash that links a row to the one before it. Pure functions, so the verifier and the
// appender cannot disagree about either.

import { createHash } from 'node:crypto'

/** The previous hash of a chain's first row. */
export const GENESIS = '0'.repeat(64)

/** A version tag inside every hashed message: a future change of layout cannot collide with this one. */
const LAYOUT = 'concord-audit-v1'

/**
 * JSON with object keys sorted (by UTF-16 code units, recursively) and no whitespace: the same
 * value always gives the same text, whatever order its keys were built in. Dates become their ISO
 * text (toJSON), undefined properties are left out, as JSON.stringify does. Non-finite numbers
 * become null (as in JSON). Control characters, U+0000 included, are escaped, so the text fits a
 * PostgreSQL text column.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v
    const sorted: Record<string, unknown> = {}
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k]
    return sorted
  })
}

/** What one row of the chain holds, as stored (snapshots already canonical JSON text). */
export interface ChainRow {
  workspace_id: string
  seq: number
  at: string
  actor: string
  action: string
  entity_type: string
  entity_id: string
  before: string | null
  after: string | null
  request_id: string | null
  prev_hash: string
}

/**
 * SHA-256 (hex) over the row's fields in a fixed order, the previous row's hash among them. The
 * fields are serialized as one JSON array, so no field's text can spill into the next one's.
 */
export function rowHash(row: ChainRow): string {
  const message = JSON.stringify([
    LAYOUT,
    row.workspace_id,
    row.seq,
    row.at,
    row.actor,
    row.action,
    row.entity_type,
    row.entity_id,
    row.before,
    row.after,
    row.request_id,
    row.prev_hash,
  ])
  return createHash('sha256').update(message, 'utf8').digest('hex')
}
