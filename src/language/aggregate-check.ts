// Checks an aggregate against its pass's pattern and the sources' schemas: which side SUM(...)
// adds (1:N sums r, N:1 sums l), that `equals` reads the other side, that both are exact amounts.
// Validation collects every problem (`aggregateIssues`); the engine stops at the first
// (`parseAggregate`), for a recipe that reaches it has been validated.

import {
  AggregateError,
  type AggregateField,
  type AggregateText,
  equalsExpr,
  groupSum,
  groupTolerance,
  type ParsedAggregate,
  SUM_EXAMPLE,
} from './aggregate.js'
import type { Expr, Side } from './predicate.js'
import { printExpr } from './print.js'
import { type Schemas, TypeChecker } from './types.js'

/** Past this many decimal places the equation's units may leave the exact integer range. */
export const MAX_EQUATION_SCALE = 9

/**
 * Reads an aggregate, stopping at the first problem: the engine's entry (a recipe that runs has
 * been validated, so this only guards). `pattern` says which side is summed (1:N: r, N:1: l).
 */
export function parseAggregate(agg: AggregateText, pattern: string, schemas?: Schemas): ParsedAggregate {
  const out = readAggregate(agg, pattern, schemas, true)
  if (Array.isArray(out)) throw out[0]
  return out
}

/** Every problem of an aggregate, for validation (each with its field, code, position and hint). */
export function aggregateIssues(agg: AggregateText, pattern: string, schemas: Schemas): AggregateError[] {
  const out = readAggregate(agg, pattern, schemas, false)
  return Array.isArray(out) ? out : []
}

function readAggregate(
  agg: AggregateText,
  pattern: string,
  schemas: Schemas | undefined,
  firstOnly: boolean,
): ParsedAggregate | AggregateError[] {
  const issues: AggregateError[] = []
  const fail = (e: AggregateError) => {
    issues.push(e)
    if (firstOnly) throw e
  }
  const attempt = <T>(f: () => T): T | undefined => {
    try {
      return f()
    } catch (err) {
      if (!(err instanceof AggregateError)) throw err
      fail(err)
      return undefined
    }
  }
  const sum = attempt(() => groupSum(agg.sum))
  const equals = attempt(() => equalsExpr(agg.equals))
  const tolerance = attempt(() => groupTolerance(agg.tolerance))
  const sumSide = sum ? sideOfSum(sum, pattern, fail) : undefined
  // with a broken sum, the pattern still says which side is summed
  const summed = sumSide ?? (sum ? undefined : PATTERN_SUMS[pattern])
  const equalsSide = equals ? sideOfEquals(equals, agg.equals, summed, fail) : undefined
  if (schemas) {
    if (sum) typeIssues('aggregate.sum', sum.each, schemas, fail)
    if (equals) typeIssues('aggregate.equals', equals, schemas, fail)
  }
  if (issues.length || !sum || !equals || !tolerance || !sumSide || !equalsSide) return issues
  return { sum: { ...sum, side: sumSide }, equals, equalsSide, tolerance }
}

/** The side columns of `e` belong to ('both' when it mixes them, undefined when it reads none). */
function sidesOf(e: Expr): Side | 'both' | undefined {
  let side: Side | 'both' | undefined
  const walk = (x: Expr) => {
    if (x.kind === 'column') side = side === undefined || side === x.side ? x.side : 'both'
    for (const v of Object.values(x)) {
      if (Array.isArray(v)) v.forEach((y) => walk(y as Expr))
      else if (v && typeof v === 'object' && 'kind' in v) walk(v as Expr)
    }
  }
  walk(e)
  return side
}

const SIDE_NAME = { l: 'left', r: 'right' } as const
const PATTERN_SUMS: Record<string, Side | undefined> = { '1:N': 'r', 'N:1': 'l' }

function sideOfSum(sum: { each: Expr }, pattern: string, fail: (e: AggregateError) => void): Side | undefined {
  const side = sidesOf(sum.each)
  const pos = sum.each.pos
  if (side === undefined) {
    fail(new AggregateError('aggregate.sum', 'invalid_aggregate', 'SUM(...) reads no column', pos, SUM_EXAMPLE))
    return undefined
  }
  if (side === 'both') {
    fail(
      new AggregateError(
        'aggregate.sum',
        'aggregate_wrong_side',
        "SUM(...) mixes l. and r. columns; it adds the records of one side (the other side's value goes in aggregate.equals)",
        pos,
      ),
    )
    return undefined
  }
  const want = pattern === '1:N' ? 'r' : pattern === 'N:1' ? 'l' : side
  if (side !== want) {
    fail(
      new AggregateError(
        'aggregate.sum',
        'aggregate_wrong_side',
        `a ${pattern} pass sums ${SIDE_NAME[want]} records: SUM(...) must read ${want}. columns, not ${side}.`,
        pos,
        `swap sum and equals (sum: "SUM(${want}.amount)", equals: "${side}.amount"), or use pattern ${pattern === '1:N' ? 'N:1' : '1:N'}`,
      ),
    )
    return undefined
  }
  return side
}

function sideOfEquals(
  equals: Expr,
  text: string,
  sumSide: Side | undefined,
  fail: (e: AggregateError) => void,
): Side | undefined {
  const side = sidesOf(equals)
  if (side === undefined) {
    fail(
      new AggregateError(
        'aggregate.equals',
        'invalid_aggregate',
        `aggregate.equals (${text.trim()}) reads no column: it is the other side's amount, e.g. r.amount`,
        equals.pos,
      ),
    )
    return undefined
  }
  if (side === 'both' || (sumSide !== undefined && side === sumSide)) {
    const other = sumSide === 'l' ? 'r' : 'l'
    fail(
      new AggregateError(
        'aggregate.equals',
        'aggregate_wrong_side',
        sumSide === undefined
          ? 'aggregate.equals mixes l. and r. columns; it is one record of the side not summed'
          : `aggregate.equals must read ${other}. columns: the sum adds ${sumSide}. records and equals is the ${SIDE_NAME[other]} record they pay`,
        equals.pos,
        sumSide === undefined ? undefined : `e.g. equals: "${other}.amount"`,
      ),
    )
    return undefined
  }
  return side
}

/** Type problems of a per-record expression, which must be an exact amount (decimal or integer). */
function typeIssues(field: AggregateField, e: Expr, schemas: Schemas, fail: (e: AggregateError) => void): void {
  const checker = new TypeChecker(schemas)
  const type = checker.check(e)
  for (const i of checker.issues) fail(new AggregateError(field, i.code, i.message, i.pos, i.suggestion))
  if (checker.issues.length) return
  if (type.kind === 'decimal' || type.kind === 'integer' || type.kind === 'null') {
    if ((type.scale ?? 0) > MAX_EQUATION_SCALE)
      fail(
        new AggregateError(
          field,
          'invalid_aggregate',
          `${printExpr(e)} has ${type.scale} decimal places; amounts may have at most ${MAX_EQUATION_SCALE}`,
          e.pos,
          'round it: ROUND(l.gross_amount * 0.971, 2)',
        ),
      )
    return
  }
  const what = field === 'aggregate.sum' ? 'SUM(...) adds' : 'aggregate.equals is'
  fail(
    new AggregateError(
      field,
      'type_mismatch',
      `${what} exact amounts (decimal or integer), not a ${type.kind}: ${printExpr(e)}`,
      e.pos,
      type.kind === 'float'
        ? 'a division or float column is not exact: multiply by a decimal, or CAST(... AS numeric(12, 2))'
        : 'use an amount column, e.g. r.amount',
    ),
  )
}
