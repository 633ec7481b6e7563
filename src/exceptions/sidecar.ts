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
import { tableFromIPC } from 'apache-arrow'
import { stringColumn, toArrowTable } from '../engine/data/arrow.js'
import { type ColumnBuilder, columnBuilder } from '../engine/data/builder.js'
import type { Table } from '../engine/data/table.js'
import { fromArrowTable } from '../engine/load/arrow.js'
import { writeArrowFile } from '../runs/arrow-file.js'
import { REASONS, type Reason } from './classify.js'

export const SIDES = ['left', 'right', 'both'] as const

/**
 * The exceptions a run creates, column by column as the worker classifies them (no object per
 * exception: a run can leave half a million). Amounts stay scaled integer units until a row is
 * shown: the record's amount at its own scale, the amount at risk and the difference at the set's.
 * The record's key and its candidate's are appended by the caller to `key` and `candidate` (as
 * UTF-8 bytes copied from the run's key column where it can: batch.ts), one per `add`.
 */
export class CreatedRows {
  length = 0
  readonly side: Uint8Array
  readonly key: ColumnBuilder
  readonly keys: (string | null)[] = []
  readonly match: (string | null)[] = []
  readonly candidate: ColumnBuilder
  /** NaN: no amount. */
  readonly amountUnits: Float64Array
  readonly amountScale: Uint8Array
  /** Units at `scale`; NaN: nothing known (stored as 0). */
  readonly atRisk: Float64Array
  readonly difference: Float64Array
  /** Days since the epoch; NaN: no date. */
  readonly date: Float64Array
  readonly reason: Uint8Array
  readonly carry: Uint8Array

  /** At most `capacity` rows (the run's unmatched records and ambiguous matches). */
  constructor(
    readonly scale: number,
    capacity: number,
  ) {
    this.side = new Uint8Array(capacity)
    // exact: a key is kept as it is ('' included), not trimmed as text from a file would be
    this.key = columnBuilder({ name: 'record_key', type: 'string', nullable: true }, Math.max(1, capacity), true)
    this.candidate = columnBuilder(
      { name: 'candidate_key', type: 'string', nullable: true },
      Math.max(1, capacity),
      true,
    )
    this.amountUnits = new Float64Array(capacity)
    this.amountScale = new Uint8Array(capacity)
    this.atRisk = new Float64Array(capacity)
    this.difference = new Float64Array(capacity)
    this.date = new Float64Array(capacity)
    this.reason = new Uint8Array(capacity)
    this.carry = new Uint8Array(capacity)
  }

  /** Adds a row whose key and candidate key the caller has just appended. */
  add(
    side: 'left' | 'right' | 'both',
    keys: string | null,
    match: string | null,
    amountUnits: number,
    amountScale: number,
    atRisk: number,
    difference: number,
    date: number,
    reason: Reason,
    carry: boolean,
  ): void {
    const i = this.length++
    this.side[i] = side === 'left' ? 0 : side === 'right' ? 1 : 2
    this.keys.push(keys)
    this.match.push(match)
    this.amountUnits[i] = amountUnits
    this.amountScale[i] = amountScale
    this.atRisk[i] = atRisk
    this.difference[i] = difference
    this.date[i] = date
    this.reason[i] = REASONS.indexOf(reason)
    this.carry[i] = carry ? 1 : 0
  }
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
  /** The scale of the set's amounts at risk and differences (in the file). */
  scale?: number
}

export const setFile = (dir: string) => join(dir, 'exceptions.arrow')
export const overlayFile = (dir: string) => join(dir, 'exceptions-overlay.json')

const number = (values: Float64Array | Uint8Array, n: number) => ({
  type: 'float' as const,
  length: n,
  valid: null,
  values: values instanceof Float64Array ? values.subarray(0, n) : Float64Array.from(values.subarray(0, n)),
})

/** Writes the created exceptions (in id order) and the overlay into a run's results folder. */
export function writeSet(dir: string, rows: CreatedRows, overlay: Overlay): void {
  mkdirSync(dir, { recursive: true })
  const n = rows.length
  const date = new Int32Array(n)
  const dateValid = new Uint8Array(n)
  for (let i = 0; i < n; i++)
    if (!Number.isNaN(rows.date[i])) {
      date[i] = rows.date[i]
      dateValid[i] = 1
    }
  const floats = ['side', 'amount_units', 'amount_scale', 'at_risk', 'difference', 'reason', 'carry'] as const
  const strings = ['record_key', 'keys', 'match_id', 'candidate_key'] as const
  const table: Table = {
    columns: [
      ...floats.map((name) => ({ name, type: 'float' as const, nullable: false })),
      ...strings.map((name) => ({ name, type: 'string' as const, nullable: true })),
      { name: 'record_date', type: 'date', nullable: true },
    ],
    data: [
      number(rows.side, n),
      number(rows.amountUnits, n),
      number(rows.amountScale, n),
      number(rows.atRisk, n),
      number(rows.difference, n),
      number(rows.reason, n),
      number(rows.carry, n),
      rows.key.finish(),
      stringColumn(rows.keys),
      stringColumn(rows.match),
      rows.candidate.finish(),
      { type: 'date', length: n, valid: dateValid, values: date },
    ],
    length: n,
  }
  writeArrowFile(setFile(dir), toArrowTable(table), 'stream')
  writeFileSync(overlayFile(dir), JSON.stringify({ ...overlay, scale: rows.scale }))
}

/** A set's columns as the engine reads them (strings stay UTF-8 until a row is shown). */
export async function readSet(dir: string): Promise<{ table: Table; overlay: Overlay }> {
  const table = fromArrowTable(tableFromIPC(await readFile(setFile(dir))))
  const overlay = JSON.parse(await readFile(overlayFile(dir), 'utf8')) as Overlay
  return { table, overlay }
}
