// Reading a run's result files: pages of JSON records and streamed exports (CSV or the Arrow file
// as written). Opened files stay in a small cache, so paging through a million matches reads the
// file once. Clean matches and ambiguous groups are two files numbered as one sequence: a page of
// matches shows both in match order unless `ambiguous` picks one (a run stored before the split
// has one matches file holding both, told apart by its `ambiguous` column).

import { createReadStream, existsSync } from 'node:fs'
import { readFile, stat } from 'node:fs/promises'
import { Readable } from 'node:stream'
import { type Table as ArrowTable, DataType, type Field, tableFromIPC, type Vector } from 'apache-arrow'
import { describeUnmatched, type MatchWeights, matchWeights, type PassInfo } from '../engine/explain/evidence.js'
import { ConcordError } from '../errors.js'
import { formatDate, formatDecimal, formatTimestamp } from '../engine/data/values.js'
import { csvBatch, csvHeader } from './csv.js'
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

/** The ambiguous matches' file, or null for a run stored before they had their own. */
async function openAmbiguous(dir: string): Promise<ArrowTable | null> {
  return existsSync(resultFile(dir, 'ambiguous')) ? open(dir, 'ambiguous') : null
}

/** Forgets a run's files (its folder was deleted). */
export function forget(dir: string): void {
  for (let i = cache.length - 1; i >= 0; i--) if (cache[i].key.startsWith(dir)) cache.splice(i, 1)
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

/** Row numbers of a table passing the filter, or null for all rows. */
function selection(
  table: ArrowTable,
  filter: MatchFilter & { failedPass?: string; recordKey?: string },
): number[] | null {
  const tests: ((i: number) => boolean)[] = []
  if (filter.key !== undefined) {
    const [lk, rk] = [table.getChild('left_keys')!, table.getChild('right_keys')!]
    const has = (keys: Iterable<string>) => {
      for (const k of keys) if (k === filter.key) return true
      return false
    }
    tests.push((i) => has(lk.get(i) as Iterable<string>) || has(rk.get(i) as Iterable<string>))
  }
  if (filter.recordKey !== undefined) {
    const key = table.getChild('record_key')!
    tests.push((i) => key.get(i) === filter.recordKey)
  }
  if (filter.pass !== undefined) {
    const pass = table.getChild('pass')!
    tests.push((i) => pass.get(i) === filter.pass)
  }
  if (filter.ambiguous !== undefined) {
    const flag = table.getChild('ambiguous')!
    tests.push((i) => Boolean(flag.get(i)) === filter.ambiguous)
  }
  if (filter.failedPass !== undefined) {
    // the pass a page shows as failed: a record with no candidate in any pass failed the first
    // pass's join (describeUnmatched), though its failed_pass column is null
    const pass = table.getChild('failed_pass')!
    const passes = JSON.parse(table.schema.metadata.get('concord.passes') ?? '[]') as PassInfo[]
    const first = passes[0]?.name ?? null
    tests.push((i) => ((pass.get(i) as string | null) ?? first) === filter.failedPass)
  }
  if (!tests.length) return null
  const rows: number[] = []
  for (let i = 0; i < table.numRows; i++) if (tests.every((t) => t(i))) rows.push(i)
  return rows
}

/** The matches a page lists: rows of the match files, in match order (match_no). */
interface MatchRows {
  total: number
  at(n: number): { table: ArrowTable; row: number }
}

async function matchRows(dir: string, filter: MatchFilter): Promise<MatchRows> {
  const clean = await open(dir, 'matches')
  const held = await openAmbiguous(dir)
  const tables =
    filter.ambiguous === true && held ? [held] : filter.ambiguous === false || !held ? [clean] : [clean, held]
  const selections = tables.map((t) => selection(t, filter))
  if (tables.length === 1) {
    const [table] = tables
    const rows = selections[0]
    return { total: rows ? rows.length : table.numRows, at: (n) => ({ table, row: rows ? rows[n] : n }) }
  }
  const heldNumbers = Int32Array.from(held!.getChild('match_no')!.toArray() as Int32Array)
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
  const cleanNumbers = clean.getChild('match_no')!
  const merged: { table: ArrowTable; row: number }[] = []
  let h = 0
  for (const row of cleanRows) {
    const no = cleanNumbers.get(row) as number
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
      match_id: `m${String(col('match_no').get(i)).padStart(7, '0')}`,
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
  const rows = selection(table, filter)
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

/** A result set's file; a run stored before ambiguous matches had their own file has none for them. */
function exportedFile(dir: string, set: ResultSet): string {
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

/** CSV with a header row, encoded a record batch at a time as the client reads (csv.ts). */
export async function csvExport(dir: string, set: ResultSet): Promise<Readable> {
  exportedFile(dir, set)
  const table = await open(dir, set)
  const batches = table.batches
  let next = -1
  return new Readable({
    read() {
      if (next < 0) {
        next = 0
        this.push(csvHeader(table.schema, set))
        return
      }
      // a batch may hold no rows: go on until something is pushed, or the end
      while (next < batches.length) {
        const chunks = csvBatch(table.schema, batches[next++], set)
        for (const chunk of chunks) this.push(chunk)
        if (chunks.length) return
      }
      this.push(null)
    },
  })
}
