// An aggregate pass's equation: `sum` is SUM(<a per-record expression of the summed side>)
// combined with number constants by + - * (a payout fee taken once per group, a rate), and
// `equals` a per-record expression of the other side; the group matches when the sum's value is
// within the tolerance of `equals`. A bare column in `sum` means SUM of it (recipes written before
// expressions). This module reads the texts; aggregate-check.ts checks them against the pattern
// and the schemas. Constants stay exact decimals, so `SUM(l.net) - 0.49` is an integer equation
// at run time (engine/match/equation.ts), never a float comparison.

import {
  addDecimal,
  decimalText,
  type ExactDecimal,
  exactDecimal,
  isOne,
  MINUS_ONE,
  ONE,
  timesDecimal,
  trimmed,
  ZERO,
} from './decimal.js'
import { type Expr, type Position, PredicateError, parsePredicate, type Side } from './predicate.js'
import { printExpr } from './print.js'

/** `sum` as factor × SUM(each) + offset: with one SUM and only + - * around it, it is always this shape. */
export interface GroupSum {
  each: Expr
  side: Side
  factor: ExactDecimal
  offset: ExactDecimal
}

export interface GroupTolerance {
  /** How far the sum's value may fall below `equals`. */
  below: ExactDecimal
  /** How far it may rise above. */
  above: ExactDecimal
}

export interface ParsedAggregate {
  sum: GroupSum
  equals: Expr
  equalsSide: Side
  tolerance: GroupTolerance
}

export type AggregateField = 'aggregate.sum' | 'aggregate.equals' | 'aggregate.tolerance'

/** A problem with an aggregate; positions are offsets into the field's text. */
export class AggregateError extends PredicateError {
  constructor(
    readonly field: AggregateField,
    code: string,
    message: string,
    pos?: Position,
    suggestion?: string,
  ) {
    super(code, message, pos, suggestion)
  }
}

export interface AggregateText {
  sum: string
  equals: string
  tolerance?: number | string | { below?: number | string; above?: number | string }
}

const SUM_FUNCTION: Record<string, [number, number]> = { sum: [1, 1] }
export const SUM_EXAMPLE = 'SUM(l.net_amount) - 0.49'

/** The per-record expressions an aggregate reads (SUM's argument, `equals`): the columns a pass must load. */
export function aggregateExprs(agg: AggregateText): Expr[] {
  const out: Expr[] = []
  try {
    out.push(groupSum(agg.sum).each)
  } catch {
    // a broken sum reads nothing; validation reports it
  }
  try {
    out.push(equalsExpr(agg.equals))
  } catch {
    // as above
  }
  return out
}

/** The sum as SQL-like text, SUM written out: `r.amount` reads `SUM(r.amount)`. */
export function printGroupSum(s: Omit<GroupSum, 'side'>): string {
  const sum = `SUM(${printExpr(s.each)})`
  const factor = isOne(s.factor) ? sum : `${sum} * ${decimalText(s.factor)}`
  if (s.offset.units === 0n) return factor
  const sign = s.offset.units < 0n ? '-' : '+'
  return `${factor} ${sign} ${decimalText({ units: s.offset.units < 0n ? -s.offset.units : s.offset.units, scale: s.offset.scale })}`
}

/** `sum` as factor × SUM(each) + offset; its side is settled by sideOfSum. */
export function groupSum(text: string): Omit<GroupSum, 'side'> {
  const expr = parse('aggregate.sum', text)
  if (expr.kind === 'column') return { each: expr, factor: ONE, offset: ZERO }
  const calls = sumCalls(expr)
  if (calls.length === 0)
    throw new AggregateError(
      'aggregate.sum',
      'aggregate_sum_missing',
      'aggregate.sum has no SUM(...): say what is summed over the group and what is applied once',
      expr.pos,
      `write SUM(${printExpr(expr)}) to sum it per record, or SUM(<column>) - 0.49 for a fee taken once per group`,
    )
  if (calls.length > 1)
    throw new AggregateError(
      'aggregate.sum',
      'aggregate_sum_twice',
      `aggregate.sum has ${calls.length} SUM(...) calls; a group is summed once`,
      calls[1].pos,
      'add the columns inside one SUM: SUM(l.gross_amount - l.fee_amount)',
    )
  const each = calls[0].args[0]
  const affine = fold(expr)
  if (affine.factor.units === 0n)
    throw new AggregateError(
      'aggregate.sum',
      'invalid_aggregate',
      'aggregate.sum multiplies SUM(...) by 0, so no group could be told from another',
      expr.pos,
    )
  // 0.490 is 0.49: a written trailing zero should not widen the scale of every delta
  return { each, factor: trimmed(affine.factor), offset: trimmed(affine.offset) }
}

/** `equals`: one record's value, no SUM. */
export function equalsExpr(text: string): Expr {
  const expr = parse('aggregate.equals', text)
  const calls = sumCalls(expr)
  if (calls.length)
    throw new AggregateError(
      'aggregate.equals',
      'invalid_aggregate',
      "aggregate.equals is one record's value; SUM(...) belongs in aggregate.sum",
      calls[0].pos,
      'write equals: "r.amount" and sum: "SUM(l.net_amount) - 0.49"',
    )
  return expr
}

function parse(field: AggregateField, text: string): Expr {
  try {
    return parsePredicate(text, SUM_FUNCTION)
  } catch (err) {
    if (!(err instanceof PredicateError)) throw err
    const message = err.message.replace('the predicate', field)
    const suggestion =
      err.code === 'syntax_error' || err.code === 'empty_predicate'
        ? field === 'aggregate.sum'
          ? `write an amount such as ${SUM_EXAMPLE}`
          : 'write an amount such as r.amount or r.gross_amount * 0.971 - 0.30'
        : err.suggestion
    throw new AggregateError(field, err.code, message, err.pos, suggestion)
  }
}

export function sumCalls(e: Expr): Extract<Expr, { kind: 'call' }>[] {
  const out: Extract<Expr, { kind: 'call' }>[] = []
  const walk = (x: Expr) => {
    if (x.kind === 'call' && x.name === 'sum') out.push(x)
    for (const v of Object.values(x)) {
      if (Array.isArray(v)) v.forEach((y) => walk(y as Expr))
      else if (v && typeof v === 'object' && 'kind' in v) walk(v as Expr)
    }
  }
  walk(e)
  return out
}

/** factor × SUM + offset of an expression made of one SUM, number constants and + - *. */
function fold(e: Expr): { factor: ExactDecimal; offset: ExactDecimal } {
  const refuse = (x: Expr, message: string, suggestion?: string): never => {
    throw new AggregateError('aggregate.sum', 'invalid_aggregate', message, x.pos, suggestion)
  }
  switch (e.kind) {
    case 'call':
      if (e.name === 'sum') return { factor: ONE, offset: ZERO }
      return refuse(
        e,
        `${e.name.toUpperCase()}() around SUM(...) is not supported: only + - * with numbers may surround the sum`,
        'apply functions per record, inside SUM(...)',
      )
    case 'number': {
      const d = exactDecimal(e.text)
      if (!d) return refuse(e, `${e.text} is not a plain decimal`, 'write 0.00049, not 4.9e-4')
      return { factor: ZERO, offset: d }
    }
    case 'neg': {
      const a = fold(e.arg)
      return { factor: timesDecimal(a.factor, MINUS_ONE), offset: timesDecimal(a.offset, MINUS_ONE) }
    }
    case 'arith': {
      const a = fold(e.left)
      const b = fold(e.right)
      if (e.op === '+' || e.op === '-') {
        const sign = e.op === '+' ? 1n : -1n
        return { factor: addDecimal(a.factor, b.factor, sign), offset: addDecimal(a.offset, b.offset, sign) }
      }
      if (e.op === '*') {
        // one operand is a constant: with one SUM, at most one operand holds it
        const [k, x] = a.factor.units === 0n ? [a.offset, b] : [b.offset, a]
        return { factor: timesDecimal(x.factor, k), offset: timesDecimal(x.offset, k) }
      }
      return refuse(
        e,
        `${e.op} is not exact on amounts: only + - * may combine SUM(...) with numbers`,
        e.op === '/' ? 'multiply instead: SUM(r.amount) * 0.98' : undefined,
      )
    }
    case 'column':
      return refuse(
        e,
        `${printExpr(e)} is outside SUM(...): a column is read per record, so it goes inside SUM or in aggregate.equals`,
        `SUM(${printExpr(e)} ...) or equals: "${printExpr(e)} ..."`,
      )
    default:
      return refuse(e, `${printExpr(e)} cannot be part of a group sum: only + - * with numbers may surround SUM(...)`)
  }
}

/** The tolerance as its two sides: a number (or decimal text) is symmetric. */
export function groupTolerance(t: AggregateText['tolerance']): GroupTolerance {
  if (t === undefined) return { below: ZERO, above: ZERO }
  if (typeof t === 'object')
    return { below: toleranceValue(t.below ?? 0, 'below'), above: toleranceValue(t.above ?? 0, 'above') }
  const v = toleranceValue(t)
  return { below: v, above: v }
}

function toleranceValue(t: number | string, part?: 'below' | 'above'): ExactDecimal {
  const text = typeof t === 'number' ? String(t) : t.trim()
  const d = exactDecimal(text)
  if (!d || d.units < 0n)
    throw new AggregateError(
      'aggregate.tolerance',
      'invalid_aggregate',
      `aggregate.tolerance${part ? `.${part}` : ''} must be a decimal of 0 or more, not ${text}`,
      undefined,
      'write 0.01, or { "below": 0, "above": 0.50 } for a one-sided tolerance',
    )
  return d
}
