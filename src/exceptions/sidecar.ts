// A run's exceptions as files beside its results, not rows: the run's worker writes the exceptions
// it creates as one columnar file (exceptions.arrow, row i is exception `first_id + i`, the block
// of ids the service reserves when it records the run) and what it did to earlier runs' open items
// (seen still open, closed by a match) as exceptions-overlay.json. Writing 250,000 rows into the
// database took 11 s on PostgreSQL and 43-57 s on PGlite, on the event loop's thread; the files
// cost the worker a fraction of a second. An exception becomes a database row only when an
// operator touches it (materialize.ts); until then sets.ts serves it from the files.

import { mkdirSync, writeFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { tableFromIPC, tableToIPC } from 'apache-arrow'
import { stringColumn, toArrowTable } from '../engine/data/arrow.js'
import type { Table } from '../engine/data/table.js'
import { fromArrowTable } from '../engine/load/arrow.js'
import { REASONS, type Reason } from './classify.js'

export const SIDES = ['left', 'right', 'both'] as const

/** One exception a run creates, as the worker classified it. */
export interface CreatedRow {
  side: 'left' | 'right' | 'both'
  key: string
  keys: string | null
  match: string | null
  candidate: string | null
  amount: string | null
  /** Exact decimal text; null when the record has no amount (stored as 0). */
  atRisk: string | null
  difference: string | null
  /** Days since the epoch; null when the record has no date. */
  date: number | null
  reason: Reason
  carry: boolean
}

/** What a run did to open items of earlier runs (the ids are exceptions'). */
export interface Overlay {
  seen: {
    ids: number[]
    reason: string[]
    candidate_key: (string | null)[]
    amount_at_risk: (string | null)[]
    difference: (string | null)[]
  }
  closed: { ids: number[]; match_id: string[] }
}

export const setFile = (dir: string) => join(dir, 'exceptions.arrow')
export const overlayFile = (dir: string) => join(dir, 'exceptions-overlay.json')

const number = (values: Float64Array, valid: Uint8Array | null = null) => ({
  type: 'float' as const,
  length: values.length,
  valid,
  values,
})

/** Writes the created exceptions (in id order) and the overlay into a run's results folder. */
export function writeSet(dir: string, rows: CreatedRow[], overlay: Overlay): void {
  mkdirSync(dir, { recursive: true })
  const n = rows.length
  const side = new Float64Array(n)
  const reason = new Float64Array(n)
  const carry = new Float64Array(n)
  const atRiskValue = new Float64Array(n)
  const date = new Int32Array(n)
  const dateValid = new Uint8Array(n)
  for (let i = 0; i < n; i++) {
    const r = rows[i]
    side[i] = SIDES.indexOf(r.side)
    reason[i] = REASONS.indexOf(r.reason)
    carry[i] = r.carry ? 1 : 0
    atRiskValue[i] = r.atRisk === null ? 0 : Number(r.atRisk)
    if (r.date !== null) {
      date[i] = r.date
      dateValid[i] = 1
    }
  }
  const text = (f: (r: CreatedRow) => string | null) => stringColumn(rows.map(f))
  const table: Table = {
    columns: [
      { name: 'side', type: 'float', nullable: false },
      { name: 'record_key', type: 'string', nullable: false },
      { name: 'keys', type: 'string', nullable: true },
      { name: 'match_id', type: 'string', nullable: true },
      { name: 'candidate_key', type: 'string', nullable: true },
      { name: 'amount', type: 'string', nullable: true },
      { name: 'amount_at_risk', type: 'string', nullable: true },
      { name: 'at_risk_value', type: 'float', nullable: false },
      { name: 'difference', type: 'string', nullable: true },
      { name: 'record_date', type: 'date', nullable: true },
      { name: 'reason', type: 'float', nullable: false },
      { name: 'carry', type: 'float', nullable: false },
    ],
    data: [
      number(side),
      text((r) => r.key),
      text((r) => r.keys),
      text((r) => r.match),
      text((r) => r.candidate),
      text((r) => r.amount),
      text((r) => r.atRisk),
      number(atRiskValue),
      text((r) => r.difference),
      { type: 'date', length: n, valid: dateValid, values: date },
      number(reason),
      number(carry),
    ],
    length: n,
  }
  writeFileSync(setFile(dir), tableToIPC(toArrowTable(table)))
  writeFileSync(overlayFile(dir), JSON.stringify(overlay))
}

/** A set's columns as the engine reads them (strings stay UTF-8 until a row is shown). */
export async function readSet(dir: string): Promise<{ table: Table; overlay: Overlay }> {
  const table = fromArrowTable(tableFromIPC(await readFile(setFile(dir))))
  const overlay = JSON.parse(await readFile(overlayFile(dir), 'utf8')) as Overlay
  return { table, overlay }
}
