// Counts and exact amount sums for a run's summary: per side, per pass, matched and unmatched.

import type { MatchSet } from './evidence.js'
import type { Table } from './table.js'
import { formatDecimal } from './values.js'

const LIMIT = 2 ** 52

/**
 * An exact sum of integer units: partial sums move into a BigInt before they could pass 2^52,
 * so the total is exact for any number of rows.
 */
export class UnitsSum {
  private big = 0n
  private small = 0

  add(units: number): void {
    this.small += units
    if (this.small > LIMIT || this.small < -LIMIT) {
      this.big += BigInt(this.small)
      this.small = 0
    }
  }

  total(): bigint {
    return this.big + BigInt(this.small)
  }
}

/** An amount column (decimal or integer) of a table, or undefined when there is none by that name. */
export interface AmountColumn {
  values: Float64Array
  valid: Uint8Array | null
  scale: number
}

export function amountColumn(table: Table, name: string | undefined): AmountColumn | undefined {
  const n = name === undefined ? -1 : table.columns.findIndex((c) => c.name === name)
  const col = n < 0 ? undefined : table.data[n]
  if (!col || (col.type !== 'decimal' && col.type !== 'integer')) return undefined
  return { values: col.values, valid: col.valid, scale: col.type === 'decimal' ? col.scale : 0 }
}

export function formatUnits(units: bigint, scale: number): string {
  if (units <= BigInt(Number.MAX_SAFE_INTEGER) && units >= -BigInt(Number.MAX_SAFE_INTEGER))
    return formatDecimal(Number(units), scale)
  const neg = units < 0n
  const digits = (neg ? -units : units).toString().padStart(scale + 1, '0')
  const text = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`
  return neg ? `-${text}` : text
}

export interface SideTotals {
  rows: number
  matched: number
  /** null without an amount column. */
  amount: string | null
  matchedAmount: string | null
  unmatchedAmount: string | null
  /** Per pass: records matched and their amount. */
  byPass: { records: number; amount: string | null }[]
}

/** Totals of one side, from the match columns in one sweep (no per-row lists). */
export function sideTotals(
  table: Table,
  amount: AmountColumn | undefined,
  matches: MatchSet,
  side: 'left' | 'right',
  passes: number,
): SideTotals {
  const start = side === 'left' ? matches.leftStart : matches.rightStart
  const rows = side === 'left' ? matches.leftRows : matches.rightRows
  const records = new Array<number>(passes).fill(0)
  const sums = Array.from({ length: passes }, () => new UnitsSum())
  const values = amount?.values
  const valid = amount?.valid ?? null
  for (let k = 0; k < matches.count; k++) {
    const p = matches.pass[k]
    records[p] += start[k + 1] - start[k]
    if (!values) continue
    const sum = sums[p]
    for (let n = start[k]; n < start[k + 1]; n++) {
      const row = rows[n]
      if (valid === null || valid[row] === 1) sum.add(values[row])
    }
  }
  const matched = records.reduce((a, b) => a + b, 0)
  if (!amount || !values) {
    return {
      rows: table.length,
      matched,
      amount: null,
      matchedAmount: null,
      unmatchedAmount: null,
      byPass: records.map((r) => ({ records: r, amount: null })),
    }
  }
  const all = new UnitsSum()
  for (let row = 0; row < table.length; row++) if (valid === null || valid[row] === 1) all.add(values[row])
  const total = all.total()
  const matchedTotal = sums.reduce((acc, s) => acc + s.total(), 0n)
  return {
    rows: table.length,
    matched,
    amount: formatUnits(total, amount.scale),
    matchedAmount: formatUnits(matchedTotal, amount.scale),
    unmatchedAmount: formatUnits(total - matchedTotal, amount.scale),
    byPass: records.map((r, p) => ({ records: r, amount: formatUnits(sums[p].total(), amount.scale) })),
  }
}
