// Amount tolerances a pass allows, judged against the amounts of the samples. A tolerance is
// meant to absorb a rounding or a fee; one larger than a typical amount lets almost any two
// amounts agree (an inferred `ABS(l.amount - r.amount) <= 4300` among amounts of about 300), and
// an aggregate tolerance larger than a typical record lets a group gain or lose a whole record
// and still fit. Amounts are exact (units at a scale), read by the engine's compiled expressions.

import { type ExactDecimal, exactDecimal, rescale, timesDecimal, trimmed, decimalText } from '../language/decimal.js'
import type { Expr, Side } from '../language/predicate.js'
import type { ExprCompiler } from '../engine/plan/compile.js'
import { numberText } from '../engine/data/values.js'
import { sidesOf } from '../engine/plan/plan.js'
import type { PassOnSamples, SampleCheck } from './pass-on-samples.js'

/** `|a - b|` bounded by `limit`: a constant, or `factor` × an amount (a relative tolerance). */
export interface AmountTolerance {
  check: SampleCheck
  a: Expr
  b: Expr
  limit: { absolute: ExactDecimal } | { relative: ExactDecimal }
}

type AmountReader = (i: number, j: number) => ExactDecimal | null

/**
 * The tolerance a conjunct states: `ABS(a - b) <= t` (or `<`, or `t >= ABS(a - b)`),
 * `tolerance_match(a, b, t)`, or `x BETWEEN c - t AND c + t`. Other shapes are not tolerances.
 */
export function toleranceOf(e: Expr): { a: Expr; b: Expr; t: Expr } | undefined {
  if (e.kind === 'call' && e.name === 'tolerance_match') return { a: e.args[0], b: e.args[1], t: e.args[2] }
  if (e.kind === 'compare') {
    const [abs, t] =
      e.op === '<=' || e.op === '<' ? [e.left, e.right] : e.op === '>=' || e.op === '>' ? [e.right, e.left] : []
    if (abs?.kind === 'call' && abs.name === 'abs' && abs.args[0].kind === 'arith' && abs.args[0].op === '-')
      return { a: abs.args[0].left, b: abs.args[0].right, t: t! }
  }
  if (e.kind === 'between' && !e.negated && e.lo.kind === 'arith' && e.hi.kind === 'arith') {
    const { lo, hi } = e
    if (lo.op === '-' && hi.op === '+' && same(lo.left, hi.left) && same(lo.right, hi.right))
      return { a: e.value, b: lo.left, t: lo.right }
  }
  return undefined
}

/** The pass's amount tolerances (conjuncts comparing numbers, with a constant or proportional limit). */
export function amountTolerances(p: PassOnSamples): AmountTolerance[] {
  const out: AmountTolerance[] = []
  for (const check of p.conjuncts) {
    const found = toleranceOf(check.expr)
    if (!found || !amountReader(p.compiler, found.a)) continue
    const limit = limitOf(found.t)
    if (limit) out.push({ check, a: found.a, b: found.b, limit })
  }
  return out
}

function limitOf(t: Expr): AmountTolerance['limit'] | undefined {
  if (t.kind === 'number') {
    const d = exactDecimal(t.text)
    return d ? { absolute: d } : undefined
  }
  if (t.kind === 'arith' && t.op === '*') {
    const [k, x] = t.left.kind === 'number' ? [t.left, t.right] : [t.right, t.left]
    const d = k.kind === 'number' ? exactDecimal(k.text) : null
    if (d && sidesOf(x).size === 1) return { relative: d }
  }
  return undefined
}

/** Same tree, positions aside. */
function same(x: Expr, y: Expr): boolean {
  return (
    JSON.stringify(x, (k, v) => (k === 'pos' ? undefined : v)) ===
    JSON.stringify(y, (k, v) => (k === 'pos' ? undefined : v))
  )
}

/** Reads a numeric expression as an exact decimal; undefined when it is not a number. */
export function amountReader(c: ExprCompiler, e: Expr): AmountReader | undefined {
  const compiled = c.compile(e)
  const kind = compiled.type.kind
  if (kind !== 'decimal' && kind !== 'integer' && kind !== 'float') return undefined
  const read = c.build<(i: number, j: number) => number | null>('i, j', compiled.code)
  const scale = kind === 'decimal' ? (compiled.type.scale ?? 0) : 0
  return (i, j) => {
    const v = read(i, j)
    if (v === null || !Number.isFinite(v)) return null
    if (kind !== 'float') return { units: BigInt(v), scale }
    const text = numberText(v)
    return text === null ? null : exactDecimal(text)
  }
}

const absolute = (d: ExactDecimal): ExactDecimal => (d.units < 0n ? { units: -d.units, scale: d.scale } : d)

export function compareDecimal(x: ExactDecimal, y: ExactDecimal): number {
  const scale = Math.max(x.scale, y.scale)
  const a = rescale(x, scale)
  const b = rescale(y, scale)
  return a < b ? -1 : a > b ? 1 : 0
}

/** The median of the values' magnitudes, exactly (the mean of the two middle ones for an even count). */
export function medianMagnitude(values: ExactDecimal[]): ExactDecimal | undefined {
  if (values.length === 0) return undefined
  const sorted = values.map(absolute).sort(compareDecimal)
  const mid = sorted.length >> 1
  if (sorted.length % 2 === 1) return sorted[mid]
  const scale = Math.max(sorted[mid - 1].scale, sorted[mid].scale)
  return trimmed({ units: (rescale(sorted[mid - 1], scale) + rescale(sorted[mid], scale)) * 5n, scale: scale + 1 })
}

/** The values of a one-sided expression over that side's sample rows (NULLs left out). */
function sideValues(p: PassOnSamples, e: Expr, lengths: { l: number; r: number }): ExactDecimal[] {
  const sides = sidesOf(e)
  const reader = amountReader(p.compiler, e)
  if (sides.size !== 1 || !reader) return []
  const side: Side = sides.has('l') ? 'l' : 'r'
  const out: ExactDecimal[] = []
  for (let k = 0; k < lengths[side]; k++) {
    const v = reader(k, k)
    if (v !== null) out.push(v)
  }
  return out
}

/** Fewer sample amounts than this say nothing about what is typical. */
export const MIN_TYPICAL_VALUES = 3

const show = (d: ExactDecimal) => decimalText(trimmed(d))

/** Tolerances of the pass larger than a typical amount, each with the reason in words. */
export function wideTolerances(
  p: PassOnSamples,
  lengths: { l: number; r: number },
  confirmed: { left: number; right: number }[],
): string[] {
  const out: string[] = []
  for (const tol of amountTolerances(p)) {
    if ('relative' in tol.limit) {
      // k × an amount with k ≥ 1 admits any two amounts of the same sign within a factor of two
      if (compareDecimal(tol.limit.relative, { units: 1n, scale: 0 }) >= 0)
        out.push(
          `${tol.check.text} allows a difference of ${show(timesDecimal(tol.limit.relative, { units: 100n, scale: 0 }))}% of an amount: amounts of the same sign nearly always pass`,
        )
      continue
    }
    const values = [...sideValues(p, tol.a, lengths), ...sideValues(p, tol.b, lengths)]
    const typical = medianMagnitude(values)
    if (values.length < MIN_TYPICAL_VALUES || !typical || compareDecimal(tol.limit.absolute, typical) <= 0) continue
    const a = amountReader(p.compiler, tol.a)!
    const b = amountReader(p.compiler, tol.b)!
    let widest: ExactDecimal | undefined
    for (const pair of confirmed) {
      const x = a(pair.left, pair.right)
      const y = b(pair.left, pair.right)
      if (x === null || y === null) continue
      const scale = Math.max(x.scale, y.scale)
      const d = absolute({ units: rescale(x, scale) - rescale(y, scale), scale })
      if (!widest || compareDecimal(d, widest) > 0) widest = d
    }
    out.push(
      `${tol.check.text} lets amounts ${show(tol.limit.absolute)} apart agree, more than a typical amount ` +
        `(the median of the ${values.length} sample amounts it compares is ${show(typical)}): nearly any two amounts pass` +
        (widest ? `; the confirmed pairs differ by at most ${show(widest)}` : ''),
    )
  }
  const agg = p.aggregate
  if (agg) {
    const largest =
      compareDecimal(agg.tolerance.below, agg.tolerance.above) >= 0 ? agg.tolerance.below : agg.tolerance.above
    const values: ExactDecimal[] = []
    for (let k = 0; k < lengths[agg.sumSide]; k++) {
      const v = agg.each(k)
      if (v !== null) values.push(timesDecimal({ units: BigInt(v), scale: agg.eachScale }, agg.factor))
    }
    const typical = medianMagnitude(values)
    if (values.length >= MIN_TYPICAL_VALUES && typical && compareDecimal(largest, typical) > 0)
      out.push(
        `the aggregate's tolerance ${show(largest)} is more than a typical record's amount in the group sum ` +
          `(median ${show(typical)} over ${values.length} sample records): a group with a record more or less would still fit`,
      )
  }
  return out
}
