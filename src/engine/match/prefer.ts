// `prefer` on a 1:1 pass: how a tie is resolved instead of being held as ambiguous. It orders
// the candidate pairs; assignment (ties.ts) then takes, of the optimal assignments, the one whose
// pairs come first in that order, and the records left over are noted as passed over for the
// record preferred. Each order ends with the record keys, so it is total and a resolution never
// depends on the order records were read in.
//
//   earliest        the left record's date first, then the right record's (a NULL date last)
//   first_key       the left record's key first, then the right record's
//   closest_amount  the smallest |left amount - right amount| (exact units; a NULL amount last)
//
// The dates and amounts are those the pass scores by: its own compared pair, else the recipe's
// (scoredPairs in pass.ts). Keys compare by value: numbers as numbers, text byte by byte (as
// PostgreSQL's COLLATE "C"), NULL last.

import type { Expr } from '../../language/predicate.js'
import type { Preference } from '../../recipes/schema.js'
import type { ExprCompiler } from '../plan/compile.js'
import type { Column } from '../data/column.js'
import type { Table } from '../data/table.js'
import type { PairScorer, ScoredPairs } from './score.js'

/** Negative when the pair (i1, j1) is preferred over (i2, j2); positions of the pass's space. */
export type PairOrder = (i1: number, j1: number, i2: number, j2: number) => number

/** Why a preference cannot apply to a pass, or null. */
export function preferenceProblem(prefer: Preference, scored: ScoredPairs): string | null {
  if (prefer === 'earliest' && !scored.date)
    return 'prefer "earliest" reads the dates the pass compares, and neither the pass nor the recipe compares a date pair'
  if (prefer === 'closest_amount' && !scored.amount)
    return 'prefer "closest_amount" reads the amounts the pass compares, and neither the pass nor the recipe compares an amount pair'
  return null
}

type Reader = (row: number) => number | null
const col = (side: 'l' | 'r', name: string): Expr => ({ kind: 'column', side, name, pos: { start: 0, end: 0 } })

export function pairOrder(
  prefer: Preference,
  pass: {
    scored: ScoredPairs
    compiler: ExprCompiler
    scorer: PairScorer
    /** Position → input row (null: positions are rows) and the input tables with their key columns. */
    leftRows: Int32Array | null
    rightRows: Int32Array | null
    tables: { l: Table; r: Table }
    keys: { l: string[]; r: string[] }
  },
): PairOrder {
  const problem = preferenceProblem(prefer, pass.scored)
  if (problem) throw new Error(problem)
  const leftKey = keyOrder(pass.tables.l, pass.keys.l)
  const rightKey = keyOrder(pass.tables.r, pass.keys.r)
  const leftRow = (k: number) => (pass.leftRows === null ? k : pass.leftRows[k])
  const rightRow = (k: number) => (pass.rightRows === null ? k : pass.rightRows[k])
  const byKeys: PairOrder = (i1, j1, i2, j2) =>
    leftKey(leftRow(i1), leftRow(i2)) || rightKey(rightRow(j1), rightRow(j2))
  if (prefer === 'first_key') return byKeys
  if (prefer === 'closest_amount') {
    const distance = (i: number, j: number) => Math.abs(pass.scorer.pairAmountDelta(i, j))
    return (i1, j1, i2, j2) => nullsLast(distance(i1, j1), distance(i2, j2)) || byKeys(i1, j1, i2, j2)
  }
  const date = pass.scored.date!
  const leftDate = pass.compiler.build<Reader>('i', pass.compiler.compile(col('l', date.l)).code)
  const rightDate = pass.compiler.build<Reader>('j', pass.compiler.compile(col('r', date.r)).code)
  return (i1, j1, i2, j2) =>
    nullsLast(leftDate(i1), leftDate(i2)) || nullsLast(rightDate(j1), rightDate(j2)) || byKeys(i1, j1, i2, j2)
}

/** Ascending, with NULL (and NaN) after every value. */
function nullsLast(a: number | null, b: number | null): number {
  const aMissing = a === null || Number.isNaN(a)
  const bMissing = b === null || Number.isNaN(b)
  if (aMissing || bMissing) return aMissing === bMissing ? 0 : aMissing ? 1 : -1
  return a < b ? -1 : a > b ? 1 : 0
}

/** Compares two rows of a table by its key columns' values. */
export function keyOrder(table: Table, key: string[]): (a: number, b: number) => number {
  const columns = key.map((name) => {
    const n = table.columns.findIndex((c) => c.name === name)
    if (n < 0) throw new Error(`key column "${name}" is not in the source`)
    return table.data[n]
  })
  return (a, b) => {
    for (const c of columns) {
      const d = compareValues(c, a, b)
      if (d !== 0) return d
    }
    return 0
  }
}

function compareValues(c: Column, a: number, b: number): number {
  const aNull = c.valid !== null && c.valid[a] === 0
  const bNull = c.valid !== null && c.valid[b] === 0
  if (aNull || bNull) return aNull === bNull ? 0 : aNull ? 1 : -1
  if (c.type !== 'string') return c.values[a] < c.values[b] ? -1 : c.values[a] > c.values[b] ? 1 : 0
  const { offsets, data } = c
  const aEnd = offsets[a + 1]
  const bEnd = offsets[b + 1]
  for (let x = offsets[a], y = offsets[b]; x < aEnd && y < bEnd; x++, y++)
    if (data[x] !== data[y]) return data[x] - data[y]
  return aEnd - offsets[a] - (bEnd - offsets[b])
}
