// A predicate as PostgreSQL, for running passes inside the database (engine "postgres"). The SQL
// must select exactly the pairs the in-process engine selects, so it spells out the engine's
// semantics where PostgreSQL's defaults differ: strings order by bytes (COLLATE "C"), `/` is a
// float division, `ROUND` of a float goes through numeric. Values never enter the text: literals
// are bound parameters, columns are identifiers checked against the source's schema, functions
// come from a fixed list.

import type { ColumnInfo } from '../../src/engine/data/types.js'
import { ConcordError } from '../../src/errors.js'
import type { Expr, Side } from '../../src/language/predicate.js'
import { quoteIdent } from '../../src/language/print.js'
import { isNumeric, type Schemas, TypeChecker } from '../../src/language/types.js'

export interface SqlText {
  sql: string
  params: unknown[]
}

/** Functions PostgreSQL evaluates the way the engine does; the rest keep a pass in memory. */
const SQL_FUNCTIONS: Record<string, string> = {
  abs: 'abs',
  round: 'round',
  lower: 'lower',
  upper: 'upper',
  trim: 'btrim',
  ltrim: 'ltrim',
  rtrim: 'rtrim',
  length: 'char_length',
  substring: 'substring',
  replace: 'replace',
  coalesce: 'coalesce',
}

const CASTS: Record<string, string> = {
  text: 'text',
  integer: 'bigint',
  numeric: 'numeric',
  float: 'float8',
  date: 'date',
  timestamp: 'timestamptz',
  boolean: 'boolean',
}

/** Why a predicate cannot run in PostgreSQL with the engine's semantics, or null when it can. */
export function pushdownObstacle(e: Expr): string | null {
  switch (e.kind) {
    case 'call':
      if (e.name === 'similarity' || e.name === 'levenshtein' || e.name === 'jaro_winkler')
        return `${e.name}() needs an extension (pg_trgm / fuzzystrmatch) the engine does not assume`
      if (e.name === 'lookup') return "lookup() reads a recipe's lookup table, which only the in-process engine indexes"
      if (e.name === 'shares_token')
        return 'shares_token() splits text into tokens as the engine does, not as PostgreSQL does'
      if (e.name === 'regexp_replace')
        return 'regexp_replace() uses a different regular-expression dialect in PostgreSQL'
      for (const a of e.args) {
        const o = pushdownObstacle(a)
        if (o) return o
      }
      return null
    case 'like':
      if (e.insensitive) return 'ILIKE folds case by the database locale, not as the engine does'
      return pushdownObstacle(e.value) ?? pushdownObstacle(e.pattern)
    default:
      for (const v of Object.values(e)) {
        if (v && typeof v === 'object' && 'kind' in v) {
          const o = pushdownObstacle(v as Expr)
          if (o) return o
        }
        if (Array.isArray(v))
          for (const x of v) {
            const o = pushdownObstacle(x as Expr)
            if (o) return o
          }
      }
      return null
  }
}

export class SqlCompiler {
  readonly params: unknown[] = []
  private readonly checker: TypeChecker

  constructor(
    private readonly schemas: Schemas,
    /** The table alias of each side in the query. */
    private readonly alias: Record<Side, string>,
  ) {
    this.checker = new TypeChecker(schemas)
  }

  private bind(value: unknown, cast: string): string {
    this.params.push(value)
    return `$${this.params.length}::${cast}`
  }

  private column(side: Side, name: string): ColumnInfo {
    const col = this.schemas[side].find((c) => c.name === name)
    if (!col) throw new ConcordError('unknown_column', `${side}.${name} is not a column`, 400)
    return col
  }

  private isString(e: Expr): boolean {
    return this.checker.check(e).kind === 'string'
  }

  sql(e: Expr): string {
    const p = (x: Expr) => `(${this.sql(x)})`
    switch (e.kind) {
      case 'column': {
        this.column(e.side, e.name)
        return `${this.alias[e.side]}.${quoteIdent(e.name)}`
      }
      case 'number': {
        // an integer literal as int, so that date - 3 and date + 3 work as they do in the engine
        if (/e/i.test(e.text)) return this.bind(e.text, 'float8')
        if (/^\d+$/.test(e.text)) return this.bind(e.text, Number(e.text) < 2 ** 31 ? 'int' : 'bigint')
        return this.bind(e.text, 'numeric')
      }
      case 'string':
        return this.bind(e.value, 'text')
      case 'boolean':
        return e.value ? 'TRUE' : 'FALSE'
      case 'null':
        return 'NULL'
      case 'interval':
        return this.bind(e.text, 'interval')
      case 'not':
        return `NOT ${p(e.arg)}`
      case 'neg':
        return `-${p(e.arg)}`
      case 'is_null':
        return `${p(e.arg)} IS ${e.negated ? 'NOT ' : ''}NULL`
      case 'and':
      case 'or':
        return e.args.map(p).join(e.kind === 'and' ? ' AND ' : ' OR ')
      case 'compare': {
        const collate = e.op !== '=' && e.op !== '<>' && this.isString(e.left) ? ' COLLATE "C"' : ''
        return `${p(e.left)}${collate} ${e.op} ${p(e.right)}${collate}`
      }
      case 'between': {
        const collate = this.isString(e.value) ? ' COLLATE "C"' : ''
        return `${p(e.value)}${collate} ${e.negated ? 'NOT ' : ''}BETWEEN ${p(e.lo)}${collate} AND ${p(e.hi)}${collate}`
      }
      case 'in':
        return `${p(e.value)} ${e.negated ? 'NOT ' : ''}IN (${e.list.map((x) => this.sql(x)).join(', ')})`
      case 'like':
        return `${p(e.value)} ${e.negated ? 'NOT ' : ''}LIKE ${p(e.pattern)}`
      case 'concat':
        return `(${this.sql(e.left)})::text || (${this.sql(e.right)})::text`
      case 'arith': {
        const l = this.checker.check(e.left)
        const r = this.checker.check(e.right)
        // the engine divides as floats; date - date is a number of days in both
        if (e.op === '/' && isNumeric(l) && isNumeric(r))
          return `${p(e.left)}::float8 / NULLIF(${p(e.right)}::float8, 0)`
        if (e.op === '%' && isNumeric(l) && isNumeric(r)) return `${p(e.left)} % NULLIF(${p(e.right)}, 0)`
        return `${p(e.left)} ${e.op} ${p(e.right)}`
      }
      case 'cast':
        return `CAST(${this.sql(e.arg)} AS ${e.to === 'numeric' && e.scale !== undefined ? `numeric(38, ${e.scale})` : CASTS[e.to]})`
      case 'call':
        return this.call(e)
    }
  }

  private call(e: Extract<Expr, { kind: 'call' }>): string {
    const args = e.args.map((a) => this.sql(a))
    switch (e.name) {
      case 'tolerance_match':
        return `abs((${args[0]}) - (${args[1]})) <= (${args[2]})`
      case 'date_trunc': {
        const unit = e.args[0].kind === 'string' ? e.args[0].value.toLowerCase() : 'day'
        const value = this.checker.check(e.args[1])
        const truncated = `date_trunc(${this.bind(unit, 'text')}, ${args[1]})`
        return value.kind === 'date' ? `(${truncated})::date` : truncated
      }
      case 'round':
        if (this.checker.check(e.args[0]).kind === 'float')
          return `round((${args[0]})::numeric${args[1] ? `, ${args[1]}::int` : ''})::float8`
        return `round(${args[0]}${args[1] ? `, ${args[1]}::int` : ''})`
      case 'trim':
      case 'ltrim':
      case 'rtrim':
        return `${SQL_FUNCTIONS[e.name]}(${args[0]}, ' ')`
      case 'substring':
        return `substring(${args[0]} FROM (${args[1]})::int${args[2] ? ` FOR (${args[2]})::int` : ''})`
      case 'greatest':
      case 'least': {
        const collate = this.isString(e.args[0]) ? ' COLLATE "C"' : ''
        return `${e.name}(${args.map((a) => `(${a})${collate}`).join(', ')})`
      }
      default: {
        const fn = SQL_FUNCTIONS[e.name]
        if (!fn) throw new ConcordError('pushdown_unsupported', `${e.name}() cannot run in PostgreSQL`, 400)
        return `${fn}(${args.join(', ')})`
      }
    }
  }
}
