// Static types of predicate expressions, checked against the two sources' schemas before a
// recipe runs: unknown columns, comparisons across incompatible types (a date against a number),
// wrong argument types. The compiler relies on these types (and decimal scales) being known.

import { lookupType } from './lookup-type.js'
import { nearestNames } from './similarity.js'
import type { ColumnInfo } from '../engine/data/types.js'
import type { Expr, Position, Side } from './predicate.js'

export type ExprKind =
  'string' | 'integer' | 'decimal' | 'float' | 'boolean' | 'date' | 'timestamp' | 'interval' | 'null'

export interface ExprType {
  kind: ExprKind
  /** decimal: digits after the point. */
  scale?: number
}

export interface TypeIssue {
  code: string
  message: string
  pos?: Position
  suggestion?: string
}

export interface Schemas {
  l: ColumnInfo[]
  r: ColumnInfo[]
  /** The recipe's lookup tables by name, for lookup() calls. */
  lookups?: Record<string, LookupSchema>
}

/** A lookup table as the checker sees it: its declaration and its source's columns. */
export interface LookupSchema {
  source: string
  key: string[]
  as_of?: string
  /** Undefined when the source is unknown (reported once, with the recipe's lookups). */
  columns?: ColumnInfo[]
}

const NUMERIC: ReadonlySet<ExprKind> = new Set(['integer', 'decimal', 'float'])
export const TEMPORAL: ReadonlySet<ExprKind> = new Set(['date', 'timestamp'])
const T = (kind: ExprKind, scale?: number): ExprType => (scale === undefined ? { kind } : { kind, scale })

/** The type of a column's values (decimals keep their scale). */
export function columnType(col: ColumnInfo): ExprType {
  return col.type === 'decimal' ? T('decimal', col.scale ?? 0) : T(col.type)
}

export function isNumeric(t: ExprType): boolean {
  return NUMERIC.has(t.kind)
}

/** The scale of a number literal's text ("0.010" → 3). */
export function literalScale(text: string): number {
  const dot = text.indexOf('.')
  return dot < 0 ? 0 : text.length - dot - 1
}

export function numberLiteralType(text: string): ExprType {
  if (/e/i.test(text)) return T('float')
  const scale = literalScale(text)
  return scale === 0 ? T('integer') : T('decimal', scale)
}

/** The common numeric type of two operands of + or - (or a comparison). */
export function numericUnion(a: ExprType, b: ExprType): ExprType {
  if (a.kind === 'float' || b.kind === 'float') return T('float')
  if (a.kind === 'decimal' || b.kind === 'decimal') return T('decimal', Math.max(a.scale ?? 0, b.scale ?? 0))
  return T('integer')
}

export class TypeChecker {
  readonly issues: TypeIssue[] = []
  constructor(private readonly schemas: Schemas) {}

  private issue(code: string, message: string, pos?: Position, suggestion?: string): ExprType {
    this.issues.push(suggestion === undefined ? { code, message, pos } : { code, message, pos, suggestion })
    return T('null')
  }

  column(side: Side, name: string): ColumnInfo | undefined {
    return this.schemas[side].find((c) => c.name === name)
  }

  check(e: Expr): ExprType {
    switch (e.kind) {
      case 'column': {
        const col = this.column(e.side, e.name)
        if (!col) {
          const near = nearestNames(
            e.name,
            this.schemas[e.side].map((c) => c.name),
          )
          return this.issue(
            'unknown_column',
            `${e.side === 'l' ? 'left' : 'right'} source has no column "${e.name}"`,
            e.pos,
            near.length ? `did you mean ${near.map((n) => `${e.side}.${n}`).join(', ')}?` : undefined,
          )
        }
        return columnType(col)
      }
      case 'number':
        return numberLiteralType(e.text)
      case 'string':
        return T('string')
      case 'boolean':
        return T('boolean')
      case 'null':
        return T('null')
      case 'interval':
        return T('interval')
      case 'not':
        this.expectBoolean(e.arg)
        return T('boolean')
      case 'and':
      case 'or':
        for (const a of e.args) this.expectBoolean(a)
        return T('boolean')
      case 'neg': {
        const t = this.check(e.arg)
        if (!isNumeric(t) && t.kind !== 'null' && t.kind !== 'interval')
          return this.issue('type_mismatch', `cannot negate a ${t.kind}`, e.pos)
        return t
      }
      case 'is_null':
        this.check(e.arg)
        return T('boolean')
      case 'compare':
        this.comparable(this.check(e.left), this.check(e.right), e.pos)
        return T('boolean')
      case 'between': {
        const v = this.check(e.value)
        this.comparable(v, this.check(e.lo), e.pos)
        this.comparable(v, this.check(e.hi), e.pos)
        return T('boolean')
      }
      case 'in': {
        const v = this.check(e.value)
        for (const item of e.list) this.comparable(v, this.check(item), item.pos)
        return T('boolean')
      }
      case 'like': {
        const v = this.check(e.value)
        const p = this.check(e.pattern)
        if (v.kind !== 'string' && v.kind !== 'null')
          this.issue('type_mismatch', `LIKE needs a string, not a ${v.kind}`, e.value.pos)
        if (p.kind !== 'string' && p.kind !== 'null')
          this.issue('type_mismatch', `a LIKE pattern is a string, not a ${p.kind}`, e.pattern.pos)
        return T('boolean')
      }
      case 'concat':
        this.check(e.left)
        this.check(e.right)
        return T('string')
      case 'arith':
        return this.arith(e)
      case 'cast': {
        const from = this.check(e.arg)
        const to: ExprType =
          e.to === 'text'
            ? T('string')
            : e.to === 'numeric'
              ? e.scale === undefined
                ? from.kind === 'decimal'
                  ? from
                  : T('decimal', from.kind === 'integer' ? 0 : 6)
                : T('decimal', e.scale)
              : T(e.to)
        return to
      }
      case 'call':
        return this.call(e)
    }
  }

  private expectBoolean(e: Expr): void {
    const t = this.check(e)
    if (t.kind !== 'boolean' && t.kind !== 'null')
      this.issue('type_mismatch', `expected a condition, found a ${t.kind} value`, e.pos, 'compare it, e.g. l.x = r.y')
  }

  comparable(a: ExprType, b: ExprType, pos: Position): void {
    if (!compatible(a, b)) this.issue('type_mismatch', `cannot compare ${a.kind} with ${b.kind}`, pos, hintFor(a, b))
  }

  private arith(e: Extract<Expr, { kind: 'arith' }>): ExprType {
    const a = this.check(e.left)
    const b = this.check(e.right)
    if (a.kind === 'null' || b.kind === 'null') return T('null')
    if (isNumeric(a) && isNumeric(b)) {
      if (e.op === '/') return T('float')
      if (e.op === '*')
        return a.kind === 'float' || b.kind === 'float'
          ? T('float')
          : a.kind === 'integer' && b.kind === 'integer'
            ? T('integer')
            : T('decimal', (a.scale ?? 0) + (b.scale ?? 0))
      return numericUnion(a, b)
    }
    if ((e.op === '+' || e.op === '-') && TEMPORAL.has(a.kind) && (b.kind === 'interval' || b.kind === 'integer')) {
      if (a.kind === 'date' && b.kind === 'interval' && !dayInterval(e.right)) return T('timestamp')
      return a
    }
    if (e.op === '+' && TEMPORAL.has(b.kind) && (a.kind === 'interval' || a.kind === 'integer')) return b
    if (e.op === '-' && a.kind === 'date' && b.kind === 'date') return T('integer')
    return this.issue('type_mismatch', `cannot apply ${e.op} to ${a.kind} and ${b.kind}`, e.pos)
  }

  private call(e: Extract<Expr, { kind: 'call' }>): ExprType {
    const args = e.args.map((a) => this.check(a))
    const want = (i: number, ok: (t: ExprType) => boolean, what: string) => {
      if (args[i] && args[i].kind !== 'null' && !ok(args[i]))
        this.issue(
          'type_mismatch',
          `argument ${i + 1} of ${e.name}() must be ${what}, not ${args[i].kind}`,
          e.args[i].pos,
        )
    }
    const str = (t: ExprType) => t.kind === 'string'
    const int = (t: ExprType) => t.kind === 'integer'
    switch (e.name) {
      case 'abs':
        want(0, isNumeric, 'a number')
        return args[0]
      case 'round': {
        want(0, isNumeric, 'a number')
        if (args.length === 2) {
          const digits = e.args[1]
          if (digits.kind !== 'number' || !/^\d+$/.test(digits.text))
            return this.issue('type_mismatch', 'round(x, n) needs a whole number literal n', digits.pos)
          return T('decimal', Number(digits.text))
        }
        return args[0].kind === 'float' ? T('float') : T('integer')
      }
      case 'lower':
      case 'upper':
      case 'trim':
      case 'ltrim':
      case 'rtrim':
        want(0, str, 'a string')
        return T('string')
      case 'length':
        want(0, str, 'a string')
        return T('integer')
      case 'substring':
        want(0, str, 'a string')
        want(1, int, 'an integer')
        want(2, int, 'an integer')
        return T('string')
      case 'replace':
      case 'regexp_replace':
        for (let i = 0; i < args.length; i++) want(i, str, 'a string')
        return T('string')
      case 'similarity':
        want(0, str, 'a string')
        want(1, str, 'a string')
        return T('float')
      case 'levenshtein':
        want(0, str, 'a string')
        want(1, str, 'a string')
        return T('integer')
      case 'jaro_winkler':
        want(0, str, 'a string')
        want(1, str, 'a string')
        return T('float')
      case 'shares_token': {
        want(0, str, 'a string')
        want(1, str, 'a string')
        const cap = e.args[2]
        if (cap && (cap.kind !== 'number' || !/^[1-9]\d*$/.test(cap.text)))
          return this.issue(
            'invalid_argument',
            "shares_token's third argument is a whole number: tokens held by more records than that on either side do not block",
            cap.pos,
          )
        return T('boolean')
      }
      case 'date_trunc': {
        const unit = e.args[0]
        if (unit.kind !== 'string' || !['day', 'week', 'month', 'quarter', 'year'].includes(unit.value.toLowerCase())) {
          return this.issue(
            'invalid_argument',
            "date_trunc's first argument is 'day', 'week', 'month', 'quarter' or 'year'",
            unit.pos,
          )
        }
        want(1, (t) => TEMPORAL.has(t.kind), 'a date or timestamp')
        return args[1]
      }
      case 'tolerance_match':
        want(0, isNumeric, 'a number')
        want(1, isNumeric, 'a number')
        want(2, isNumeric, 'a number')
        return T('boolean')
      case 'lookup':
        return lookupType(e, args, this.schemas.lookups ?? {}, (code, message, pos, suggestion) =>
          this.issue(code, message, pos, suggestion),
        )
      case 'coalesce':
      case 'greatest':
      case 'least': {
        let out = args[0]
        for (let i = 1; i < args.length; i++) {
          this.comparable(out, args[i], e.args[i].pos)
          if (out.kind === 'null') out = args[i]
          else if (isNumeric(out) && isNumeric(args[i])) out = numericUnion(out, args[i])
          else if (out.kind === 'date' && args[i].kind === 'timestamp') out = args[i]
        }
        return out
      }
      default:
        return this.issue('unknown_function', `unknown function ${e.name}()`, e.pos)
    }
  }
}

export function compatible(a: ExprType, b: ExprType): boolean {
  if (a.kind === 'null' || b.kind === 'null' || a.kind === b.kind) return true
  if (isNumeric(a) && isNumeric(b)) return true
  return TEMPORAL.has(a.kind) && TEMPORAL.has(b.kind)
}

function dayInterval(e: Expr): boolean {
  return e.kind === 'interval' && e.ms === 0 && Number.isInteger(e.days)
}

export function hintFor(a: ExprType, b: ExprType): string | undefined {
  const kinds = [a.kind, b.kind]
  if (kinds.some((k) => TEMPORAL.has(k)) && kinds.some((k) => NUMERIC.has(k))) {
    return "dates compare with dates; to allow a lag write r.date BETWEEN l.date AND l.date + INTERVAL '3 days'"
  }
  if (kinds.includes('string')) return 'cast one side, e.g. CAST(l.x AS text) or CAST(r.y AS numeric)'
  return undefined
}
