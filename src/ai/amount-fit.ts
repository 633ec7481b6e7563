// How one side's amounts become the other's, fitted across confirmed pairs or groups: equal, a
// fixed offset (a payout fee taken once), proportional with or without a fixed part (a 2.9% + 0.30
// card fee), or only close (FX drift, rounding) within a tolerance. Told apart by the deltas across
// every pair, so a fee is stated as an equation rather than swallowed by a tolerance wide enough to
// hide the mismatches an operator must see. Amounts are exact units at AMOUNT_SCALE throughout.

import { AMOUNT_SCALE } from './links.js'
import { abs } from './observations.js'
import { decimalText } from './rules.js'

export type AmountKind = 'equal' | 'offset' | 'proportional' | 'close'

/** y ≈ factor × x + offset, every point within `tolerance`. */
export interface AmountFit {
  kind: AmountKind
  /** The factor as decimal text ("0.971"); "1" unless proportional. */
  factor: string
  /** Units at AMOUNT_SCALE. */
  offset: bigint
  /** The largest residual, units at AMOUNT_SCALE. */
  tolerance: bigint
}

/** A point: x the amount (or a group's sum) on one side, y the amount it should explain. */
export interface AmountPoint {
  x: bigint
  y: bigint
}

const RANK: Record<AmountKind, number> = { equal: 0, offset: 1, proportional: 2, close: 3 }

/** The decimals an amount of `scale` is written with, and one unit of it at AMOUNT_SCALE. */
export const digitsAt = (scale: number) => Math.min(Math.max(scale, 0), AMOUNT_SCALE)
export const unitAt = (scale: number) => 10n ** BigInt(AMOUNT_SCALE - digitsAt(scale))

/** x rounded half away from zero to a multiple of `unit`. */
function roundTo(x: bigint, unit: bigint): bigint {
  const q = (abs(x) + unit / 2n) / unit
  return (x < 0n ? -q : q) * unit
}

const median = (xs: bigint[]) => [...xs].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))[Math.floor(xs.length / 2)]

/**
 * The simplest model that explains every point to the amounts' last digit: equal; one offset
 * (with two points or more, or one point whose delta is all there is to go on); a factor with an
 * offset, from three points or more (two points always fit a line), the factor with as few
 * decimals as will do; else "close", the largest difference its tolerance.
 */
export function fitAmounts(points: AmountPoint[], scale: number): AmountFit {
  const unit = unitAt(scale)
  const deltas = points.map((p) => p.y - p.x)
  if (deltas.every((d) => d === 0n)) return { kind: 'equal', factor: '1', offset: 0n, tolerance: 0n }
  const mid = median(deltas)
  const spread = deltas.reduce((m, d) => (abs(d - mid) > m ? abs(d - mid) : m), 0n)
  if (spread < unit) return { kind: 'offset', factor: '1', offset: mid, tolerance: spread }
  const proportional = points.length >= 3 ? fitLine(points, unit) : undefined
  if (proportional) return proportional
  const worst = deltas.reduce((m, d) => (abs(d) > m ? abs(d) : m), 0n)
  return { kind: 'close', factor: '1', offset: 0n, tolerance: worst }
}

/** y = k·x + c with k of at most 6 decimals and c at the amounts' scale, every residual under a unit. */
function fitLine(points: AmountPoint[], unit: bigint): AmountFit | undefined {
  const sorted = [...points].sort((a, b) => (a.x < b.x ? -1 : a.x > b.x ? 1 : 0))
  const lo = sorted[0]
  const hi = sorted[sorted.length - 1]
  if (hi.x === lo.x) return undefined
  const slope = Number(hi.y - lo.y) / Number(hi.x - lo.x)
  if (!(slope > 0)) return undefined
  for (let digits = 2; digits <= 6; digits++) {
    const k = BigInt(Math.round(slope * 10 ** digits))
    const kScale = 10n ** BigInt(digits)
    // c = y − k·x per point, its median rounded to the amounts' scale
    const cs = points.map((p) => p.y - (k * p.x) / kScale)
    const c = roundTo(median(cs), unit)
    const residual = points.reduce((m, p) => {
      const r = abs((k * p.x) / kScale + c - p.y)
      return r > m ? r : m
    }, 0n)
    if (residual < unit && k !== kScale)
      return { kind: 'proportional', factor: decimalText(k, digits).replace(/0+$/, ''), offset: c, tolerance: residual }
  }
  return undefined
}

/** The better of two fits: the simpler kind, then the smaller tolerance, then the smaller offset. */
export function betterFit(x: AmountFit, y: AmountFit): boolean {
  if (RANK[x.kind] !== RANK[y.kind]) return RANK[x.kind] < RANK[y.kind]
  if (x.tolerance !== y.tolerance) return x.tolerance < y.tolerance
  return abs(x.offset) < abs(y.offset)
}

/** The offset's size rounded to the amounts' scale, as decimal text ("0.49"). */
function offsetText(fit: AmountFit, scale: number): string {
  const unit = unitAt(scale)
  return decimalText(abs(roundTo(fit.offset, unit)) / unit, digitsAt(scale))
}

/** `SUM(l.x) * 0.971 - 0.30`: a fit written around an expression, the offset at the amounts' scale. */
export function fittedSql(expr: string, fit: AmountFit, scale: number): string {
  const times = fit.kind === 'proportional' ? `${expr} * ${fit.factor}` : expr
  if (fit.offset === 0n) return times
  return `${times} ${fit.offset < 0n ? '-' : '+'} ${offsetText(fit, scale)}`
}

/** "less a fixed 0.49", "× 0.971 less 0.30", "equal", "within 0.04". */
export function fitWords(fit: AmountFit, scale: number, tolerance: string): string {
  const off = offsetText(fit, scale)
  const sign = fit.offset < 0n ? 'less' : 'plus'
  switch (fit.kind) {
    case 'equal':
      return 'equal'
    case 'offset':
      return `${sign} a fixed ${off}`
    case 'proportional':
      return fit.offset === 0n ? `× ${fit.factor}` : `× ${fit.factor} ${sign} ${off}`
    case 'close':
      return `within ${tolerance}`
  }
}
