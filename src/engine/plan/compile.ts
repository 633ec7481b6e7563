// Compiles typed predicate expressions into JavaScript over the column arrays of the left (row i)
// and right (row j) tables, once per pass. Values in generated code: numbers for integer, float,
// date (days) and timestamp (ms); decimal units at a scale fixed at compile time (so + - and
// comparisons are integer arithmetic: exact); strings; booleans; null for SQL NULL.

import type { Expr, Side } from '../../language/predicate.js'
import {
  type ExprType,
  isNumeric,
  literalScale,
  numberLiteralType,
  numericUnion,
  type Schemas,
  TypeChecker,
} from '../../language/types.js'
import { type Column, type StringColumn, stringAt } from '../data/column.js'
import type { LookupSet } from '../data/lookup.js'
import { likePattern } from '../load/filter.js'
import { codesOf, jaroWinkler } from '../match/text/jaro.js'
import { normalizeText } from '../match/text/prepared.js'
import { runtime } from './runtime.js'
import type { Table } from '../data/table.js'
import {
  formatDate,
  formatDecimal,
  formatTimestamp,
  POW10,
  parseDate,
  parseDateOrTimestamp,
  parseDecimal,
} from '../data/values.js'

export interface Compiled {
  code: string
  type: ExprType
}

export class CompileError extends Error {
  constructor(
    message: string,
    readonly expr?: Expr,
  ) {
    super(message)
  }
}

const DAY_MS = 86_400_000

const likeCache = new Map<string, RegExp | null>()

/** Extra runtime pieces the compiler needs beyond the null-aware operators. */
const compileRuntime = {
  ...runtime,
  fmtDec: (u: number | null, s: number) => (u === null ? null : formatDecimal(u, s)),
  fmtDate: (d: number | null) => (d === null ? null : formatDate(d)),
  fmtTs: (ms: number | null) => (ms === null ? null : formatTimestamp(ms)),
  str: (x: unknown) => (x === null ? null : String(x)),
  /**
   * `=` of two text columns' values on their UTF-8 bytes (lazy decoding: nothing decoded); NULL
   * if either is. Bytes are what `=` compares on text (the C collation, as the join's keys do).
   */
  eqBytes: (a: StringColumn, i: number, b: StringColumn, j: number): boolean | null => {
    if ((a.valid !== null && a.valid[i] === 0) || (b.valid !== null && b.valid[j] === 0)) return null
    const s = a.offsets[i]
    const t = b.offsets[j]
    const n = a.offsets[i + 1] - s
    if (b.offsets[j + 1] - t !== n) return false
    for (let k = 0; k < n; k++) if (a.data[s + k] !== b.data[t + k]) return false
    return true
  },
  /** One value of a string column (lazy decoding). */
  stringOrNull: (col: Column, row: number): string | null =>
    col.type === 'string' && (col.valid === null || col.valid[row] === 1) ? stringAt(col, row) : null,
  parseDec: (s: string | null, scale: number): number | null => {
    if (s === null) return null
    const d = parseDecimal(s.trim())
    if (d === null) return null
    return d.scale <= scale ? d.units * POW10[scale - d.scale] : Math.round(d.units / POW10[d.scale - scale])
  },
  parseDate: (s: string | null) => (s === null ? null : parseDate(s.trim())),
  parseTs: (s: string | null) => (s === null ? null : parseDateOrTimestamp(s.trim())),
  parseFloat: (s: string | null) => {
    if (s === null) return null
    const n = Number(s)
    return Number.isNaN(n) ? null : n
  },
  parseBool: (s: string | null) =>
    s === null ? null : /^(true|t|1)$/i.test(s.trim()) ? true : /^(false|f|0)$/i.test(s.trim()) ? false : null,
  likeDyn: (s: string | null, pattern: string | null, insensitive: boolean): boolean | null => {
    if (s === null || pattern === null) return null
    const key = insensitive ? `i${pattern}` : `s${pattern}`
    let re = likeCache.get(key)
    if (re === undefined) {
      try {
        const exact = likePattern(pattern)
        re = insensitive ? new RegExp(exact.source, 'siu') : exact
      } catch {
        re = null // a pattern ending in a lone escape matches nothing, as a NULL would
      }
      if (likeCache.size > 10_000) likeCache.clear()
      likeCache.set(key, re)
    }
    return re === null ? null : re.test(s)
  },
  floorDiv: (x: number | null, f: number) => (x === null ? null : Math.floor(x / f)),
  jaroWinkler: (a: string | null, b: string | null): number | null => {
    if (a === null || b === null) return null
    const x = codesOf(a)
    const y = codesOf(b)
    return jaroWinkler(x, 0, x.length, y, 0, y.length)
  },
  sharesToken: (a: string | null, b: string | null): boolean | null => {
    if (a === null || b === null) return null
    const mine = new Set(normalizeText(a).split(' '))
    for (const t of normalizeText(b).split(' ')) if (t !== '' && mine.has(t)) return true
    return false
  },
  and3: (...xs: (boolean | null)[]): boolean | null => {
    let unknown = false
    for (const x of xs) {
      if (x === false) return false
      if (x === null) unknown = true
    }
    return unknown ? null : true
  },
  or3: (...xs: (boolean | null)[]): boolean | null => {
    let unknown = false
    for (const x of xs) {
      if (x === true) return true
      if (x === null) unknown = true
    }
    return unknown ? null : false
  },
}

type Binding = { name: string; value: unknown }

/**
 * How many functions have been generated, process-wide. Code is generated once per pass (per
 * expression a pass evaluates), never per row or partition: a test holds the engine to that by
 * comparing this count across inputs of different sizes.
 */
export const generated = { functions: 0 }

/**
 * Generates code for expressions over two tables. Column arrays and constants become named
 * bindings of the generated function, so the code itself only indexes typed arrays.
 */
export class ExprCompiler {
  private readonly bindings = new Map<string, Binding>()
  private readonly checker: TypeChecker
  private counter = 0
  /** Call nodes whose value the generated code also stores in a cell (`keep`). */
  private readonly kept = new Map<Expr, string>()

  constructor(
    schemas: Schemas,
    private readonly tables: { l: Table; r: Table },
    /** The run's lookup tables, indexed (lookup() calls read through them). */
    private readonly lookups?: LookupSet,
    /**
     * Decode a string column's values when a row is first read, not all up front: for callers that
     * visit few rows of large tables (the exceptions classifier checks one pair per unmatched
     * record; decoding two 1M-row columns whole cost it ~0.7 s).
     */
    private readonly lazyStrings = false,
  ) {
    this.checker = new TypeChecker(lookups ? { ...schemas, lookups: lookups.schemas } : schemas)
  }

  typeOf(e: Expr): ExprType {
    const t = this.checker.check(e)
    if (this.checker.issues.length) {
      const first = this.checker.issues[0]
      this.checker.issues.length = 0
      throw new CompileError(first.message, e)
    }
    return t
  }

  private bind(key: string, value: () => unknown): string {
    let b = this.bindings.get(key)
    if (!b) {
      b = { name: `b${this.counter++}`, value: value() }
      this.bindings.set(key, b)
    }
    return b.name
  }

  private column(side: Side, name: string): Compiled {
    const table = this.tables[side]
    const index = table.columns.findIndex((c) => c.name === name)
    if (index < 0) throw new CompileError(`${side}.${name} is not a column`)
    const col = table.data[index]
    const row = side === 'l' ? 'i' : 'j'
    const type = this.typeOf({ kind: 'column', side, name, pos: { start: 0, end: 0 } })
    if (col.type === 'string') {
      if (this.lazyStrings) {
        const cache = this.bind(`${side}.${name}:s`, () => new Array<string | null | undefined>(col.length))
        const source = this.bind(`${side}.${name}:c`, () => col)
        return {
          code: `(${cache}[${row}] !== undefined ? ${cache}[${row}] : (${cache}[${row}] = H.stringOrNull(${source}, ${row})))`,
          type,
        }
      }
      const arr = this.bind(`${side}.${name}:s`, () => decodeStrings(col))
      return { code: `${arr}[${row}]`, type }
    }
    const values = this.bind(`${side}.${name}:v`, () => col.values)
    const read = col.type === 'boolean' ? `(${values}[${row}] === 1)` : `${values}[${row}]`
    if (col.valid === null) return { code: read, type }
    const valid = this.bind(`${side}.${name}:n`, () => col.valid)
    return { code: `(${valid}[${row}] === 0 ? null : ${read})`, type }
  }

  /**
   * Makes the code generated from now on for the call `e` also store its value in the returned
   * cell, so a value computed by one check (a pair's similarity) can be read back, not recomputed.
   */
  keep(e: Expr): { v: number | null } {
    const cell = { v: null as number | null }
    this.kept.set(
      e,
      this.bind(`keep:${this.counter}`, () => cell),
    )
    return cell
  }

  /** Code for `e`, converted to `target` when given (decimal rescaling, date → timestamp, number → float). */
  compile(e: Expr, target?: ExprType): Compiled {
    const c = this.raw(e)
    return target ? this.convert(c, target) : c
  }

  convert(c: Compiled, to: ExprType): Compiled {
    const from = c.type
    if (from.kind === 'null') return { code: 'null', type: to }
    if (to.kind === 'decimal' || (to.kind === 'integer' && from.kind === 'integer')) {
      const s = to.kind === 'decimal' ? (to.scale ?? 0) : 0
      if (from.kind === 'integer' || from.kind === 'decimal') {
        const k = s - (from.scale ?? 0)
        if (k === 0) return { code: c.code, type: to }
        if (k > 0) return { code: `H.mul(${c.code}, ${POW10[k]})`, type: to }
        return { code: `H.roundUnits(${c.code}, ${POW10[-k]})`, type: to }
      }
    }
    if (to.kind === 'float' && (from.kind === 'integer' || from.kind === 'decimal')) {
      const s = from.scale ?? 0
      return { code: s === 0 ? c.code : `H.div(${c.code}, ${POW10[s]})`, type: to }
    }
    if (to.kind === 'timestamp' && from.kind === 'date') return { code: `H.dayMs(${c.code})`, type: to }
    return { code: c.code, type: from }
  }

  private raw(e: Expr): Compiled {
    const type = this.typeOf(e)
    switch (e.kind) {
      case 'column':
        return this.column(e.side, e.name)
      case 'number': {
        const t = numberLiteralType(e.text)
        if (t.kind === 'float') return { code: String(Number(e.text)), type: t }
        return {
          code: String(Number(e.text.replace('.', ''))),
          type: { kind: t.kind, scale: literalScale(e.text) || undefined },
        }
      }
      case 'string':
        return { code: JSON.stringify(e.value), type }
      case 'boolean':
        return { code: String(e.value), type }
      case 'null':
        return { code: 'null', type }
      case 'interval':
        throw new CompileError('an interval can only be added to or subtracted from a date or timestamp', e)
      case 'not':
        return { code: `H.not(${this.compile(e.arg).code})`, type }
      case 'and':
      case 'or':
        return { code: `H.${e.kind}3(${e.args.map((a) => this.compile(a).code).join(', ')})`, type }
      case 'neg':
        return { code: `H.neg(${this.compile(e.arg).code})`, type }
      case 'is_null': {
        const code = `H.isNull(${this.compile(e.arg).code})`
        return { code: e.negated ? `!${code}` : code, type }
      }
      case 'compare':
        return { code: this.comparison(e.op, e.left, e.right), type }
      case 'between': {
        const lo = this.comparison('>=', e.value, e.lo)
        const hi = this.comparison('<=', e.value, e.hi)
        const code = `H.and3(${lo}, ${hi})`
        return { code: e.negated ? `H.not(${code})` : code, type }
      }
      case 'in': {
        const code = `H.or3(${e.list.map((item) => this.comparison('=', e.value, item)).join(', ')})`
        return { code: e.negated ? `H.not(${code})` : code, type }
      }
      case 'like': {
        if (e.pattern.kind !== 'string') {
          // a pattern built from the row, e.g. r.ref LIKE l.invoice_id || '-PART%'
          const code = `H.likeDyn(${this.compile(e.value).code}, ${this.compile(e.pattern).code}, ${e.insensitive})`
          return { code: e.negated ? `H.not(${code})` : code, type }
        }
        const re = likePattern(e.pattern.value)
        const pattern = e.insensitive ? new RegExp(re.source, 'siu') : re
        const name = this.bind(`like:${e.insensitive}:${e.pattern.value}`, () => pattern)
        const code = `H.like(${this.compile(e.value).code}, ${name})`
        return { code: e.negated ? `H.not(${code})` : code, type }
      }
      case 'concat':
        return { code: `H.concat(${this.text(e.left)}, ${this.text(e.right)})`, type }
      case 'arith':
        return this.arith(e, type)
      case 'cast':
        return this.cast(e, type)
      case 'call':
        return this.call(e, type)
    }
  }

  private text(e: Expr): string {
    return this.cast({ kind: 'cast', arg: e, to: 'text', pos: e.pos }, { kind: 'string' }).code
  }

  /** Both sides converted to one comparable type: decimals to a common scale, dates to ms next to timestamps. */
  operands(a: Expr, b: Expr): [Compiled, Compiled, ExprType] {
    const ca = this.compile(a)
    const cb = this.compile(b)
    const ta = ca.type
    const tb = cb.type
    let common: ExprType = ta.kind === 'null' ? tb : ta
    if (isNumeric(ta) && isNumeric(tb)) common = numericUnion(ta, tb)
    else if ((ta.kind === 'timestamp' && tb.kind === 'date') || (ta.kind === 'date' && tb.kind === 'timestamp'))
      common = { kind: 'timestamp' }
    return [this.convert(ca, common), this.convert(cb, common), common]
  }

  comparison(op: string, a: Expr, b: Expr): string {
    // two text columns compared for equality where rows are read lazily: on their bytes (the
    // classifier's `l.reference = r.ref` decoded two values per unmatched record)
    const bytes = this.lazyStrings && (op === '=' || op === '<>') && [this.textColumn(a), this.textColumn(b)]
    if (bytes && bytes[0] && bytes[1]) {
      const eq = `H.eqBytes(${bytes[0]}, ${bytes[1]})`
      return op === '=' ? eq : `H.not(${eq})`
    }
    const [ca, cb, common] = this.operands(a, b)
    const fn = { '=': 'eq', '<>': 'ne', '<': 'lt', '<=': 'le', '>': 'gt', '>=': 'ge' }[op]!
    if (common.kind === 'string' && op !== '=' && op !== '<>') {
      const cmp = `H.scmp(${ca.code}, ${cb.code})`
      return `H.${fn}(${cmp}, 0)`
    }
    return `H.${fn}(${ca.code}, ${cb.code})`
  }

  /** `column, row` arguments for a plain text column of a side's table; undefined for anything else. */
  private textColumn(e: Expr): string | undefined {
    if (e.kind !== 'column' || (e.side !== 'l' && e.side !== 'r')) return undefined
    const table = this.tables[e.side]
    const col = table.data[table.columns.findIndex((c) => c.name === e.name)]
    if (col?.type !== 'string') return undefined
    return `${this.bind(`${e.side}.${e.name}:c`, () => col)}, ${e.side === 'l' ? 'i' : 'j'}`
  }

  private arith(e: Extract<Expr, { kind: 'arith' }>, type: ExprType): Compiled {
    const a = this.typeOf(e.left)
    const b = this.typeOf(e.right)
    const temporal = (t: ExprType) => t.kind === 'date' || t.kind === 'timestamp'
    if (temporal(a) || temporal(b)) return this.temporalArith(e, a, b, type)
    if (e.op === '/') {
      const float = { kind: 'float' } as ExprType
      return { code: `H.div(${this.compile(e.left, float).code}, ${this.compile(e.right, float).code})`, type }
    }
    if (e.op === '*') {
      return { code: `H.times(${this.compile(e.left).code}, ${this.compile(e.right).code})`, type }
    }
    const fn = { '+': 'add', '-': 'sub', '%': 'mod' }[e.op]!
    return { code: `H.${fn}(${this.compile(e.left, type).code}, ${this.compile(e.right, type).code})`, type }
  }

  private temporalArith(e: Extract<Expr, { kind: 'arith' }>, a: ExprType, b: ExprType, type: ExprType): Compiled {
    const sign = e.op === '-' ? -1 : 1
    if (a.kind === 'date' && b.kind === 'date')
      return { code: `H.sub(${this.compile(e.left).code}, ${this.compile(e.right).code})`, type }
    const [base, delta] = a.kind === 'date' || a.kind === 'timestamp' ? [e.left, e.right] : [e.right, e.left]
    const baseCode = this.compile(base, type).code
    if (delta.kind === 'interval') {
      const amount = type.kind === 'date' ? delta.days : delta.days * DAY_MS + delta.ms
      return { code: `H.add(${baseCode}, ${sign * amount})`, type }
    }
    // date ± integer days
    const n = this.compile(delta).code
    const scaled = type.kind === 'timestamp' ? `H.times(${n}, ${DAY_MS})` : n
    return { code: sign < 0 ? `H.sub(${baseCode}, ${scaled})` : `H.add(${baseCode}, ${scaled})`, type }
  }

  private cast(e: Extract<Expr, { kind: 'cast' }>, type: ExprType): Compiled {
    const c = this.compile(e.arg)
    const from = c.type.kind
    switch (type.kind) {
      case 'string':
        if (from === 'decimal') return { code: `H.fmtDec(${c.code}, ${c.type.scale ?? 0})`, type }
        if (from === 'date') return { code: `H.fmtDate(${c.code})`, type }
        if (from === 'timestamp') return { code: `H.fmtTs(${c.code})`, type }
        return { code: from === 'string' ? c.code : `H.str(${c.code})`, type }
      case 'decimal':
      case 'integer':
        if (from === 'string') return { code: `H.parseDec(${c.code}, ${type.scale ?? 0})`, type }
        if (from === 'float') return { code: `H.roundFloat(H.times(${c.code}, ${POW10[type.scale ?? 0]}), 0)`, type }
        return this.convert(c, type)
      case 'float':
        if (from === 'string') return { code: `H.parseFloat(${c.code})`, type }
        return this.convert(c, type)
      case 'date':
        if (from === 'string') return { code: `H.parseDate(${c.code})`, type }
        if (from === 'timestamp') return { code: `H.floorDiv(${c.code}, ${DAY_MS})`, type }
        return { code: c.code, type }
      case 'timestamp':
        if (from === 'string') return { code: `H.parseTs(${c.code})`, type }
        return this.convert(c, type)
      case 'boolean':
        if (from === 'string') return { code: `H.parseBool(${c.code})`, type }
        return { code: c.code, type }
      default:
        return c
    }
  }

  private call(e: Extract<Expr, { kind: 'call' }>, type: ExprType): Compiled {
    const arg = (i: number, t?: ExprType) => this.compile(e.args[i], t).code
    switch (e.name) {
      case 'abs':
        return { code: `H.abs(${arg(0)})`, type }
      case 'round': {
        const inner = this.compile(e.args[0])
        const digits = e.args.length > 1 && e.args[1].kind === 'number' ? Number(e.args[1].text) : 0
        if (inner.type.kind === 'float')
          return { code: `H.roundFloat(${inner.code}, ${digits})`, type: { kind: 'float' } }
        return this.convert(inner, type)
      }
      case 'lower':
      case 'upper':
      case 'trim':
      case 'ltrim':
      case 'rtrim':
      case 'length':
        return { code: `H.${e.name}(${arg(0)})`, type }
      case 'substring':
        return { code: `H.substring(${e.args.map((_, i) => arg(i)).join(', ')})`, type }
      case 'replace':
        return { code: `H.replace(${arg(0)}, ${arg(1)}, ${arg(2)})`, type }
      case 'regexp_replace': {
        const pattern = e.args[1]
        const flags = e.args[3]
        if (pattern.kind !== 'string' || (flags && flags.kind !== 'string')) {
          throw new CompileError('regexp_replace needs a literal pattern (and flags)', e)
        }
        const f = flags?.kind === 'string' ? flags.value.replace(/[^gi]/g, '') : ''
        const re = this.bind(`re:${pattern.value}:${f}`, () => new RegExp(pattern.value, `${f}u`))
        return { code: `H.regexpReplace(${arg(0)}, ${re}, ${arg(2)})`, type }
      }
      case 'similarity':
      case 'levenshtein': {
        const code = `H.${e.name}(${arg(0)}, ${arg(1)})`
        const cell = this.kept.get(e)
        return { code: cell ? `(${cell}.v = ${code})` : code, type }
      }
      case 'jaro_winkler':
        return { code: `H.jaroWinkler(${arg(0)}, ${arg(1)})`, type }
      case 'shares_token':
        // in a condition, any common token; the cap (third argument) only prunes blocking rules
        return { code: `H.sharesToken(${arg(0)}, ${arg(1)})`, type }
      case 'date_trunc': {
        const unit = e.args[0].kind === 'string' ? e.args[0].value.toLowerCase() : 'day'
        const fn = type.kind === 'timestamp' ? 'tsTrunc' : 'dateTrunc'
        return { code: `H.${fn}(${JSON.stringify(unit)}, ${arg(1)})`, type }
      }
      case 'tolerance_match': {
        const [ca, cb, common] = this.operands(e.args[0], e.args[1])
        const tol = this.compile(e.args[2], common).code
        return { code: `H.le(H.abs(H.sub(${ca.code}, ${cb.code})), ${tol})`, type }
      }
      case 'coalesce':
      case 'greatest':
      case 'least':
        return { code: `H.${e.name}(${e.args.map((_, i) => arg(i, type)).join(', ')})`, type }
      case 'lookup':
        return this.lookup(e, type)
      default:
        throw new CompileError(`unknown function ${e.name}()`, e)
    }
  }

  /** A read through a lookup table's index: the row the values find (-1: none), then its column. */
  private lookup(e: Extract<Expr, { kind: 'call' }>, type: ExprType): Compiled {
    const [nameArg, columnArg] = e.args
    if (nameArg.kind !== 'string' || columnArg.kind !== 'string')
      throw new CompileError('lookup() names its table and column as literals', e)
    const table = this.lookups?.get(nameArg.value)
    if (!table) throw new CompileError(`lookup "${nameArg.value}" is not loaded`, e)
    const values = e.args.slice(2).map((a) => this.compile(a))
    const types = values.map((v) => `${v.type.kind}${v.type.scale ?? ''}`).join(',')
    const probe = this.bind(`lookup:${nameArg.value}(${types})`, () => table.probe(values.map((v) => v.type)))
    const read = this.bind(`lookup:${nameArg.value}.${columnArg.value}`, () => table.reader(columnArg.value))
    return { code: `${read}(${probe}(${values.map((v) => v.code).join(', ')}))`, type }
  }

  /** Builds `(i, j) => value` (or `(i) =>` / `(j) =>` when the code reads one side only). */
  build<F>(params: string, body: string): F {
    const names = [...this.bindings.values()]
    generated.functions++
    const factory = new Function('H', ...names.map((b) => b.name), `return (${params}) => ${body}`)
    return factory(compileRuntime, ...names.map((b) => b.value)) as F
  }
}

/** Every value of a string column as a JS string (NULL as null), decoded once per pass. */
export function decodeStrings(col: Column): (string | null)[] {
  if (col.type !== 'string') throw new Error('not a string column')
  const out = new Array<string | null>(col.length)
  for (let i = 0; i < col.length; i++) out[i] = col.valid !== null && col.valid[i] === 0 ? null : stringAt(col, i)
  return out
}
