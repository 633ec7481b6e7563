// An aggregate pass's equation in integer units: the group's value is factor × S + offset, where S
// is the sum of the summed side's per-record amounts (units at their scale), and it must lie within
// [equals - below, equals + above]. The group search works on S alone, so for each record the
// equation is solved once, exactly (BigInt), into the range of sums that fit and the sum that fits
// exactly: the search then adds plain safe integers, and no float rounding can let a group in or
// keep one out.

import type { GroupSum, GroupTolerance } from '../../language/aggregate.js'
import { type ExactDecimal, rescale } from '../../language/decimal.js'

/** The sums S that fit one record's `equals`, in units of the summed amounts. */
export interface SumWindow {
  lo: number
  hi: number
  /** The sum whose value equals `equals` exactly, if one exists (a factor such as 0.98 may allow none). */
  exact: number | null
  /** The ideal sum as base + frac (0 ≤ frac < 1): |S - ideal| is computed as (S - base) - frac, small numbers only. */
  base: number
  frac: number
}

export class GroupEquation {
  /** Scale of the value, of `equals` and of the deltas reported. */
  readonly scale: number
  /** The larger side of the tolerance in units at `scale` (how far a group's closeness decays). */
  readonly toleranceUnits: number
  private readonly factor: bigint
  private readonly offset: bigint
  private readonly below: bigint
  private readonly above: bigint
  private readonly equalsShift: bigint
  /**
   * A factor of 1 with every constant a safe integer (`SUM(x)`, `SUM(x) - 0.49`): the window is
   * plain subtraction, done in Number while the values stay below 2^53 (most recipes, every row).
   */
  private readonly plain: { shift: number; offset: number; below: number; above: number } | null

  constructor(
    sum: Pick<GroupSum, 'factor' | 'offset'>,
    /** Scale of the summed per-record amounts (0 for integers). */
    eachScale: number,
    /** Scale of `equals`. */
    equalsScale: number,
    tolerance: GroupTolerance,
  ) {
    const { factor, offset } = sum
    const scale = Math.max(factor.scale + eachScale, offset.scale, equalsScale)
    this.scale = scale
    this.factor = factor.units * 10n ** BigInt(scale - factor.scale - eachScale)
    this.offset = rescale(offset, scale)
    this.equalsShift = 10n ** BigInt(scale - equalsScale)
    // values are whole units at `scale`, so a tolerance finer than the scale allows nothing more
    this.below = floorAt(tolerance.below, scale)
    this.above = floorAt(tolerance.above, scale)
    this.toleranceUnits = Number(this.below > this.above ? this.below : this.above)
    const safe = (x: bigint) => x <= BigInt(Number.MAX_SAFE_INTEGER) && x >= -BigInt(Number.MAX_SAFE_INTEGER)
    this.plain =
      this.factor === 1n && [this.equalsShift, this.offset, this.below, this.above].every(safe)
        ? {
            shift: Number(this.equalsShift),
            offset: Number(this.offset),
            below: Number(this.below),
            above: Number(this.above),
          }
        : null
  }

  /** The sums that fit `equals` (units at its scale): factor × S + offset within the tolerance. */
  window(equals: number): SumWindow {
    const p = this.plain
    if (p !== null) {
      // each step exact: every operand and result is an integer below 2^53 (checked, else BigInt)
      const target = equals * p.shift - p.offset
      const lo = target - p.below
      const hi = target + p.above
      if (Math.abs(equals * p.shift) <= LIMIT && Math.abs(lo) <= LIMIT && Math.abs(hi) <= LIMIT)
        return { lo, hi, exact: target, base: target, frac: 0 }
    }
    const a = this.factor
    const target = BigInt(equals) * this.equalsShift - this.offset
    // target - below <= a × S <= target + above
    let lo: bigint
    let hi: bigint
    if (a > 0n) {
      lo = ceilDiv(target - this.below, a)
      hi = floorDiv(target + this.above, a)
    } else {
      lo = ceilDiv(target + this.above, a)
      hi = floorDiv(target - this.below, a)
    }
    const base = floorDiv(target, a)
    const rest = target - base * a
    return {
      lo: Number(lo),
      hi: Number(hi),
      exact: rest === 0n ? Number(base) : null,
      base: Number(base),
      frac: Number(rest) / Number(a),
    }
  }

  /** The group's value minus `equals`, in units at `scale`. */
  delta(equals: number, sum: number): number {
    return Number(this.factor * BigInt(sum) + this.offset - BigInt(equals) * this.equalsShift)
  }
}

/** Below this, sums and differences of two such integers are exact in a double. */
const LIMIT = Number.MAX_SAFE_INTEGER / 2

function floorAt(d: ExactDecimal, scale: number): bigint {
  if (d.scale <= scale) return rescale(d, scale)
  return floorDiv(d.units, 10n ** BigInt(d.scale - scale))
}

function floorDiv(n: bigint, d: bigint): bigint {
  const q = n / d
  return n % d !== 0n && n < 0n !== d < 0n ? q - 1n : q
}

function ceilDiv(n: bigint, d: bigint): bigint {
  return -floorDiv(-n, d)
}
