// The comparisons of a probabilistic pass: each turns a candidate pair into a level, best first,
// "else" last, or into "no evidence" when a value is missing (a NULL weighs nothing either way).
//   text      similarity levels of free text ("jaro_winkler >= 0.92", "token_set >= 0.8", "exact")
//   exact     equality of codes or categories (with tf: a rare value weighs more)
//   relative  |a - b| / max(|a|, |b|) at most each level's share (0 = equal)
//   absolute  |a - b| at most each level's amount, decimal-exact
//   days      the lag right minus left in days: within each level's |lag| or [from, to]

import type { Expr } from '../../../language/predicate.js'
import { parsePredicate } from '../../../language/predicate.js'
import { isNumeric, type ExprType, type Schemas, TypeChecker } from '../../../language/types.js'
import { COMPARISON_KINDS, type ComparisonKind, type RecipeComparison } from '../../../recipes/schema.js'
import type { Table } from '../../data/table.js'
import type { ExprCompiler } from '../../plan/compile.js'
import { TEXT_MEASURES, type TextMeasure, TextMeasures } from '../text/measures.js'
import { normalizeText, prepareText, Vocabulary } from '../text/prepared.js'
import { exactDecimal } from '../../../language/decimal.js'

/** The level of a pair that has a NULL (or empty text) on either side: no evidence. */
export const NO_EVIDENCE = 255

const DAY_MS = 86_400_000

export interface Comparison {
  name: string
  kind: ComparisonKind
  /** One label per level, best first; the last is "else". */
  labels: string[]
  /** The level of left row i and right row j (rows of the tables), or NO_EVIDENCE. */
  level(i: number, j: number): number
  /**
   * Term-frequency adjustment of an agreement (exact comparisons with tf): how often the agreed
   * value occurs among all records of both sides, as a share; undefined otherwise.
   */
  valueShare?: (i: number) => number
  /** The left and right expressions, for explain and for picking amount and date deltas. */
  left: Expr
  right: Expr
}

export interface ComparisonIssue {
  code: string
  message: string
  suggestion?: string
}

const TEXT_DEFAULT = ['exact', 'jaro_winkler >= 0.92', 'jaro_winkler >= 0.8', 'token_set >= 0.5']
const DEFAULT_LEVELS: Record<ComparisonKind, (string | number | [number, number])[]> = {
  text: TEXT_DEFAULT,
  exact: [],
  relative: [0, 0.01, 0.05, 0.1],
  absolute: [0],
  days: [0, 1, 3, 7, 14],
}

export function comparisonKind(spec: RecipeComparison): ComparisonKind | undefined {
  const kinds = COMPARISON_KINDS.filter((k) => spec[k] !== undefined)
  return kinds.length === 1 ? kinds[0] : undefined
}

interface TextLevel {
  label: string
  measure: TextMeasure
  /** The least value of the level (exact: 1). */
  min: number
  strict: boolean
}

function textLevel(level: string | number | [number, number]): TextLevel | string {
  if (typeof level !== 'string')
    return `a text level is written like "jaro_winkler >= 0.9", not ${JSON.stringify(level)}`
  const text = level.trim()
  if (/^exact$/i.test(text)) return { label: 'exact', measure: 'exact', min: 1, strict: false }
  const m = /^([a-z_]+)\s*(>=|>)\s*(\d+(?:\.\d+)?)$/i.exec(text)
  const measure = m?.[1].toLowerCase() as TextMeasure | undefined
  if (!m || !measure || !TEXT_MEASURES.includes(measure))
    return `"${level}" is not a text level: write <measure> >= <0..1> with a measure of ${TEXT_MEASURES.join(', ')}`
  const min = Number(m[3])
  if (min > 1) return `"${level}": similarities are between 0 and 1`
  return { label: `${measure} ${m[2]} ${m[3]}`, measure, min, strict: m[2] === '>' }
}

/** What is wrong with a comparison against the two schemas (empty when nothing). */
export function comparisonIssues(spec: RecipeComparison, schemas: Schemas): ComparisonIssue[] {
  const kind = comparisonKind(spec)
  if (!kind)
    return [
      {
        code: 'invalid_comparison',
        message: `comparison "${spec.name}" must name exactly one of ${COMPARISON_KINDS.join(', ')}`,
        suggestion:
          '{ "name": "memo", "text": ["l.memo", "r.memo"], "levels": ["jaro_winkler >= 0.92", "token_set >= 0.6"] }',
      },
    ]
  const out: ComparisonIssue[] = []
  const pair = spec[kind]!
  const types: ExprType[] = []
  for (const [n, text] of pair.entries()) {
    const side = n === 0 ? 'l' : 'r'
    let expr: Expr
    try {
      expr = parsePredicate(text)
    } catch (err) {
      out.push({ code: 'syntax_error', message: `comparison "${spec.name}": ${(err as Error).message}` })
      continue
    }
    const checker = new TypeChecker(schemas)
    const type = checker.check(expr)
    for (const i of checker.issues)
      out.push({ code: i.code, message: `comparison "${spec.name}": ${i.message}`, suggestion: i.suggestion })
    const sides = referencedSides(expr)
    if (sides.size !== 1 || !sides.has(side))
      out.push({
        code: 'invalid_comparison',
        message: `comparison "${spec.name}": the ${n === 0 ? 'first' : 'second'} expression must read ${side}. columns only`,
        suggestion: `["l.x", "r.y"]`,
      })
    types.push(type)
  }
  if (out.length) return out
  const want: Record<ComparisonKind, [(t: ExprType) => boolean, string]> = {
    text: [(t) => t.kind === 'string', 'text'],
    exact: [() => true, 'values'],
    relative: [isNumeric, 'numbers'],
    absolute: [isNumeric, 'numbers'],
    days: [(t) => t.kind === 'date' || t.kind === 'timestamp', 'dates or timestamps'],
  }
  const [ok, what] = want[kind]
  for (const t of types)
    if (!ok(t))
      out.push({
        code: 'type_mismatch',
        message: `comparison "${spec.name}" (${kind}) compares ${what}, not ${t.kind}`,
      })
  if (kind === 'exact' && types.length === 2 && !comparableKinds(types[0], types[1]))
    out.push({
      code: 'type_mismatch',
      message: `comparison "${spec.name}" cannot compare ${types[0].kind} with ${types[1].kind}`,
    })
  for (const problem of levelProblems(kind, spec.levels))
    out.push({ code: 'invalid_comparison', message: `comparison "${spec.name}": ${problem}` })
  return out
}

function comparableKinds(a: ExprType, b: ExprType): boolean {
  if (a.kind === b.kind) return true
  if (isNumeric(a) && isNumeric(b)) return true
  return (a.kind === 'date' || a.kind === 'timestamp') && (b.kind === 'date' || b.kind === 'timestamp')
}

function levelProblems(kind: ComparisonKind, levels: RecipeComparison['levels']): string[] {
  if (levels === undefined) return []
  const out: string[] = []
  if (kind === 'exact' && levels.length) out.push('an exact comparison has one level (equal): leave out "levels"')
  if (kind === 'text') {
    for (const l of levels) {
      const t = textLevel(l)
      if (typeof t === 'string') out.push(t)
    }
  }
  if (kind === 'relative' || kind === 'absolute') {
    let last = -1
    for (const l of levels) {
      if (typeof l !== 'number' || l < 0)
        out.push(`${kind} levels are differences of at least 0, not ${JSON.stringify(l)}`)
      else if (l <= last) out.push(`${kind} levels go from the smallest difference up: ${levels.join(', ')}`)
      else last = l
    }
  }
  if (kind === 'days') {
    for (const l of levels) {
      const ok =
        (typeof l === 'number' && l >= 0) ||
        (Array.isArray(l) && l.length === 2 && typeof l[0] === 'number' && typeof l[1] === 'number' && l[0] <= l[1])
      if (!ok)
        out.push(`a days level is a largest |lag| (>= 0) or a [from, to] range of lags, not ${JSON.stringify(l)}`)
    }
  }
  return out
}

function referencedSides(e: Expr, out = new Set<string>()): Set<string> {
  if (e.kind === 'column') out.add(e.side)
  for (const v of Object.values(e)) {
    if (Array.isArray(v))
      for (const x of v) if (x && typeof x === 'object' && 'kind' in x) referencedSides(x as Expr, out)
    if (v && typeof v === 'object' && 'kind' in v && 'pos' in v) referencedSides(v as Expr, out)
  }
  return out
}

/** The level labels of a comparison (best first, "else" last), without data. */
export function comparisonLabels(spec: RecipeComparison): string[] {
  const kind = comparisonKind(spec)!
  const levels = spec.levels ?? DEFAULT_LEVELS[kind]
  const labels = levels.map((l) => {
    if (kind === 'text') {
      const t = textLevel(l)
      return typeof t === 'string' ? String(l) : t.label
    }
    if (kind === 'relative') return l === 0 ? 'equal' : `within ${+((l as number) * 100).toFixed(6)}%`
    if (kind === 'absolute') return l === 0 ? 'equal' : `within ${l}`
    if (kind === 'days') {
      const days = (n: number) => `${n} day${n === 1 ? '' : 's'}`
      return Array.isArray(l) ? (l[0] === l[1] ? days(l[0]) : `${l[0]}..${days(l[1])}`) : `within ${days(l as number)}`
    }
    return String(l)
  })
  if (kind === 'exact') labels.push('equal')
  labels.push('else')
  return labels
}

/**
 * Prepares a comparison over the tables (compiled readers, prepared text). `compiler` compiles
 * expressions over the same tables.
 */
export function prepareComparison(
  spec: RecipeComparison,
  compiler: ExprCompiler,
  tables: { l: Table; r: Table },
): Comparison {
  const kind = comparisonKind(spec)
  if (!kind) throw new Error(comparisonIssues(spec, { l: [], r: [] })[0].message)
  const [lt, rt] = spec[kind]!
  const left = parsePredicate(lt)
  const right = parsePredicate(rt)
  const labels = comparisonLabels(spec)
  const base = { name: spec.name, kind, labels, left, right }
  const levels = spec.levels ?? DEFAULT_LEVELS[kind]
  switch (kind) {
    case 'text':
      return {
        ...base,
        level: textLevels(
          levels.map((l) => textLevel(l) as TextLevel),
          left,
          right,
          compiler,
          tables,
          spec.tf !== false,
        ),
      }
    case 'exact':
      return exactComparison(base, compiler, tables, spec.tf === true)
    case 'relative':
    case 'absolute':
      return { ...base, level: numberLevels(kind, levels as number[], left, right, compiler) }
    case 'days':
      return { ...base, level: dayLevels(levels as (number | [number, number])[], left, right, compiler) }
  }
}

function values<T>(compiler: ExprCompiler, e: Expr, side: 'l' | 'r', n: number): (T | null)[] {
  const read = compiler.build<(row: number) => T | null>(side === 'l' ? 'i' : 'j', compiler.compile(e).code)
  const out = new Array<T | null>(n)
  for (let r = 0; r < n; r++) out[r] = read(r)
  return out
}

function textLevels(
  levels: TextLevel[],
  left: Expr,
  right: Expr,
  compiler: ExprCompiler,
  tables: { l: Table; r: Table },
  tf: boolean,
): (i: number, j: number) => number {
  const vocabulary = new Vocabulary()
  const trigrams = levels.some((l) => l.measure === 'trigram') ? new Map<number | string, number>() : undefined
  const l = prepareText(values<string>(compiler, left, 'l', tables.l.length), vocabulary, { trigrams })
  const r = prepareText(values<string>(compiler, right, 'r', tables.r.length), vocabulary, { trigrams })
  const measures = new TextMeasures(l, r, vocabulary, tf)
  // each measure computed at most once per pair, in the order the levels need them
  const slot = levels.map((lv) => TEXT_MEASURES.indexOf(lv.measure))
  const seen = new Float64Array(TEXT_MEASURES.length)
  const stamp = new Int32Array(TEXT_MEASURES.length)
  let call = 0
  const last = levels.length
  return (i, j) => {
    if (l.empty[i] === 1 || r.empty[j] === 1) return NO_EVIDENCE
    call++
    for (let k = 0; k < last; k++) {
      const lv = levels[k]
      const s = slot[k]
      if (stamp[s] !== call) {
        stamp[s] = call
        seen[s] = measures.measure(lv.measure, i, j)
      }
      const v = seen[s]
      if (lv.strict ? v > lv.min : v >= lv.min) return k
    }
    return last
  }
}

function exactComparison(
  base: Omit<Comparison, 'level'>,
  compiler: ExprCompiler,
  tables: { l: Table; r: Table },
  tf: boolean,
): Comparison {
  const [lc, rc, common] = compiler.operands(base.left, base.right)
  const read = (code: string, side: 'l' | 'r', n: number) => {
    const f = compiler.build<(row: number) => unknown>(side === 'l' ? 'i' : 'j', code)
    const out = new Array<unknown>(n)
    for (let row = 0; row < n; row++) {
      const v = f(row)
      out[row] = v === null ? null : common.kind === 'string' ? normalizeText(v as string) || null : v
    }
    return out
  }
  // every distinct value gets an id (shared by both sides), counted for the term frequencies
  const ids = new Map<unknown, number>()
  const counts: number[] = []
  const idsOf = (vs: unknown[]) => {
    const out = new Int32Array(vs.length).fill(-1)
    vs.forEach((v, row) => {
      if (v === null) return
      let id = ids.get(v)
      if (id === undefined) {
        id = counts.length
        ids.set(v, id)
        counts.push(0)
      }
      counts[id]++
      out[row] = id
    })
    return out
  }
  const li = idsOf(read(lc.code, 'l', tables.l.length))
  const ri = idsOf(read(rc.code, 'r', tables.r.length))
  const total = Math.max(1, tables.l.length + tables.r.length)
  return {
    ...base,
    level: (i, j) => (li[i] < 0 || ri[j] < 0 ? NO_EVIDENCE : li[i] === ri[j] ? 0 : 1),
    valueShare: tf ? (i) => Math.max(counts[li[i]] ?? 1, 1) / total : undefined,
  }
}

function numberLevels(
  kind: 'relative' | 'absolute',
  levels: number[],
  left: Expr,
  right: Expr,
  compiler: ExprCompiler,
): (i: number, j: number) => number {
  const [lc, rc, common] = compiler.operands(left, right)
  const a = compiler.build<(row: number) => number | null>('i', lc.code)
  const b = compiler.build<(row: number) => number | null>('j', rc.code)
  const last = levels.length
  if (kind === 'absolute') {
    // decimal-exact: the levels in the operands' units
    const scale = common.kind === 'decimal' ? (common.scale ?? 0) : 0
    const bounds = common.kind === 'float' ? levels : levels.map((t) => unitsBelow(t, scale))
    return (i, j) => {
      const x = a(i)
      const y = b(j)
      if (x === null || y === null) return NO_EVIDENCE
      const d = Math.abs(x - y)
      for (let k = 0; k < last; k++) if (d <= bounds[k]) return k
      return last
    }
  }
  return (i, j) => {
    const x = a(i)
    const y = b(j)
    if (x === null || y === null) return NO_EVIDENCE
    const d = Math.abs(x - y)
    // a hair of slack so that a share written as 0.01 is not lost to the division's rounding
    const share = d === 0 ? 0 : d / Math.max(Math.abs(x), Math.abs(y))
    for (let k = 0; k < last; k++) if (share <= levels[k] * (1 + 1e-12)) return k
    return last
  }
}

/** A level in units at `scale`, rounded down: a level finer than the scale allows no more. */
function unitsBelow(level: number, scale: number): number {
  const d = exactDecimal(String(level))
  if (!d) return level * 10 ** scale
  const shift = BigInt(scale - d.scale)
  return Number(shift >= 0n ? d.units * 10n ** shift : d.units / 10n ** -shift)
}

function dayLevels(
  levels: (number | [number, number])[],
  left: Expr,
  right: Expr,
  compiler: ExprCompiler,
): (i: number, j: number) => number {
  const [lc, rc, common] = compiler.operands(left, right)
  const a = compiler.build<(row: number) => number | null>('i', lc.code)
  const b = compiler.build<(row: number) => number | null>('j', rc.code)
  const unit = common.kind === 'timestamp' ? DAY_MS : 1
  const lo = levels.map((l) => (Array.isArray(l) ? l[0] : -l))
  const hi = levels.map((l) => (Array.isArray(l) ? l[1] : l))
  const last = levels.length
  return (i, j) => {
    const x = a(i)
    const y = b(j)
    if (x === null || y === null) return NO_EVIDENCE
    const lag = (y - x) / unit
    for (let k = 0; k < last; k++) if (lag >= lo[k] && lag <= hi[k]) return k
    return last
  }
}
