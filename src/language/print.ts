// Prints a predicate AST back as SQL text: explain output for derived expressions (a tolerance
// band's bounds), and the starting point of SQL pushdown. Composite operands are parenthesized,
// so the text means exactly what the tree means.

import type { Expr } from './predicate.js'

const SIMPLE_NAME = /^[a-z_][a-z0-9_]*$/

export function quoteIdent(name: string): string {
  return SIMPLE_NAME.test(name) ? name : `"${name.replace(/"/g, '""')}"`
}

export function quoteString(s: string): string {
  return `'${s.replace(/'/g, "''")}'`
}

const CAST_NAMES = {
  text: 'text',
  integer: 'bigint',
  numeric: 'numeric',
  float: 'double precision',
  date: 'date',
  timestamp: 'timestamp',
  boolean: 'boolean',
} as const

export function printExpr(e: Expr): string {
  const p = (x: Expr) => (atomic(x) ? printExpr(x) : `(${printExpr(x)})`)
  switch (e.kind) {
    case 'column':
      return `${e.side}.${quoteIdent(e.name)}`
    case 'number':
      return e.text
    case 'string':
      return quoteString(e.value)
    case 'boolean':
      return e.value ? 'TRUE' : 'FALSE'
    case 'null':
      return 'NULL'
    case 'interval':
      return `INTERVAL ${quoteString(e.text)}`
    case 'not':
      return `NOT ${p(e.arg)}`
    case 'neg':
      return `-${p(e.arg)}`
    case 'is_null':
      return `${p(e.arg)} IS ${e.negated ? 'NOT ' : ''}NULL`
    case 'and':
    case 'or':
      return e.args.map(p).join(e.kind === 'and' ? ' AND ' : ' OR ')
    case 'compare':
      return `${p(e.left)} ${e.op} ${p(e.right)}`
    case 'arith':
      return `${p(e.left)} ${e.op} ${p(e.right)}`
    case 'concat':
      return `${p(e.left)} || ${p(e.right)}`
    case 'between':
      return `${p(e.value)} ${e.negated ? 'NOT ' : ''}BETWEEN ${p(e.lo)} AND ${p(e.hi)}`
    case 'in':
      return `${p(e.value)} ${e.negated ? 'NOT ' : ''}IN (${e.list.map(printExpr).join(', ')})`
    case 'like':
      return `${p(e.value)} ${e.negated ? 'NOT ' : ''}${e.insensitive ? 'ILIKE' : 'LIKE'} ${p(e.pattern)}`
    case 'call':
      return `${e.name.toUpperCase()}(${e.args.map(printExpr).join(', ')})`
    case 'cast':
      return `CAST(${printExpr(e.arg)} AS ${e.to === 'numeric' && e.scale !== undefined ? `numeric(38, ${e.scale})` : CAST_NAMES[e.to]})`
  }
}

function atomic(e: Expr): boolean {
  return (
    e.kind === 'column' ||
    e.kind === 'number' ||
    e.kind === 'string' ||
    e.kind === 'boolean' ||
    e.kind === 'null' ||
    e.kind === 'interval' ||
    e.kind === 'call' ||
    e.kind === 'cast'
  )
}
