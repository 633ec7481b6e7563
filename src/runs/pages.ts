// Reading a run's result files: pages of JSON records and streamed exports (CSV or the Arrow file
// as written). Opened files stay in a small cache, so paging through a million matches reads the
// file once. Clean matches and ambiguous groups are two files numbered as one sequence: a page of
// matches shows both in match order unless `ambiguous` picks one (a run stored before the split
// has one matches file holding both, told apart by its `ambiguous` column).

import { createReadStream, existsSync } from 'node:fs'
import { type FileHandle, open as openFile, readFile, stat } from 'node:fs/promises'
import { Readable } from 'node:stream'
import {
  type AsyncRecordBatchFileReader,
  type Table as ArrowTable,
  DataType,
  type Field,
  type RecordBatch,
  RecordBatchReader,
  tableFromIPC,
  type Vector,
} from 'apache-arrow'
import {
  describeUnmatched,
  matchId,
  type MatchWeights,
  matchWeights,
  type PassInfo,
} from '../engine/explain/evidence.js'
import { ConcordError } from '../errors.js'
import type { ColumnInfo } from '../engine/data/types.js'
import { fromArrowTable } from '../engine/load/arrow.js'
import { formatDate, formatDecimal, formatTimestamp } from '../engine/data/values.js'
import { CsvWriter, validity } from './csv.js'
import { indexFile, type KeyIndex, readKeyIndex } from './key-index.js'
import { type ResultSet, resultFile } from './results.js'

export type JsonValue = string | number | boolean | null

/** A value of an Arrow column as JSON: decimals as exact strings, dates YYYY-MM-DD, timestamps ISO 8601. */
export function jsonOf(field: Field, vector: Vector, i: number): JsonValue | JsonValue[] {
  const v = vector.get(i)
  if (v === null || v === undefined) return null
  const type = field.type
  if (DataType.isDecimal(type)) return formatDecimal(Number(BigInt(String(v))), type.scale)
  if (DataType.isInt(type)) return Number(v)
  if (DataType.isDate(type)) return formatDate(Math.round(Number(v) / 86_400_000))
  if (DataType.isTimestamp(type)) return formatTimestamp(Number(v))
  if (DataType.isList(type)) return [...(v as Iterable<JsonValue>)]
  if (DataType.isFloat(type)) return Number(v)
  if (DataType.isBool(type)) return Boolean(v)
  return String(v)
}

interface Cached {
  key: string
  table: ArrowTable
}

const cache: Cached[] = []
const CACHE_SIZE = 6

async function open(dir: string, set: ResultSet): Promise<ArrowTable> {
  const path = resultFile(dir, set)
  const s = await stat(path)
  const key = `${path}\0${s.mtimeMs}\0${s.size}`
  const hit = cache.findIndex((c) => c.key === key)
  if (hit >= 0) {
    const [entry] = cache.splice(hit, 1)
    cache.unshift(entry)
    return entry.table
  }
  const table = tableFromIPC(await readFile(path))
  cache.unshift({ key, table })
  cache.length = Math.min(cache.length, CACHE_SIZE)
  return table
}

const indexes = new Map<string, Promise<KeyIndex | null>>()

/** A result file's key index (read once, kept while its table is cached), or null for older runs. */
async function keyIndex(dir: string, set: ResultSet): Promise<KeyIndex | null> {
  const path = resultFile(dir, set)
  const s = await stat(indexFile(path)).catch(() => null)
  if (!s) return null
  // keyed like the tables: a retried run's new index is read again
  const key = `${path}\0${s.mtimeMs}\0${s.size}`
  let index = indexes.get(key)
  if (!index) {
    index = readKeyIndex(path)
    indexes.set(key, index)
    while (indexes.size > CACHE_SIZE) indexes.delete(indexes.keys().next().value!)
  }
  return index
}

/** The ambiguous matches' file, or null for a run stored before they had their own. */
async function openAmbiguous(dir: string): Promise<ArrowTable | null> {
  return existsSync(resultFile(dir, 'ambiguous')) ? open(dir, 'ambiguous') : null
}

/** Forgets a run's files (its folder was deleted). */
export function forget(dir: string): void {
  for (let i = cache.length - 1; i >= 0; i--) if (cache[i].key.startsWith(dir)) cache.splice(i, 1)
  for (const path of indexes.keys()) if (path.startsWith(dir)) indexes.delete(path)
}

export interface MatchFilter {
  pass?: string
  ambiguous?: boolean
  /** Only the matches holding this record key, on either side. */
  key?: string
}

export interface Page<T> {
  total: number
  offset: number
  limit: number
  items: T[]
}

/**
 * Rows of a dictionary column (pass, failed_pass) whose value passes `wanted`, by scanning its
 * Int32 indices batch by batch (a million rows in a few milliseconds; Arrow's get() per row took
 * seconds and held the event loop).
 */
function dictionaryRows(table: ArrowTable, name: string, wanted: (value: string | null) => boolean): number[] {
  const c = table.schema.fields.findIndex((f) => f.name === name)
  const rows: number[] = []
  let base = 0
  for (const batch of table.batches) {
    const data = batch.data.children[c]
    if (batch.numRows > 0) {
      const dictionary = data.dictionary
      const ok = Array.from({ length: dictionary?.length ?? 0 }, (_, k) => wanted(dictionary!.get(k) as string))
      const nullOk = wanted(null)
      const indices = data.values as Int32Array
      const valid = validity(data)
      for (let i = 0; i < batch.numRows; i++) {
        if (valid === null || valid(i) ? ok[indices[i]] : nullOk) rows.push(base + i)
      }
    }
    base += batch.numRows
  }
  return rows
}

/** Row numbers of a table passing the filter, or null for all rows. */
async function selection(
  dir: string,
  set: ResultSet,
  table: ArrowTable,
  filter: MatchFilter & { failedPass?: string; recordKey?: string },
): Promise<number[] | null> {
  let rows: number[] | null = null
  const tests: ((i: number) => boolean)[] = []
  const passes = JSON.parse(table.schema.metadata.get('concord.passes') ?? '[]') as PassInfo[]
  for (const [param, name] of [
    ['pass', filter.pass],
    ['failed_pass', filter.failedPass],
  ] as const) {
    // a misspelt pass would select nothing, which reads as "no such records"
    if (name !== undefined && passes.length && !passes.some((p) => p.name === name))
      throw new ConcordError(
        'unknown_pass',
        `the run has no pass "${name}" (${param}=)`,
        400,
        `use one of: ${passes.map((p) => p.name).join(', ')}`,
      )
  }
  const key = filter.key ?? filter.recordKey
  if (key !== undefined) {
    // the rows the run's key index names (a superset), each checked below; a run stored before
    // indexes is scanned
    const index = await keyIndex(dir, set)
    if (index) rows = index.candidates(key)
  }
  if (filter.key !== undefined) {
    const [lk, rk] = [table.getChild('left_keys')!, table.getChild('right_keys')!]
    const has = (keys: Iterable<string>) => {
      for (const k of keys) if (k === filter.key) return true
      return false
    }
    tests.push((i) => has(lk.get(i) as Iterable<string>) || has(rk.get(i) as Iterable<string>))
  }
  if (filter.recordKey !== undefined) {
    const column = table.getChild('record_key')!
    tests.push((i) => column.get(i) === filter.recordKey)
  }
  if (filter.ambiguous !== undefined) {
    const flag = table.getChild('ambiguous')!
    tests.push((i) => Boolean(flag.get(i)) === filter.ambiguous)
  }
  const narrow = (picked: number[]) => {
    if (rows === null) return picked
    const keep = new Set(picked)
    return rows.filter((i) => keep.has(i))
  }
  if (filter.pass !== undefined) rows = narrow(dictionaryRows(table, 'pass', (v) => v === filter.pass))
  if (filter.failedPass !== undefined) {
    // the pass a page shows as failed: a record with no candidate in any pass failed the first
    // pass's join (describeUnmatched), though its failed_pass column is null
    const first = passes[0]?.name ?? null
    rows = narrow(dictionaryRows(table, 'failed_pass', (v) => (v ?? first) === filter.failedPass))
  }
  if (!tests.length) return rows
  const all = rows ?? Array.from({ length: table.numRows }, (_, i) => i)
  return all.filter((i) => tests.every((t) => t(i)))
}

/**
 * Each row's match number (1 for m0000001): from `match_id`, or from `match_no` (Int32) in the
 * files of runs stored before the id was written as text.
 */
function matchNumbers(table: ArrowTable): (row: number) => number {
  const legacy = table.getChild('match_no')
  if (legacy) return (row) => legacy.get(row) as number
  const ids = table.getChild('match_id')!
  return (row) => Number((ids.get(row) as string).slice(1))
}

/** A match's id as the pages, CSV and Arrow exports show it. */
function matchIdAt(table: ArrowTable, row: number): string {
  const legacy = table.getChild('match_no')
  return legacy ? matchId((legacy.get(row) as number) - 1) : (table.getChild('match_id')!.get(row) as string)
}

/** The matches a page lists: rows of the match files, in match order (match_id). */
interface MatchRows {
  total: number
  at(n: number): { table: ArrowTable; row: number }
}

async function matchRows(dir: string, filter: MatchFilter): Promise<MatchRows> {
  const clean = await open(dir, 'matches')
  const held = await openAmbiguous(dir)
  const tables =
    filter.ambiguous === true && held ? [held] : filter.ambiguous === false || !held ? [clean] : [clean, held]
  const selections = await Promise.all(
    tables.map((t) => selection(dir, t === held ? 'ambiguous' : 'matches', t, filter)),
  )
  if (tables.length === 1) {
    const [table] = tables
    const rows = selections[0]
    return { total: rows ? rows.length : table.numRows, at: (n) => ({ table, row: rows ? rows[n] : n }) }
  }
  const heldNumber = matchNumbers(held!)
  const heldNumbers = Int32Array.from({ length: held!.numRows }, (_, row) => heldNumber(row))
  if (!selections[0] && !selections[1]) {
    // every match of the run, numbered 1..total: place n holds match n + 1, in whichever file has it
    return {
      total: clean.numRows + held!.numRows,
      at: (n) => {
        const before = lowerBound(heldNumbers, n + 1)
        return heldNumbers[before] === n + 1 ? { table: held!, row: before } : { table: clean, row: n - before }
      },
    }
  }
  const cleanRows = selections[0] ?? Array.from({ length: clean.numRows }, (_, i) => i)
  const heldRows = selections[1] ?? Array.from({ length: held!.numRows }, (_, i) => i)
  const cleanNumber = matchNumbers(clean)
  const merged: { table: ArrowTable; row: number }[] = []
  let h = 0
  for (const row of cleanRows) {
    const no = cleanNumber(row)
    while (h < heldRows.length && heldNumbers[heldRows[h]] < no) merged.push({ table: held!, row: heldRows[h++] })
    merged.push({ table: clean, row })
  }
  while (h < heldRows.length) merged.push({ table: held!, row: heldRows[h++] })
  return { total: merged.length, at: (n) => merged[n] }
}

/** The first index whose value is >= x in an ascending array. */
function lowerBound(a: Int32Array, x: number): number {
  let lo = 0
  let hi = a.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (a[mid] < x) lo = mid + 1
    else hi = mid
  }
  return lo
}

export async function matchesPage(dir: string, offset: number, limit: number, filter: MatchFilter = {}) {
  const rows = await matchRows(dir, filter)
  const items = []
  // each file (matches, ambiguous) has its own columns and passes' metadata
  const readers = new Map<ArrowTable, (i: number) => MatchWeights | undefined>()
  for (let n = offset; n < Math.min(rows.total, offset + limit); n++) {
    const { table, row: i } = rows.at(n)
    const col = (name: string) => table.getChild(name)!
    const amountField = table.schema.fields.find((f) => f.name === 'amount_delta')!
    const days = col('days_delta').get(i) as number | null
    let weights = readers.get(table)
    if (!weights) readers.set(table, (weights = waterfallReader(table)))
    const w = weights(i)
    items.push({
      match_id: matchIdAt(table, i),
      pass: String(col('pass').get(i)),
      pattern: String(col('pattern').get(i)),
      left_keys: [...(col('left_keys').get(i) as Iterable<string>)],
      right_keys: [...(col('right_keys').get(i) as Iterable<string>)],
      score: Number(col('score').get(i)),
      deltas: { amount: jsonOf(amountField, col('amount_delta'), i) as string | null, days: days ?? null },
      ambiguous: Boolean(col('ambiguous').get(i)),
      ...(w ? { weights: w } : {}),
    })
  }
  return { total: rows.total, offset, limit, items }
}

/** Reads a probabilistic match's waterfall (undefined for other matches, or files without one). */
function waterfallReader(table: ArrowTable): (i: number) => MatchWeights | undefined {
  const levels = table.getChild('levels')
  const weights = table.getChild('weights')
  if (!levels || !weights) return () => undefined
  const passes = JSON.parse(table.schema.metadata.get('concord.passes') ?? '[]') as PassInfo[]
  const pass = table.getChild('pass')!
  return (i) => {
    const l = levels.get(i) as Iterable<number> | null
    const w = weights.get(i) as Iterable<number> | null
    const info = passes.find((p) => p.name === pass.get(i))
    if (!l || !w || !info) return undefined
    return matchWeights(info, [...l], [...w])
  }
}

/** Reads the nearest miss of row i of an unmatched-records file, and says why the record is unmatched. */
function missReader(table: ArrowTable, side: 'left' | 'right') {
  const passes = JSON.parse(table.schema.metadata.get('concord.passes') ?? '[]') as PassInfo[]
  const [candidate, pass, conjunct, taken] = [
    'closest_candidate',
    'failed_pass',
    'failed_conjunct',
    'candidate_taken',
  ].map((name) => table.getChild(name)!)
  // absent from runs stored before `prefer`
  const tied = table.getChild('tied_with')
  return (i: number) => {
    const passName = pass.get(i) as string | null
    const miss = {
      pass: passes.find((p) => p.name === passName) ?? null,
      conjunct: (conjunct.get(i) as string | null) ?? null,
      candidate: (candidate.get(i) as string | null) ?? null,
      taken: Boolean(taken.get(i)),
      tiedWith: (tied?.get(i) as string | null | undefined) ?? null,
    }
    return {
      closest_candidate: miss.candidate,
      ...describeUnmatched(miss, side, passes),
      tied_with: miss.tiedWith,
    }
  }
}

export async function unmatchedPage(
  dir: string,
  side: 'left' | 'right',
  offset: number,
  limit: number,
  filter: { failedPass?: string; recordKey?: string } = {},
) {
  const table = await open(dir, `unmatched-${side}`)
  const rows = await selection(dir, `unmatched-${side}`, table, filter)
  const total = rows ? rows.length : table.numRows
  const prefix = side === 'left' ? 'l.' : 'r.'
  const fields = table.schema.fields.filter((f) => f.name.startsWith(prefix))
  const col = (name: string) => table.getChild(name)!
  const miss = missReader(table, side)
  const items = []
  for (let n = offset; n < Math.min(total, offset + limit); n++) {
    const i = rows ? rows[n] : n
    const record: Record<string, JsonValue | JsonValue[]> = {}
    for (const f of fields) record[f.name.slice(prefix.length)] = jsonOf(f, col(f.name), i)
    items.push({ record_key: String(col('record_key').get(i)), ...miss(i), record })
  }
  return { total, offset, limit, items }
}

/**
 * The two sides' columns as a completed run stored them (the `l.`/`r.` columns of its unmatched
 * files), with their types: what the run matched, whatever the sources hold since.
 */
export async function storedSchemas(dir: string): Promise<{ l: ColumnInfo[]; r: ColumnInfo[] }> {
  const side = async (set: 'unmatched-left' | 'unmatched-right', prefix: string) =>
    fromArrowTable((await open(dir, set)).slice(0, 0), (name) => name.startsWith(prefix)).columns.map((c) => ({
      ...c,
      name: c.name.slice(prefix.length),
    }))
  return { l: await side('unmatched-left', 'l.'), r: await side('unmatched-right', 'r.') }
}

/** A result set's file; a run stored before ambiguous matches had their own file has none for them. */
export function exportedFile(dir: string, set: ResultSet): string {
  const path = resultFile(dir, set)
  if (set === 'ambiguous' && !existsSync(path))
    throw new ConcordError(
      'result_set_missing',
      'this run was stored before ambiguous matches had their own set: its matches export holds them (column ambiguous)',
      404,
      'retry the run to store them apart',
    )
  return path
}

/** The Arrow file as written. */
export function arrowExport(dir: string, set: ResultSet): Readable {
  return createReadStream(exportedFile(dir, set))
}

/** Rows encoded at a time: a slice's bytes are about a message's. */
const CSV_SLICE_ROWS = 4096

/**
 * A result set read as CSV a step at a time: the file is read a record batch at a time (never
 * whole) and encoded through one reused buffer (csv.ts). This is CPU work: the service runs it on
 * the export worker (exporter.ts), never on the event loop.
 */
export class CsvCursor {
  private batches: AsyncIterator<RecordBatch> | undefined
  private batch: RecordBatch | undefined
  private at = 0
  private emit: (chunk: Uint8Array) => void = () => {}
  private readonly csv: CsvWriter

  private constructor(
    private readonly handle: FileHandle,
    private readonly reader: AsyncRecordBatchFileReader,
    set: ResultSet,
    chunkBytes: number,
  ) {
    this.csv = new CsvWriter(reader.schema, set, (chunk) => this.emit(chunk), chunkBytes)
  }

  static async open(dir: string, set: ResultSet, chunkBytes: number): Promise<CsvCursor> {
    const handle = await openFile(exportedFile(dir, set))
    try {
      const reader = (await RecordBatchReader.from(handle)) as unknown as AsyncRecordBatchFileReader
      await reader.open()
      return new CsvCursor(handle, reader, set, chunkBytes)
    } catch (err) {
      await handle.close()
      throw err
    }
  }

  /**
   * Encodes until at least one chunk went to `emit` (each valid only during its call), or to the
   * end; true when the set is done.
   */
  async next(emit: (chunk: Uint8Array) => void): Promise<boolean> {
    let emitted = false
    this.emit = (chunk) => {
      emitted = true
      emit(chunk)
    }
    if (!this.batches) {
      this.csv.header()
      this.batches = this.reader[Symbol.asyncIterator]()
    }
    while (!emitted) {
      if (!this.batch || this.at >= this.batch.numRows) {
        const step = await this.batches.next()
        if (step.done) {
          this.csv.flush()
          return true
        }
        this.batch = step.value
        this.at = 0
      }
      this.csv.rows(this.batch.slice(this.at, this.at + CSV_SLICE_ROWS))
      this.at += CSV_SLICE_ROWS
    }
    return false
  }

  async close(): Promise<void> {
    await this.reader.cancel().catch(() => {})
    await this.handle.close().catch(() => {})
  }
}
