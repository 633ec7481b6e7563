// A run's results on disk: four Arrow IPC files in the run's folder — matches (the clean ones),
// ambiguous (the groups held for review), unmatched-left and unmatched-right — written once by the
// run's worker, then read many times (pages, exports) without running the match again. The run's
// database row holds the summary; these hold the bulk. Matches keep one numbering across the two
// match files (match_id, m0000001 for the first match of the run), so ids stay those of the run.

import { join } from 'node:path'
import {
  type Data,
  Dictionary,
  Int32,
  makeData,
  makeVector,
  Table as ArrowTable,
  Utf8,
  type Vector,
} from 'apache-arrow'
import { largeArray } from '../engine/data/alloc.js'
import {
  arrowColumns,
  arrowData,
  numberListVector,
  stringColumn,
  stringListVector,
  stringViewData,
} from '../engine/data/arrow.js'
import type { StringColumn } from '../engine/data/column.js'
import { takeColumn } from '../engine/data/column.js'
import { type MatchSet, type PassInfo, recordKeyReader, type UnmatchedSet } from '../engine/explain/evidence.js'
import type { RunResult } from '../engine/reconcile.js'
import type { Table } from '../engine/data/table.js'
import { formatDecimal, POW10 } from '../engine/data/values.js'
import { writeArrowFile } from './arrow-file.js'
import { writeKeyIndex } from './key-index.js'

export const RESULT_SETS = ['matches', 'ambiguous', 'unmatched-left', 'unmatched-right'] as const
export type ResultSet = (typeof RESULT_SETS)[number]

export const resultFile = (dir: string, set: ResultSet) => join(dir, `${set}.arrow`)

/**
 * Every row's record key as a string column: the key column itself when it is one string column.
 * Made once per table and key: a set written in slices (resultSlice) asks for it per slice.
 */
function keyColumn(table: Table, key: string[]): StringColumn {
  if (key.length === 1) {
    const c = table.columns.findIndex((x) => x.name === key[0])
    const col = table.data[c]
    if (col?.type === 'string' && col.valid === null) return col
  }
  const made = madeKeys.get(table)
  const name = JSON.stringify(key)
  if (made?.name === name) return made.column
  const read = recordKeyReader(table, key)
  const column = stringColumn(Array.from({ length: table.length }, (_, row) => read(row)))
  madeKeys.set(table, { name, column })
  return column
}
const madeKeys = new WeakMap<Table, { name: string; column: StringColumn }>()

/** Strings from a small set of values, as an Arrow dictionary column (pass names, patterns). */
function dictionaryVector(values: string[], indices: Int32Array, valid: Uint8Array | null = null): Vector {
  const dictionary = makeVector(arrowData(stringColumn(values)))
  const type = new Dictionary(new Utf8(), new Int32())
  let nullCount = 0
  let nullBitmap: Uint8Array | undefined
  if (valid) {
    nullBitmap = new Uint8Array((indices.length + 7) >> 3)
    for (let i = 0; i < indices.length; i++) {
      if (valid[i]) nullBitmap[i >> 3] |= 1 << (i & 7)
      else nullCount++
    }
  }
  return makeVector(
    makeData({ type, length: indices.length, nullCount, nullBitmap, data: indices, dictionary } as never),
  )
}

function float64Vector(values: Float64Array): Vector {
  let valid: Uint8Array | null = null
  for (let i = 0; i < values.length; i++) {
    if (Number.isNaN(values[i])) {
      valid ??= largeArray(Uint8Array, values.length).fill(1)
      valid[i] = 0
    }
  }
  return makeVector(arrowData({ type: 'float', length: values.length, valid, values }))
}

function boolVector(values: Uint8Array): Vector {
  return makeVector(arrowData({ type: 'boolean', length: values.length, valid: null, values }))
}

/**
 * Amount deltas as Decimal128 at the largest scale of the passes (units rescaled exactly), NULL
 * where a match has none; as text when a pass compares float amounts.
 */
function amountVector(units: Float64Array, passOf: Int32Array, passes: PassInfo[]): Vector {
  const n = units.length
  if (passes.some((p) => p.amountScale < 0)) {
    const text = Array.from(units, (u, k) => {
      const scale = passes[passOf[k]].amountScale
      return Number.isNaN(u) ? null : scale < 0 ? String(u) : formatDecimal(u, scale)
    })
    return makeVector(arrowData(stringColumn(text)))
  }
  const scale = Math.max(0, ...passes.map((p) => p.amountScale))
  const values = largeArray(Float64Array, n)
  let valid: Uint8Array | null = null
  for (let k = 0; k < n; k++) {
    if (Number.isNaN(units[k])) {
      valid ??= new Uint8Array(n).fill(1)
      valid[k] = 0
    } else values[k] = units[k] * POW10[scale - passes[passOf[k]].amountScale]
  }
  return makeVector(arrowData({ type: 'decimal', length: n, valid, values, scale }))
}

/**
 * Probabilistic matches: the match weight, and each comparison's level and weight (the
 * waterfall; pages.ts turns them back into names and labels with the passes' metadata). NULL for
 * other matches. No columns when no pass was probabilistic.
 */
function waterfallVectors(m: RunResult['matches'], passes: PassInfo[]): Record<string, Vector> {
  const w = m.waterfall
  if (!w) return {}
  const starts = largeArray(Int32Array, m.count + 1)
  const valid = new Uint8Array(m.count)
  for (let k = 0; k < m.count; k++) {
    const e = w.entry[k]
    valid[k] = e > 0 ? 1 : 0
    starts[k + 1] = starts[k] + (e > 0 ? w.start[e] - w.start[e - 1] : 0)
  }
  const levels = largeArray(Int32Array, starts[m.count])
  const weights = largeArray(Float64Array, starts[m.count])
  const matchWeight = largeArray(Float64Array, m.count).fill(Number.NaN)
  for (let k = 0; k < m.count; k++) {
    const e = w.entry[k]
    if (e === 0) continue
    let total = passes[m.pass[k]].probabilistic?.prior ?? 0
    for (let x = w.start[e - 1], at = starts[k]; x < w.start[e]; x++, at++) {
      levels[at] = w.level[x]
      weights[at] = w.weight[x]
      total += w.weight[x]
    }
    matchWeight[k] = Math.round(total * 1000) / 1000
  }
  return {
    match_weight: float64Vector(matchWeight),
    levels: numberListVector(levels, starts, valid),
    weights: numberListVector(weights, starts, valid),
  }
}

export interface ResultsInput {
  result: RunResult
  leftKey: string[]
  rightKey: string[]
  /**
   * The unmatched records with all their columns, in the order of the unmatched sets, when the
   * result's tables hold only some columns (the PostgreSQL engine); else taken from those tables.
   */
  records?: { left: Table; right: Table }
}

/**
 * The matches whose ambiguous flag is `flag`, with their numbers in the run (match_no; `first`: the
 * number of m's first match, when m is a slice of the run's). A run without ambiguous matches
 * writes its match columns as they are.
 */
function matchesFlagged(m: MatchSet, flag: 0 | 1, first = 1): { set: MatchSet; numbers: Int32Array } {
  let flagged = 0
  for (let k = 0; k < m.count; k++) if (m.ambiguous[k] === flag) flagged++
  if (flagged === m.count) {
    // a plain loop: TypedArray.from with a mapping function calls it per element (~80 ms at 1M)
    const numbers = largeArray(Int32Array, m.count)
    for (let k = 0; k < m.count; k++) numbers[k] = k + first
    return { set: m, numbers }
  }
  const picked = largeArray(Int32Array, flagged)
  for (let k = 0, x = 0; k < m.count; k++) if (m.ambiguous[k] === flag) picked[x++] = k
  const n = picked.length
  const leftStart = largeArray(Int32Array, n + 1)
  const rightStart = largeArray(Int32Array, n + 1)
  for (let x = 0; x < n; x++) {
    const k = picked[x]
    leftStart[x + 1] = leftStart[x] + m.leftStart[k + 1] - m.leftStart[k]
    rightStart[x + 1] = rightStart[x] + m.rightStart[k + 1] - m.rightStart[k]
  }
  const leftRows = largeArray(Int32Array, leftStart[n])
  const rightRows = largeArray(Int32Array, rightStart[n])
  for (let x = 0; x < n; x++) {
    const k = picked[x]
    leftRows.set(m.leftRows.subarray(m.leftStart[k], m.leftStart[k + 1]), leftStart[x])
    rightRows.set(m.rightRows.subarray(m.rightStart[k], m.rightStart[k + 1]), rightStart[x])
  }
  return {
    set: {
      count: n,
      pass: gather(largeArray(Int32Array, n), m.pass, picked),
      score: gather(largeArray(Float64Array, n), m.score, picked),
      ambiguous: gather(largeArray(Uint8Array, n), m.ambiguous, picked),
      amountDelta: gather(largeArray(Float64Array, n), m.amountDelta, picked),
      daysDelta: gather(largeArray(Float64Array, n), m.daysDelta, picked),
      leftStart,
      leftRows,
      rightStart,
      rightRows,
      ...(m.waterfall ? { waterfall: { ...m.waterfall, entry: picked.map((k) => m.waterfall!.entry[k]) } } : {}),
    },
    numbers: picked.map((k) => k + first),
  }
}

/** `out[x] = src[picked[x]]`: a loop, not TypedArray.from with a mapping function per element. */
function gather<T extends Int32Array | Float64Array | Uint8Array>(
  out: T,
  src: ArrayLike<number>,
  picked: Int32Array,
): T {
  for (let x = 0; x < picked.length; x++) out[x] = src[picked[x]]
  return out
}

/**
 * Match ids as a string column, `m0000001` for match 1 (matchId): the same text in the pages, the
 * CSV and the Arrow exports, so the three join. Written digit by digit: a million JS strings
 * encoded one by one cost ~0.1 s.
 */
function matchIds(numbers: Int32Array): StringColumn {
  const n = numbers.length
  const offsets = largeArray(Int32Array, n + 1)
  for (let k = 0; k < n; k++) {
    let digits = 1
    for (let v = numbers[k]; v >= 10; v = Math.floor(v / 10)) digits++
    offsets[k + 1] = offsets[k] + 1 + Math.max(7, digits)
  }
  const data = largeArray(Uint8Array, offsets[n])
  for (let k = 0; k < n; k++) {
    let v = numbers[k]
    data[offsets[k]] = 0x6d // m
    for (let at = offsets[k + 1] - 1; at > offsets[k]; at--) {
      data[at] = 0x30 + (v % 10)
      v = Math.floor(v / 10)
    }
  }
  return { type: 'string', length: n, valid: null, offsets, data }
}

/** `to[from[k]]` for the first `n` of `from` (a loop of its own: see missColumns). */
function mapped(from: Int32Array | Uint8Array, n: number, to: number[]): Int32Array {
  const out = largeArray(Int32Array, n)
  for (let k = 0; k < n; k++) out[k] = to[from[k]]
  return out
}

function matchesTable(
  { set: m, numbers }: { set: MatchSet; numbers: Int32Array },
  passes: PassInfo[],
  keys: KeyRows,
  views: boolean,
): ArrowTable {
  const patterns = [...new Set(passes.map((p) => p.pattern))]
  const patternIndex = mapped(
    m.pass,
    m.count,
    passes.map((p) => patterns.indexOf(p.pattern)),
  )
  // encoded at once (views), the numbers themselves: the CSV writer spells match_no as the id
  // (csv.ts), so the million id strings (~40 ms) are not made only to be copied
  const id: Record<string, Vector> = views
    ? { match_no: makeVector(makeData({ type: new Int32(), length: m.count, nullCount: 0, data: numbers })) }
    : { match_id: makeVector(arrowData(matchIds(numbers))) }
  return new ArrowTable({
    ...id,
    pass: dictionaryVector(
      passes.map((p) => p.name),
      m.pass,
    ),
    pattern: dictionaryVector(patterns, patternIndex),
    left_keys: stringListVector(keys.left(m.leftRows), m.leftStart),
    right_keys: stringListVector(keys.right(m.rightRows), m.rightStart),
    score: makeVector(arrowData({ type: 'float', length: m.count, valid: null, values: m.score })),
    amount_delta: amountVector(m.amountDelta, m.pass, passes),
    days_delta: float64Vector(m.daysDelta),
    ambiguous: boolVector(m.ambiguous),
    ...waterfallVectors(m, passes),
  })
}

/** Some rows of a side's key column (NULL where `valid` is 0), as Arrow data. */
type KeyRows = Record<'left' | 'right', (rows: Int32Array, valid?: Uint8Array | null) => Data>

/**
 * The loaded columns as Arrow vectors, for views over them: one vector per column, whatever slice
 * of a set is written, so what is worked out once per buffer (csv.ts: plainBytes) is found again.
 */
const viewed = new WeakMap<StringColumn, Vector>()

/**
 * Rows of a string column as Arrow data: gathered into a column of their own (what the stored files
 * hold), or as `views` over the loaded column (what CSV is encoded from, see stringViewData).
 */
function stringRows(views: boolean) {
  return (col: StringColumn, rows: Int32Array, valid: Uint8Array | null = null): Data => {
    if (views) return stringViewData(col, rows, valid, viewed)
    const taken = takeColumn(col, rows) as StringColumn
    return arrowData(valid ? { ...taken, valid } : taken)
  }
}

/** A side's record columns at `rows` (views of string columns, see stringRows). */
function recordColumns(
  table: Table,
  rows: Int32Array,
  prefix: string,
  strings: ReturnType<typeof stringRows>,
): Record<string, Vector> {
  const out: Record<string, Vector> = {}
  table.columns.forEach((info, c) => {
    const col = table.data[c]
    out[`${prefix}${info.name}`] = makeVector(
      col.type === 'string' ? strings(col, rows, null) : arrowData(takeColumn(col, rows)),
    )
  })
  return out
}

/** Rows per record batch in the files: an export or a worker reads one batch at a time. */
export const BATCH_ROWS = 65_536

/** The table as record batches of at most BATCH_ROWS rows. */
function batched(table: ArrowTable): ArrowTable {
  if (table.numRows <= BATCH_ROWS) return table
  const batches = []
  for (let at = 0; at < table.numRows; at += BATCH_ROWS) batches.push(...table.slice(at, at + BATCH_ROWS).batches)
  const out = new ArrowTable(batches)
  for (const [k, v] of table.schema.metadata) out.schema.metadata.set(k, v)
  return out
}

/** Writes one result file of a completed run into `dir` (which exists), and its key index. */
export async function writeArrowSet(dir: string, input: ResultsInput, set: ResultSet): Promise<void> {
  const table = resultTables(input, [set])[set] as ArrowTable
  const file = resultFile(dir, set)
  writeArrowFile(file, batched(table), 'file')
  // `?key=` lookups read this instead of scanning the file (key-index.ts)
  await writeKeyIndex(file, table)
}

/**
 * The nearest misses of unmatched records as the columns' rows and validity. A loop of its own, not
 * inline in resultTables: a hot loop makes V8 compile its whole function optimized, and
 * resultTables, with Arrow's constructors inlined, took 107 ms of a compiler thread (--trace-opt).
 */
function missColumns(u: UnmatchedSet, conjunctBase: number[]) {
  const n = u.rows.length
  const candidateRows = largeArray(Int32Array, n)
  const hasCandidate = largeArray(Uint8Array, n)
  const passIndex = largeArray(Int32Array, n)
  const conjunctIndex = largeArray(Int32Array, n)
  const hasConjunct = largeArray(Uint8Array, n)
  // most unmatched records tied with nothing (-1): NULL there
  const tied = largeArray(Uint8Array, n)
  const tiedRows = largeArray(Int32Array, n)
  for (let k = 0; k < n; k++) {
    const found = u.candidate[k] >= 0 && u.pass[k] >= 0
    hasCandidate[k] = found ? 1 : 0
    candidateRows[k] = found ? u.candidate[k] : 0
    passIndex[k] = found ? u.pass[k] : 0
    hasConjunct[k] = found && u.conjunct[k] >= 0 ? 1 : 0
    conjunctIndex[k] = hasConjunct[k] ? conjunctBase[u.pass[k]] + u.conjunct[k] : 0
    tied[k] = u.tiedWith[k] >= 0 ? 1 : 0
    tiedRows[k] = Math.max(0, u.tiedWith[k])
  }
  return { candidateRows, hasCandidate, passIndex, conjunctIndex, hasConjunct, tied, tiedRows }
}

/**
 * The result sets of a completed run as Arrow tables in memory (all four unless `sets` names some):
 * what writeArrowSet stores, and what `concord reconcile --out` encodes as CSV without storing it
 * first. With `views`, string columns are Dictionary views over the loaded columns instead of
 * copies: for encoding at once, not for storing (an Arrow file would carry every loaded value).
 */
export function resultTables(
  { result, leftKey, rightKey, records }: ResultsInput,
  sets: readonly ResultSet[] = RESULT_SETS,
  {
    views = false,
    firstMatch = 1,
  }: {
    views?: boolean
    /** The run's number of the result's first match: a slice's (resultSlice). */
    firstMatch?: number
  } = {},
): Partial<Record<ResultSet, ArrowTable>> {
  const { left, right, matches: m, passes } = result
  const leftKeys = keyColumn(left, leftKey)
  const rightKeys = keyColumn(right, rightKey)
  const strings = stringRows(views)
  const keys: KeyRows = {
    left: (rows, valid) => strings(leftKeys, rows, valid),
    right: (rows, valid) => strings(rightKeys, rows, valid),
  }
  const out: Partial<Record<ResultSet, ArrowTable>> = {}

  for (const [set, flag] of [
    ['matches', 0],
    ['ambiguous', 1],
  ] as const) {
    if (!sets.includes(set)) continue
    const table = matchesTable(matchesFlagged(m, flag, firstMatch), passes, keys, views)
    // pages read the passes (probabilistic ones: the waterfalls' comparisons) from the file
    table.schema.metadata.set('concord.passes', JSON.stringify(passes))
    out[set] = table
  }

  // unmatched records: the nearest miss as structure (keys, pass, conjunct); the sentence that
  // explains it is made when read (pages.ts), not written a million times
  const conjuncts = passes.flatMap((p) => p.conjuncts)
  const conjunctBase = passes.map((_, n) => passes.slice(0, n).reduce((a, p) => a + p.conjuncts.length, 0))
  for (const side of ['left', 'right'] as const) {
    if (!sets.includes(`unmatched-${side}`)) continue
    const u = side === 'left' ? result.unmatchedLeft : result.unmatchedRight
    const own = side === 'left' ? left : right
    const [ownKeys, otherKeys] = side === 'left' ? [keys.left, keys.right] : [keys.right, keys.left]
    const { candidateRows, hasCandidate, passIndex, conjunctIndex, hasConjunct, tied, tiedRows } = missColumns(
      u,
      conjunctBase,
    )
    const unmatched = new ArrowTable({
      record_key: makeVector(ownKeys(u.rows)),
      closest_candidate: makeVector(otherKeys(candidateRows, hasCandidate)),
      failed_pass: dictionaryVector(
        passes.map((p) => p.name),
        passIndex,
        hasCandidate,
      ),
      failed_conjunct: dictionaryVector(conjuncts, conjunctIndex, hasConjunct),
      candidate_taken: boolVector(Uint8Array.from(u.candidateTaken)),
      tied_with: makeVector(ownKeys(tiedRows, tied)),
      ...(records
        ? arrowColumns(records[side], side === 'left' ? 'l.' : 'r.')
        : recordColumns(own, u.rows, side === 'left' ? 'l.' : 'r.', strings)),
    })
    unmatched.schema.metadata.set('concord.passes', JSON.stringify(passes))
    out[`unmatched-${side}`] = unmatched
  }
  return out
}

/** The records a set is made from: the run's matches (both match files number them), or a side's unmatched records. */
export function sourceRows(result: RunResult, set: ResultSet): number {
  if (set === 'unmatched-left') return result.unmatchedLeft.rows.length
  if (set === 'unmatched-right') return result.unmatchedRight.rows.length
  return result.matches.count
}

/**
 * The input with the source of `set` (sourceRows) cut to [from, to): views of its arrays, no copy.
 * Its tables (resultTables, with `firstMatch: from + 1`) are the rows of `set` from that slice, so
 * a large set is encoded a slice at a time and its gathered columns never exist whole. With large
 * arrays sized to whole huge pages (data/alloc.ts), a 1M × 1M `concord reconcile --out` peaked at
 * 464 MiB writing whole sets, 449 in slices (medians of six alternated runs each).
 * Unmatched records read from `records` (the PostgreSQL engine) are not sliced: null.
 */
export function resultSlice(input: ResultsInput, set: ResultSet, from: number, to: number): ResultsInput | null {
  const { result } = input
  if (set === 'matches' || set === 'ambiguous') {
    const m = result.matches
    const matches: MatchSet = {
      count: to - from,
      pass: m.pass.subarray(from, to),
      score: m.score.subarray(from, to),
      ambiguous: m.ambiguous.subarray(from, to),
      amountDelta: m.amountDelta.subarray(from, to),
      daysDelta: m.daysDelta.subarray(from, to),
      // list offsets stay offsets into the whole row lists
      leftStart: m.leftStart.subarray(from, to + 1),
      leftRows: m.leftRows,
      rightStart: m.rightStart.subarray(from, to + 1),
      rightRows: m.rightRows,
      ...(m.waterfall ? { waterfall: { ...m.waterfall, entry: m.waterfall.entry.subarray(from, to) } } : {}),
    }
    return { ...input, result: { ...result, matches } }
  }
  if (input.records) return null
  const side = set === 'unmatched-left' ? 'unmatchedLeft' : 'unmatchedRight'
  const u = result[side]
  const part: UnmatchedSet = {
    rows: u.rows.subarray(from, to),
    candidate: u.candidate.subarray(from, to),
    pass: u.pass.subarray(from, to),
    conjunct: u.conjunct.subarray(from, to),
    candidateTaken: u.candidateTaken.subarray(from, to),
    tiedWith: u.tiedWith.subarray(from, to),
  }
  return { ...input, result: { ...result, [side]: part } }
}
