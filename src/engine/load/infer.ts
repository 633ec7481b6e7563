// Type inference over text values (CSV fields, JSON strings) and JS values (JSON numbers).
// Rules, in the order a value is tried (an empty value is NULL and says nothing about the type):
//   boolean   true / false (any case)
//   integer   -?digits, no leading zero, at most 15 digits (longer ids stay strings: exact)
//   decimal   -?digits.digits with at most 9 fraction digits and 15 significant digits; scale = max seen
//   float     exponent notation, or more than 9 fraction digits
//   date      YYYY-MM-DD (a real calendar date)
//   timestamp YYYY-MM-DD[T ]HH:MM[:SS[.fff]][zone]
//   string    anything else
// A column takes the narrowest type all its values fit: integer ⊂ decimal ⊂ float, date ⊂ timestamp;
// any other mix is string. A decimal column whose integer digits plus scale pass 15 becomes string.

import type { ColumnInfo, ColumnType } from '../data/types.js'
import { MAX_DECIMAL_DIGITS, MAX_DECIMAL_SCALE, numberText, parseDate, parseTimestamp } from '../data/values.js'

export type ValueKind = ColumnType | 'null'

const INTEGER_RE = /^[+-]?(0|[1-9]\d{0,14})$/
const DECIMAL_RE = /^[+-]?(0|[1-9]\d*)\.(\d+)$/
const FLOAT_RE = /^[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+$/

export interface TextClass {
  kind: ValueKind
  /** decimal: fraction digits; */
  scale: number
  /** decimal/integer: digits before the point (0 for "0.x"). */
  intDigits: number
}

const NULL_CLASS: TextClass = { kind: 'null', scale: 0, intDigits: 0 }

/** Classifies one (already trimmed) text value. */
export function classifyText(s: string): TextClass {
  if (s.length === 0) return NULL_CLASS
  const c = s.charCodeAt(0)
  if ((c >= 48 && c <= 57) || c === 45 || c === 43 || c === 46) {
    if (INTEGER_RE.test(s)) {
      const digits = s.replace(/^[+-]/, '')
      return { kind: 'integer', scale: 0, intDigits: digits === '0' ? 0 : digits.length }
    }
    const d = DECIMAL_RE.exec(s)
    if (d) {
      const intDigits = d[1] === '0' ? 0 : d[1].length
      const scale = d[2].length
      if (scale > MAX_DECIMAL_SCALE) return { kind: 'float', scale: 0, intDigits: 0 }
      if (intDigits + scale > MAX_DECIMAL_DIGITS) return { kind: 'string', scale: 0, intDigits: 0 }
      return { kind: 'decimal', scale, intDigits }
    }
    if (FLOAT_RE.test(s)) return { kind: 'float', scale: 0, intDigits: 0 }
    if (s.length === 10 && parseDate(s) !== null) return { kind: 'date', scale: 0, intDigits: 0 }
    if (s.length > 10 && parseTimestamp(s) !== null) return { kind: 'timestamp', scale: 0, intDigits: 0 }
    return { kind: 'string', scale: 0, intDigits: 0 }
  }
  if (s.length <= 5) {
    const lower = s.toLowerCase()
    if (lower === 'true' || lower === 'false') return { kind: 'boolean', scale: 0, intDigits: 0 }
  }
  return { kind: 'string', scale: 0, intDigits: 0 }
}

/** Classifies a value parsed from JSON. */
export function classifyValue(v: unknown): TextClass {
  if (v === null || v === undefined) return NULL_CLASS
  if (typeof v === 'string') return classifyText(v.trim())
  if (typeof v === 'boolean') return { kind: 'boolean', scale: 0, intDigits: 0 }
  if (typeof v === 'number') {
    const text = numberText(v)
    return text === null ? { kind: 'float', scale: 0, intDigits: 0 } : classifyText(text)
  }
  return { kind: 'string', scale: 0, intDigits: 0 }
}

/** Folds the classes of a column's values into its type. */
export class TypeTracker {
  kind: ValueKind = 'null'
  scale = 0
  intDigits = 0
  nulls = 0

  observe(c: TextClass): void {
    if (c.kind === 'null') {
      this.nulls++
      return
    }
    if (c.intDigits > this.intDigits) this.intDigits = c.intDigits
    if (c.scale > this.scale) this.scale = c.scale
    this.kind = widen(this.kind, c.kind)
  }

  result(name: string): ColumnInfo {
    let type: ColumnType = this.kind === 'null' ? 'string' : this.kind
    if (type === 'decimal' && this.intDigits + this.scale > MAX_DECIMAL_DIGITS) type = 'string'
    const info: ColumnInfo = { name, type, nullable: this.nulls > 0 }
    if (type === 'decimal') info.scale = this.scale
    return info
  }
}

const NUMERIC_RANK: Partial<Record<ValueKind, number>> = { integer: 1, decimal: 2, float: 3 }

export function widen(a: ValueKind, b: ValueKind): ValueKind {
  if (a === b || b === 'null') return a
  if (a === 'null') return b
  const ra = NUMERIC_RANK[a]
  const rb = NUMERIC_RANK[b]
  if (ra && rb) return ra > rb ? a : b
  if ((a === 'date' && b === 'timestamp') || (a === 'timestamp' && b === 'date')) return 'timestamp'
  return 'string'
}
