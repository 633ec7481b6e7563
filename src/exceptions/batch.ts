// A completed run's exceptions, computed in the run's worker thread from the engine's columns: the
// new exceptions (written by the worker as a set file beside the results, sidecar.ts), the open
// exceptions of the recipe this run saw still unmatched (their reason refreshed, the run noted),
// and those it matched cleanly (closed as matched_by_later_run, with the match). The service gets
// the counts and the seen/closed ids; no per-record work reaches its event loop.

import type { ColumnBuilder } from '../engine/data/builder.js'
import type { StringColumn } from '../engine/data/column.js'
import type { Table } from '../engine/data/table.js'
import { fnv1a, mix } from '../engine/match/keys.js'
import { comparedColumns, type RunResult } from '../engine/reconcile.js'
import { matchId, recordKeyReader } from '../engine/explain/evidence.js'
import type { LookupSet } from '../engine/data/lookup.js'
import { formatDecimal, POW10 } from '../engine/data/values.js'
import { formatUnits } from '../engine/explain/summary.js'
import { exactDecimal } from '../language/decimal.js'
import type { Recipe } from '../recipes/schema.js'
import { CreatedRows, type Overlay } from './sidecar.js'
import { differenceScale, sideClassifier, present, REASONS, type ValueColumn, valueColumn } from './classify.js'

/** The open exceptions of the run's recipe, by side, as the service read them when the run started. */
export interface OpenItems {
  left: { keys: string[]; ids: number[] }
  right: { keys: string[]; ids: number[] }
  /** Ambiguous groups (side `both`), by their record_key. */
  both: { keys: string[]; ids: number[] }
}

/** What the run's worker is asked to do about exceptions (JobSpec.exceptions). */
export interface ExceptionJob {
  open: OpenItems
  /** Carry the open items into the run (their records read from the runs that stored them). */
  carry: { left: CarrySource[]; right: CarrySource[] } | null
  /** EXCEPTION_FEE_SHARE, as exact decimal text. */
  feeShare: string
}

/** Open items to carry whose records one earlier run stored (its unmatched file of the side). */
export interface CarrySource {
  runDir: string
  keys: string[]
  ids: number[]
}

export interface ExceptionBatch {
  /** How many exceptions the run created (the rows of its set file, in id order). */
  count: number
  /** New exceptions by reason: how many, and their amount at risk (exact). */
  byReason: Record<string, { count: number; amount_at_risk: string | null }>
  /** Open exceptions this run saw still unmatched (or still ambiguous). */
  seen: Overlay['seen']
  /** Open exceptions whose records this run matched cleanly. */
  closed: Overlay['closed']
  /** Records carried in from earlier runs, per side. */
  carried: { left: number; right: number }
  /**
   * Unmatched records whose key another unmatched record of the side already has: a key names one
   * open item, so the first record stands for both (counted here, logged by the service).
   */
  duplicateKeys: number
  /** What classifying them and writing the set file took the run's worker. */
  workerMs?: number
}

/** The rows of the run's input tables that were carried in, and their exceptions' ids. */
export interface CarriedRows {
  left: { from: number; ids: number[] }
  right: { from: number; ids: number[] }
}

export function exceptionBatch(
  job: ExceptionJob,
  recipe: Recipe,
  result: RunResult,
  keys: { leftKey: string[]; rightKey: string[] },
  carried: CarriedRows | null,
  lookups?: LookupSet,
): ExceptionBatch & { rows: CreatedRows } {
  const tables = { l: result.left, r: result.right }
  const compared = comparedColumns(recipe, tables)
  const amount = { l: valueColumn(result.left, compared.amount?.l), r: valueColumn(result.right, compared.amount?.r) }
  const dates = { l: valueColumn(result.left, compared.date?.l), r: valueColumn(result.right, compared.date?.r) }
  const scale = differenceScale(amount)
  const feeShare = exactDecimal(job.feeShare)
  const recordKeys = {
    left: new RecordKeys(result.left, keys.leftKey, result.unmatchedLeft.rows.length),
    right: new RecordKeys(result.right, keys.rightKey, result.unmatchedRight.rows.length),
  }
  const keyOf = { left: recordKeys.left.text, right: recordKeys.right.text }
  const open = {
    left: new Map(job.open.left.keys.map((k, i) => [k, job.open.left.ids[i]])),
    right: new Map(job.open.right.keys.map((k, i) => [k, job.open.right.ids[i]])),
    both: new Map(job.open.both.keys.map((k, i) => [k, job.open.both.ids[i]])),
  }
  let ambiguous = 0
  for (let k = 0; k < result.matches.count; k++) ambiguous += result.matches.ambiguous[k]
  const rows = new CreatedRows(scale, result.unmatchedLeft.rows.length + result.unmatchedRight.rows.length + ambiguous)
  let duplicateKeys = 0
  const seen: ExceptionBatch['seen'] = { ids: [], reason: [], candidate_key: [], amount_at_risk: [], difference: [] }
  const closed: ExceptionBatch['closed'] = { ids: [], match_id: [] }
  const text = (units: number, s: number) => (Number.isNaN(units) ? null : formatDecimal(units, s))
  const dateOf = (c: ValueColumn | undefined, row: number) =>
    !present(c, row) ? Number.NaN : c!.type === 'timestamp' ? Math.floor(c!.values[row] / 86_400_000) : c!.values[row]
  // a recipe with no open items (and an inline recipe: never any) reads no key of a matched record
  const anyOpen =
    open.left.size + open.right.size + open.both.size > 0 ||
    (carried?.left.ids.length ?? 0) + (carried?.right.ids.length ?? 0) > 0
  /** The open exception a record of this run already has: carried in, or the same key. */
  const openId = (side: 'left' | 'right', row: number, key: string): number | undefined => {
    if (!anyOpen) return undefined
    const c = carried?.[side]
    if (c && row >= c.from) return c.ids[row - c.from]
    return open[side].get(key)
  }

  for (const side of ['left', 'right'] as const) {
    const s = side === 'left' ? 'l' : 'r'
    const u = side === 'left' ? result.unmatchedLeft : result.unmatchedRight
    const ownKeys = recordKeys[side]
    const otherKeys = side === 'left' ? recordKeys.right : recordKeys.left
    const own = amount[s]
    const { reason, difference, classify } = sideClassifier(
      { recipe, result, amount, lookups, feeShare: feeShare && feeShare.units > 0n ? feeShare : null },
      side,
    )
    const candidates = side === 'left' ? result.right : result.left
    for (let k = 0; k < u.rows.length; k++) {
      if (k % TOUCH_BLOCK === 0) {
        const end = Math.min(u.rows.length, k + TOUCH_BLOCK)
        touchRows(candidates, u.candidate, k, end)
        ownKeys.hashBlock(u.rows, k, end)
        classify(k, end)
      }
      const row = u.rows[k]
      const hasAmount = present(own, row)
      const units = hasAmount ? own!.values[row] : Number.NaN
      const d = difference[k]
      // a difference is what is at stake when there is a counterpart; otherwise the whole record
      const atRisk =
        (reason[k] === 'amount_outside_tolerance' || reason[k] === 'fee_variance') && !Number.isNaN(d)
          ? Math.abs(d)
          : hasAmount
            ? Math.abs(units) * POW10[scale - own!.scale]
            : Number.NaN
      const cand = u.candidate[k]
      // the key is read as text only to look it up among open items (none for an inline recipe)
      const id = anyOpen ? openId(side, row, ownKeys.text(row)) : undefined
      if (id !== undefined) {
        seen.ids.push(id)
        seen.reason.push(reason[k])
        seen.candidate_key.push(cand >= 0 ? otherKeys.text(cand) : null)
        seen.amount_at_risk.push(text(atRisk, scale))
        seen.difference.push(text(d, scale))
        continue
      }
      if (!ownKeys.firstOf(row, k)) {
        duplicateKeys++
        continue
      }
      ownKeys.appendTo(rows.key, row)
      if (cand >= 0) otherKeys.appendTo(rows.candidate, cand)
      else rows.candidate.append(null)
      rows.add(side, null, null, units, hasAmount ? own!.scale : 0, atRisk, d, dateOf(dates[s], row), reason[k], true)
    }
  }

  const m = result.matches
  for (let k = 0; k < m.count; k++) {
    // most matches are clean, and with no open items there is nothing to do for them: no views made
    if (!m.ambiguous[k] && !anyOpen) continue
    const leftRows = m.leftRows.subarray(m.leftStart[k], m.leftStart[k + 1])
    const rightRows = m.rightRows.subarray(m.rightStart[k], m.rightStart[k + 1])
    if (!m.ambiguous[k]) {
      // a clean match closes the open exceptions of its records
      for (const [side, list] of [
        ['left', leftRows],
        ['right', rightRows],
      ] as const) {
        for (const row of list) {
          const id = openId(side, row, keyOf[side](row))
          if (id !== undefined) {
            closed.ids.push(id)
            closed.match_id.push(matchId(k))
          }
        }
      }
      continue
    }
    const group = { left: Array.from(leftRows, keyOf.left), right: Array.from(rightRows, keyOf.right) }
    const key = `${group.left.join(',')} ⇄ ${group.right.join(',')}`
    const sum = (c: ValueColumn | undefined, list: Int32Array) => {
      let total = 0
      for (const row of list) {
        if (!present(c, row)) return Number.NaN
        total += c!.values[row] * POW10[scale - c!.scale]
      }
      return total
    }
    // records held together for review: their left side's amount is at stake; the right side
    // holds alternatives (a tie), not parts, so no difference is taken
    const l = sum(amount.l, leftRows)
    const atRisk = text(Math.abs(l), scale)
    const id = open.both.get(key)
    if (id !== undefined) {
      seen.ids.push(id)
      seen.reason.push('ambiguous')
      seen.candidate_key.push(null)
      seen.amount_at_risk.push(atRisk)
      seen.difference.push(null)
      continue
    }
    rows.key.append(key)
    rows.candidate.append(null)
    rows.add(
      'both',
      JSON.stringify(group),
      matchId(k),
      l,
      scale,
      Math.abs(l),
      Number.NaN,
      dateOf(dates.l, leftRows[0]),
      'ambiguous',
      false,
    )
  }

  // per reason, units summed in doubles while they stay exact (below 2^53), moved into a BigInt
  // before they could pass it: a BigInt per exception cost ~17 ms on 477,004 of them
  const counts = new Int32Array(REASONS.length)
  const partial = new Float64Array(REASONS.length)
  const summed = new Uint8Array(REASONS.length)
  const sums = REASONS.map(() => 0n)
  for (let i = 0; i < rows.length; i++) {
    const r = rows.reason[i]
    counts[r]++
    const units = rows.atRisk[i]
    if (Number.isNaN(units)) continue
    summed[r] = 1
    const x = partial[r] + units
    if (x > EXACT || x < -EXACT) {
      sums[r] += BigInt(partial[r]) + BigInt(units)
      partial[r] = 0
    } else partial[r] = x
  }
  const byReason: ExceptionBatch['byReason'] = {}
  for (let r = 0; r < REASONS.length; r++) {
    if (counts[r] === 0) continue
    byReason[REASONS[r]] = {
      count: counts[r],
      amount_at_risk: summed[r] ? formatUnits(sums[r] + BigInt(partial[r]), scale) : null,
    }
  }

  return {
    count: rows.length,
    rows,
    byReason,
    seen,
    closed,
    carried: { left: carried?.left.ids.length ?? 0, right: carried?.right.ids.length ?? 0 },
    duplicateKeys,
  }
}

/**
 * Unmatched records are classified and written a block at a time. Their own rows come in order,
 * but their candidates are rows of the other side in any order, and each is read several times
 * (its amount, its key, the conjuncts checked again): a cache miss each time, every one waiting
 * alone. Touching every column of a block's candidates first, in a tight loop, overlaps those
 * misses, and the block's work then reads cache: a modest gain (the batch of the 1M x 1M
 * workload's 477,004 exceptions, five processes each way: wall median 887 against 923 ms).
 */
const TOUCH_BLOCK = 1024

/** Sums of units stay exact in a double up to here (each unit count itself is below 2^53). */
const EXACT = 2 ** 52

/** Reads one byte of every column of `table` at rows[from..to) (-1: none). */
function touchRows(table: Table, rows: Int32Array, from: number, to: number): void {
  let sum = 0
  for (const col of table.data) {
    if (col.type === 'string') {
      const { offsets, data } = col
      for (let k = from; k < to; k++) {
        const row = rows[k]
        if (row >= 0) sum = (sum + data[offsets[row]]) | 0
      }
    } else {
      const values = col.values
      for (let k = from; k < to; k++) {
        const row = rows[k]
        if (row >= 0) sum = (sum + values[row]) | 0
      }
    }
  }
  _touched = sum
}
/** The last sum touchRows read: kept, so its loads are not optimized away. */
let _touched = 0

/**
 * A side's record keys as a run's exceptions need them: appended to the set file's key columns,
 * checked for a key an earlier unmatched record of the side had, and read as text where an open
 * item is looked up. When the key is one text column (the common case) the first two work on its
 * UTF-8 bytes: decoding every unmatched record's key and candidate to a string, a Set of them and
 * encoding them again for the file took ~0.8 s of a run leaving 477,004 unmatched records.
 */
class RecordKeys {
  readonly text: (row: number) => string
  /** The key column, when the key is one text column. */
  private readonly column: StringColumn | null
  /** Its bytes, as the column builder copies from. */
  private readonly bytes: Buffer | null
  /**
   * Rows whose key was seen, in an open-addressed table by the hash of their bytes: at slot s,
   * [2s] is the row + 1 and [2s + 1] its hash, side by side, so a probe that meets another key
   * tells them apart without reading that row (a cache miss in a random place).
   */
  private readonly slots: Int32Array
  private readonly mask: number
  /** Keys seen, where the key is not one text column. */
  private readonly seen = new Set<string>()

  constructor(table: Table, key: string[], capacity: number) {
    this.text = recordKeyReader(table, key)
    const only = key.length === 1 ? table.data[table.columns.findIndex((c) => c.name === key[0])] : undefined
    this.column = only?.type === 'string' ? only : null
    this.bytes = this.column
      ? Buffer.from(this.column.data.buffer, this.column.data.byteOffset, this.column.data.byteLength)
      : null
    let size = 16
    while (this.column && size < capacity * 2) size *= 2
    this.slots = new Int32Array(this.column ? 2 * size : 0)
    this.mask = size - 1
  }

  /** A NULL key reads as '' (as recordKeyReader has it): its range is empty. */
  private end(row: number): number {
    const c = this.column!
    return c.valid !== null && c.valid[row] === 0 ? c.offsets[row] : c.offsets[row + 1]
  }

  appendTo(builder: ColumnBuilder, row: number): void {
    if (this.bytes) builder.appendBytes(this.bytes, this.column!.offsets[row], this.end(row))
    else builder.append(this.text(row))
  }

  /** The hash of a row's key bytes (the key is one text column), as the slots keep it. */
  private hashOf(row: number): number {
    const { offsets, data } = this.column!
    return mix(fnv1a(data, offsets[row], this.end(row))) | 0
  }

  /** The hashes of a block's keys (unmatched rows[from..to)), their slots touched: misses overlap. */
  private readonly blockHashes = new Int32Array(TOUCH_BLOCK)
  private blockFrom = -1
  private blockTo = -1

  hashBlock(rows: Int32Array, from: number, to: number): void {
    if (!this.column) return
    const { slots, mask, blockHashes } = this
    let sum = 0
    for (let k = from; k < to; k++) {
      const hash = this.hashOf(rows[k])
      blockHashes[k - from] = hash
      sum = (sum + slots[2 * (hash & mask)]) | 0
    }
    _touched = sum
    this.blockFrom = from
    this.blockTo = to
  }

  /**
   * Whether no row given before had this row's key (and notes that it has been seen); `k`, the
   * row's place among the side's unmatched records, finds its hash from hashBlock.
   */
  firstOf(row: number, k: number): boolean {
    if (!this.column) {
      const key = this.text(row)
      if (this.seen.has(key)) return false
      this.seen.add(key)
      return true
    }
    const { offsets, data } = this.column
    const { slots } = this
    const s = offsets[row]
    const e = this.end(row)
    const hash = k >= this.blockFrom && k < this.blockTo ? this.blockHashes[k - this.blockFrom] : this.hashOf(row)
    for (let at = hash & this.mask; ; at = (at + 1) & this.mask) {
      const other = slots[2 * at] - 1
      if (other < 0) {
        slots[2 * at] = row + 1
        slots[2 * at + 1] = hash
        return true
      }
      if (slots[2 * at + 1] !== hash) continue
      const t = offsets[other]
      if (this.end(other) - t !== e - s) continue
      let same = true
      for (let p = 0; p < e - s && same; p++) same = data[s + p] === data[t + p]
      if (same) return false
    }
  }
}
