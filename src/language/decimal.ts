// Exact decimal constants of the recipe language (a fee of 0.49, a rate of 0.971): BigInt units
// at a scale, so folding `(SUM(x) - 0.49) * 0.98` into one factor and offset loses nothing.

/** A decimal constant, exactly: units at a scale (0.49 is 49n at scale 2). */
export interface ExactDecimal {
  units: bigint
  scale: number
}

export const ONE: ExactDecimal = { units: 1n, scale: 0 }
export const ZERO: ExactDecimal = { units: 0n, scale: 0 }
export const MINUS_ONE: ExactDecimal = { units: -1n, scale: 0 }

/** Plain decimal text ("-0.49", "2") exactly; null for anything else (exponents included). */
export function exactDecimal(text: string): ExactDecimal | null {
  const m = /^([+-]?)(\d+)(?:\.(\d+))?$/.exec(text)
  if (!m) return null
  const frac = m[3] ?? ''
  const units = BigInt(m[2] + frac)
  return { units: m[1] === '-' ? -units : units, scale: frac.length }
}

export function rescale(d: ExactDecimal, scale: number): bigint {
  return d.units * 10n ** BigInt(scale - d.scale)
}

export const addDecimal = (a: ExactDecimal, b: ExactDecimal, sign: 1n | -1n): ExactDecimal => {
  const scale = Math.max(a.scale, b.scale)
  return { units: rescale(a, scale) + sign * rescale(b, scale), scale }
}
export const timesDecimal = (a: ExactDecimal, b: ExactDecimal): ExactDecimal => ({
  units: a.units * b.units,
  scale: a.scale + b.scale,
})
export const isOne = (d: ExactDecimal) => d.units === 10n ** BigInt(d.scale)

export function decimalText(d: ExactDecimal): string {
  const neg = d.units < 0n
  const digits = (neg ? -d.units : d.units).toString().padStart(d.scale + 1, '0')
  const text = d.scale ? `${digits.slice(0, -d.scale)}.${digits.slice(-d.scale)}` : digits
  return neg ? `-${text}` : text
}

/** 0.490 as 0.49. */
export function trimmed(d: ExactDecimal): ExactDecimal {
  let { units, scale } = d
  while (scale > 0 && units % 10n === 0n) {
    units /= 10n
    scale--
  }
  return { units, scale }
}
