// A pass's `when` is a boolean predicate in a documented subset of PostgreSQL syntax over
// `l.` (left) and `r.` (right) columns. It is parsed by a real SQL parser (pgsql-ast-parser, as
// `SELECT 1 WHERE <predicate>`) and converted into Concord's own small AST, which keeps number
// literals as their exact text (the parser's JS floats would lose 0.1) and positions for errors.

import { type Expr as PgExpr, parse } from 'pgsql-ast-parser'

export interface Position {
  /** Offsets into the `when` text. */
  start: number
  end: number
}

export type Side = 'l' | 'r'
export type CompareOp = '=' | '<>' | '<' | '<=' | '>' | '>='
export type ArithOp = '+' | '-' | '*' | '/' | '%'

export type Expr =
  | { kind: 'column'; side: Side; name: string; pos: Position }
  | { kind: 'number'; text: string; pos: Position }
  | { kind: 'string'; value: string; pos: Position }
  | { kind: 'boolean'; value: boolean; pos: Position }
  | { kind: 'null'; pos: Position }
  | { kind: 'interval'; days: number; ms: number; text: string; pos: Position }
  | { kind: 'not'; arg: Expr; pos: Position }
  | { kind: 'neg'; arg: Expr; pos: Position }
  | { kind: 'is_null'; negated: boolean; arg: Expr; pos: Position }
  | { kind: 'and' | 'or'; args: Expr[]; pos: Position }
  | { kind: 'compare'; op: CompareOp; left: Expr; right: Expr; pos: Position }
  | { kind: 'arith'; op: ArithOp; left: Expr; right: Expr; pos: Position }
  | { kind: 'concat'; left: Expr; right: Expr; pos: Position }
  | { kind: 'between'; negated: boolean; value: Expr; lo: Expr; hi: Expr; pos: Position }
  | { kind: 'in'; negated: boolean; value: Expr; list: Expr[]; pos: Position }
  | { kind: 'like'; negated: boolean; insensitive: boolean; value: Expr; pattern: Expr; pos: Position }
  | { kind: 'call'; name: string; args: Expr[]; pos: Position }
  | { kind: 'cast'; arg: Expr; to: CastType; scale?: number; pos: Position }

export type CastType = 'text' | 'integer' | 'numeric' | 'float' | 'date' | 'timestamp' | 'boolean'

/** The functions a predicate may call, with their arity (min, max). */
export const FUNCTIONS: Record<string, [number, number]> = {
  abs: [1, 1],
  round: [1, 2],
  lower: [1, 1],
  upper: [1, 1],
  trim: [1, 1],
  ltrim: [1, 1],
  rtrim: [1, 1],
  length: [1, 1],
  substring: [2, 3],
  replace: [3, 3],
  regexp_replace: [3, 4],
  coalesce: [1, 8],
  date_trunc: [2, 2],
  tolerance_match: [3, 3],
  similarity: [2, 2],
  levenshtein: [2, 2],
  jaro_winkler: [2, 2],
  shares_token: [2, 3],
  greatest: [2, 8],
  least: [2, 8],
  // lookup('name', 'column', key values…[, as_of value]): a recipe's lookup table (types.ts checks the count)
  lookup: [3, 12],
}

const CASTS: Record<string, CastType> = {
  text: 'text',
  varchar: 'text',
  'character varying': 'text',
  int: 'integer',
  integer: 'integer',
  int4: 'integer',
  int8: 'integer',
  bigint: 'integer',
  numeric: 'numeric',
  decimal: 'numeric',
  float: 'float',
  float8: 'float',
  'double precision': 'float',
  real: 'float',
  date: 'date',
  timestamp: 'timestamp',
  timestamptz: 'timestamp',
  'timestamp with time zone': 'timestamp',
  'timestamp without time zone': 'timestamp',
  boolean: 'boolean',
  bool: 'boolean',
}

export class PredicateError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly pos?: Position,
    readonly suggestion?: string,
  ) {
    super(message)
  }
}

const PREFIX = 'SELECT 1 WHERE '

/**
 * Parses `when` into Concord's AST. `functions` admits calls beyond FUNCTIONS, for texts that are
 * not predicates (an aggregate's `SUM(...)`, src/language/aggregate.ts).
 */
export function parsePredicate(when: string, functions: Record<string, [number, number]> = {}): Expr {
  if (when.trim() === '') throw new PredicateError('empty_predicate', 'the predicate is empty')
  let where: PgExpr | undefined
  try {
    where = parsedWhere(when)
  } catch (err) {
    // the parser counts lines and columns in the text it was given, the prefix included: say where
    // in `when` (from 1), and what stands there
    const at = /line (\d+) col (\d+)/.exec((err as Error).message)
    let start: number | undefined
    if (at) {
      const lines = `${PREFIX}${when}`.split('\n')
      const before = lines.slice(0, Number(at[1]) - 1).reduce((n, line) => n + line.length + 1, 0)
      start = Math.min(when.length, Math.max(0, before + Number(at[2]) - 1 - PREFIX.length))
    }
    const near = start === undefined ? '' : when.slice(start).trim().split(/\s+/)[0]
    const message =
      start === undefined
        ? /end of input/i.test((err as Error).message)
          ? 'the predicate ends too early'
          : (err as Error).message.split('\n')[0]
        : `unexpected ${near ? `"${near}"` : 'end'} at character ${start + 1}`
    throw new PredicateError(
      'syntax_error',
      `cannot parse the predicate: ${message}`,
      start === undefined ? undefined : { start, end: start + 1 },
      'write a boolean condition such as l.ref = r.ref AND ABS(l.amount - r.amount) <= 0.01',
    )
  }
  if (!where) throw new PredicateError('syntax_error', 'the predicate is not a WHERE condition')
  return new Converter(when, functions).expr(where)
}

/**
 * The parser's tree of the WHERE clause of `when`, kept for the texts parsed last: a run parses
 * each pass's predicate several times (checking the recipe, planning, compiling), and the Earley
 * parser took 25 ms for the first parse of a 135-character predicate and 3–5 ms for each next one,
 * enough for V8 to compile the parser optimized as well (~40 ms of a compiler thread). The tree
 * is only read (Converter).
 */
function parsedWhere(when: string): PgExpr | undefined {
  let where = parsedTrees.get(when)
  if (where === undefined && !parsedTrees.has(when)) {
    const statements = parse(`${PREFIX}${when}`, { locationTracking: true })
    if (statements.length !== 1 || statements[0].type !== 'select') throw new Error('not a single predicate')
    where = (statements[0] as { where?: PgExpr }).where
    if (parsedTrees.size >= PARSED_TREES) parsedTrees.delete(parsedTrees.keys().next().value!)
    parsedTrees.set(when, where)
  }
  return where
}
const PARSED_TREES = 64
const parsedTrees = new Map<string, PgExpr | undefined>()

class Converter {
  constructor(
    private readonly source: string,
    private readonly extra: Record<string, [number, number]>,
  ) {}

  private pos(node: PgExpr): Position {
    const loc = (node as { _location?: { start: number; end: number } })._location
    if (!loc) return { start: 0, end: this.source.length }
    return { start: loc.start - PREFIX.length, end: loc.end - PREFIX.length }
  }

  private unsupported(node: PgExpr, what: string, suggestion?: string): never {
    throw new PredicateError(
      'unsupported_syntax',
      `${what} is not supported in a match predicate`,
      this.pos(node),
      suggestion,
    )
  }

  expr(node: PgExpr): Expr {
    const pos = this.pos(node)
    switch (node.type) {
      case 'ref': {
        const side = node.table?.name
        if (side !== 'l' && side !== 'r') {
          throw new PredicateError(
            'unqualified_column',
            side
              ? `"${side}.${node.name}": columns belong to l (left) or r (right)`
              : `column "${node.name}" needs a side: l.${node.name} or r.${node.name}`,
            pos,
            `write l.${node.name} or r.${node.name}`,
          )
        }
        if (node.name === '*') this.unsupported(node, '*')
        return { kind: 'column', side, name: node.name, pos }
      }
      case 'integer':
      case 'numeric':
        return { kind: 'number', text: this.source.slice(pos.start, pos.end).trim(), pos }
      case 'string':
        return { kind: 'string', value: node.value, pos }
      case 'boolean':
        return { kind: 'boolean', value: node.value, pos }
      case 'null':
        return { kind: 'null', pos }
      case 'unary':
        return this.unary(node, pos)
      case 'binary':
        return this.binary(node, pos)
      case 'ternary':
        return {
          kind: 'between',
          negated: node.op === 'NOT BETWEEN',
          value: this.expr(node.value),
          lo: this.expr(node.lo),
          hi: this.expr(node.hi),
          pos,
        }
      case 'call': {
        const name = node.function.name.toLowerCase()
        if (node.function.schema) this.unsupported(node, `function ${node.function.schema}.${name}`)
        const arity = FUNCTIONS[name] ?? this.extra[name]
        if (!arity) {
          throw new PredicateError(
            'unknown_function',
            `unknown function ${name}()`,
            pos,
            `available: ${Object.keys(FUNCTIONS).join(', ')}`,
          )
        }
        if (node.args.length < arity[0] || node.args.length > arity[1]) {
          throw new PredicateError(
            'wrong_arguments',
            `${name}() takes ${arity[0] === arity[1] ? arity[0] : `${arity[0]} to ${arity[1]}`} arguments, not ${node.args.length}`,
            pos,
          )
        }
        if (node.distinct || node.orderBy || node.filter || node.over)
          this.unsupported(node, `aggregate syntax in ${name}()`)
        return { kind: 'call', name, args: node.args.map((a) => this.expr(a)), pos }
      }
      case 'substring': {
        const args = [this.expr(node.value)]
        args.push(node.from ? this.expr(node.from) : { kind: 'number', text: '1', pos })
        if (node.for) args.push(this.expr(node.for))
        return { kind: 'call', name: 'substring', args, pos }
      }
      case 'cast':
        return this.cast(node, pos)
      case 'list':
        this.unsupported(node, 'a bare list', 'use a list only after IN')
        break
      case 'keyword':
        this.unsupported(node, node.keyword)
        break
      default:
        this.unsupported(node, `${node.type} expression`)
    }
  }

  private unary(node: Extract<PgExpr, { type: 'unary' }>, pos: Position): Expr {
    const arg = this.expr(node.operand)
    switch (node.op) {
      case 'NOT':
        return { kind: 'not', arg, pos }
      case '-':
        return { kind: 'neg', arg, pos }
      case '+':
        return arg
      case 'IS NULL':
        return { kind: 'is_null', negated: false, arg, pos }
      case 'IS NOT NULL':
        return { kind: 'is_null', negated: true, arg, pos }
      case 'IS TRUE':
        return { kind: 'compare', op: '=', left: arg, right: { kind: 'boolean', value: true, pos }, pos }
      case 'IS FALSE':
        return { kind: 'compare', op: '=', left: arg, right: { kind: 'boolean', value: false, pos }, pos }
      default:
        this.unsupported(node as PgExpr, node.op)
    }
  }

  private binary(node: Extract<PgExpr, { type: 'binary' }>, pos: Position): Expr {
    const op = node.op
    if (op === 'AND' || op === 'OR') {
      const kind = op === 'AND' ? 'and' : 'or'
      const args: Expr[] = []
      for (const side of [node.left, node.right]) {
        const e = this.expr(side)
        if (e.kind === kind) args.push(...e.args)
        else args.push(e)
      }
      return { kind, args, pos }
    }
    if (op === 'IN' || op === 'NOT IN') {
      if (node.right.type !== 'list') this.unsupported(node.right, 'IN with a subquery')
      return {
        kind: 'in',
        negated: op === 'NOT IN',
        value: this.expr(node.left),
        list: node.right.expressions.map((e) => this.expr(e)),
        pos,
      }
    }
    if (op === 'LIKE' || op === 'NOT LIKE' || op === 'ILIKE' || op === 'NOT ILIKE') {
      return {
        kind: 'like',
        negated: op.startsWith('NOT'),
        insensitive: op.endsWith('ILIKE'),
        value: this.expr(node.left),
        pattern: this.expr(node.right),
        pos,
      }
    }
    const left = this.expr(node.left)
    const right = this.expr(node.right)
    switch (op) {
      case '=':
      case '<':
      case '<=':
      case '>':
      case '>=':
        return { kind: 'compare', op, left, right, pos }
      case '!=':
        return { kind: 'compare', op: '<>', left, right, pos }
      case '+':
      case '-':
      case '*':
      case '/':
      case '%':
        return { kind: 'arith', op, left, right, pos }
      case '||':
        return { kind: 'concat', left, right, pos }
      default:
        this.unsupported(node, `operator ${op}`)
    }
  }

  private cast(node: Extract<PgExpr, { type: 'cast' }>, pos: Position): Expr {
    const to = node.to as { name?: string; config?: number[]; kind?: string }
    const name = (to.name ?? '').toLowerCase()
    if (name === 'interval') {
      if (node.operand.type !== 'string') this.unsupported(node, 'a computed interval', "write INTERVAL '3 days'")
      return interval(node.operand.value, pos)
    }
    const type = CASTS[name]
    if (!type || to.kind === 'array')
      this.unsupported(
        node,
        `a cast to ${name || 'that type'}`,
        `cast to one of ${[...new Set(Object.values(CASTS))].join(', ')}`,
      )
    const out: Expr = { kind: 'cast', arg: this.expr(node.operand), to: type, pos }
    if (type === 'numeric' && to.config?.length === 2) out.scale = to.config[1]
    return out
  }
}

const UNIT_MS: Record<string, number> = { second: 1000, minute: 60_000, hour: 3_600_000 }

/** "3 days", "1 day 12 hours", "2 weeks": a fixed length (months are not: they vary). */
function interval(text: string, pos: Position): Expr {
  const parts = text.trim().toLowerCase().split(/\s+/)
  let days = 0
  let ms = 0
  if (parts.length % 2 !== 0)
    throw new PredicateError('invalid_interval', `cannot read the interval '${text}'`, pos, "write INTERVAL '3 days'")
  for (let i = 0; i < parts.length; i += 2) {
    const n = Number(parts[i])
    const unit = parts[i + 1].replace(/s$/, '')
    if (!Number.isFinite(n)) throw new PredicateError('invalid_interval', `cannot read the interval '${text}'`, pos)
    if (unit === 'day') days += n
    else if (unit === 'week') days += 7 * n
    else if (UNIT_MS[unit]) ms += n * UNIT_MS[unit]
    else
      throw new PredicateError(
        'invalid_interval',
        `interval unit "${parts[i + 1]}" is not supported`,
        pos,
        'use seconds, minutes, hours, days or weeks',
      )
  }
  return { kind: 'interval', days, ms, text, pos }
}
