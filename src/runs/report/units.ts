// Exact sums of scaled units for the report, as the run summary keeps them (explain/summary.ts):
// a float partial while it is exact, moved into a BigInt before it could pass 2^52.

import { formatUnits } from '../../engine/explain/summary.js'

const LIMIT = 2 ** 52

export class UnitSum {
  private partial = 0
  private big = 0n

  add(units: number): void {
    const x = this.partial + units
    if (x > LIMIT || x < -LIMIT) {
      this.big += BigInt(this.partial) + BigInt(units)
      this.partial = 0
    } else this.partial = x
  }

  get units(): bigint {
    return this.big + BigInt(this.partial)
  }

  format(scale: number): string {
    return formatUnits(this.units, scale)
  }
}

/** One value's units as the decimal text the summary writes. */
export const formatAmount = (units: number, scale: number): string => formatUnits(BigInt(units), scale)
