// Exact sums of an amount column over a set of rows, for run summaries and per-pass reports.

import type { Table } from './table.js'
import { formatDecimal } from './values.js'

/**
 * A summer over `column` of `table` (decimal or integer), or one that returns null when there is
 * no such column. Units are integers; partial sums move into a BigInt before they could pass
 * 2^53, so the total is exact for any number of rows.
 */
export function sumUnits(table: Table, column: string | undefined): (rows: ArrayLike<number>) => string | null {
  const n = column === undefined ? -1 : table.columns.findIndex((c) => c.name === column)
  const col = n < 0 ? undefined : table.data[n]
  if (!col || (col.type !== 'decimal' && col.type !== 'integer')) return () => null
  const { values, valid } = col
  return (rows) => {
    let big = 0n
    let small = 0
    for (let k = 0; k < rows.length; k++) {
      const row = rows[k]
      if (valid !== null && valid[row] === 0) continue
      small += values[row]
      if (small > 2 ** 52 || small < -(2 ** 52)) {
        big += BigInt(small)
        small = 0
      }
    }
    const total = big + BigInt(small)
    return col.type === 'decimal' ? formatBig(total, col.scale) : total.toString()
  }
}

function formatBig(units: bigint, scale: number): string {
  if (units <= BigInt(Number.MAX_SAFE_INTEGER) && units >= -BigInt(Number.MAX_SAFE_INTEGER))
    return formatDecimal(Number(units), scale)
  const neg = units < 0n
  const digits = (neg ? -units : units).toString().padStart(scale + 1, '0')
  const text = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`
  return neg ? `-${text}` : text
}
