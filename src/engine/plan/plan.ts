// The planner: a pass's predicate, split at its top-level ANDs, becomes
//   hash keys  equalities between an l-only and an r-only expression (UPPER(TRIM(l.ref)) = r.ref)
//   bands      when there is no key: every range between one plain column of one side and
//              expressions of the other (r.date BETWEEN l.date - 3 AND l.date, ABS(l.a - r.b) <= 0.01,
//              ABS(l.a - r.b) <= 0.1 * ABS(l.a), r.b BETWEEN l.a * 0.9 AND l.a * 1.1), one option per
//              column; the run joins on the option with the fewest estimated pairs on the data
//              (match/band-choice.ts)
//   residuals  every other conjunct, checked on candidate pairs
// Conjuncts used for a band are also kept as residuals, so a band only prunes and the answer
// never depends on how candidates were found. Each conjunct has a cost (cost.ts): candidate
// checks run the cheap ones first.

import type { CompareOp, Expr, Side } from '../../language/predicate.js'
import { conjunctCost } from './cost.js'

export interface Conjunct {
  /** Position among the pass's conjuncts, as written. */
  index: number
  expr: Expr
  /** The conjunct's text in the pass's `when`, for explain and evidence. */
  text: string
  /** Rough cost of checking it on one pair (cost.ts): similarity() is dear, a comparison cheap. */
  cost: number
}

export interface KeyPair {
  left: Expr
  right: Expr
  text: string
  /** The conjunct this equality is. */
  conjunct: number
}

export interface Band {
  /** The plain column that is sorted and searched; the bounds read only the other (probe) side. */
  side: Side
  column: string
  /** Bounds, expressions over the other side; a missing bound is open. */
  lo?: Expr
  hi?: Expr
  loStrict: boolean
  hiStrict: boolean
  texts: string[]
}

export interface PassPlan {
  conjuncts: Conjunct[]
  keys: KeyPair[]
  /** Band options of a pass without keys, one per column, in the order written. */
  bands: Band[]
  residuals: Conjunct[]
  /** Pairs of columns compared in the predicate, for deltas and scores. */
  amount?: { l: string; r: string }
  date?: { l: string; r: string }
  similarity?: SimilarityPair
}

/**
 * Strings the pass compares loosely, for scores: the arguments of its first `similarity()` /
 * `levenshtein()` call (expressions, such as a full name built from two columns), or else the
 * first l/r string column pair of a conjunct that is not a hash key (`LIKE`, `<>`, ...). `l`/`r`
 * name a column of each side read by them, for what needs one column per side.
 */
export interface SimilarityPair {
  l: string
  r: string
  left?: Expr
  right?: Expr
  /** The `similarity(left, right)` call itself: its value, computed by a candidate check, is kept for the score. */
  call?: Expr
}

export function sidesOf(e: Expr, out: Set<Side> = new Set()): Set<Side> {
  switch (e.kind) {
    case 'column':
      out.add(e.side)
      break
    case 'not':
    case 'neg':
    case 'is_null':
    case 'cast':
      sidesOf(e.arg, out)
      break
    case 'and':
    case 'or':
      for (const a of e.args) sidesOf(a, out)
      break
    case 'compare':
    case 'arith':
    case 'concat':
      sidesOf(e.left, out)
      sidesOf(e.right, out)
      break
    case 'between':
      sidesOf(e.value, out)
      sidesOf(e.lo, out)
      sidesOf(e.hi, out)
      break
    case 'in':
      sidesOf(e.value, out)
      for (const a of e.list) sidesOf(a, out)
      break
    case 'like':
      sidesOf(e.value, out)
      sidesOf(e.pattern, out)
      break
    case 'call':
      for (const a of e.args) sidesOf(a, out)
      break
  }
  return out
}

const only = (e: Expr, side: Side) => {
  const s = sidesOf(e)
  return s.size === 1 && s.has(side)
}

export function planPass(
  root: Expr,
  when: string,
  types: (side: Side, column: string) => string | undefined,
): PassPlan {
  const conjunctExprs = root.kind === 'and' ? root.args : [root]
  const conjuncts = conjunctExprs.map((expr, index) => ({
    index,
    expr,
    text: when.slice(expr.pos.start, expr.pos.end).trim() || when,
    cost: conjunctCost(expr),
  }))
  const keys: KeyPair[] = []
  const rest: Conjunct[] = []
  for (const c of conjuncts) {
    const e = c.expr
    if (e.kind === 'compare' && e.op === '=') {
      if (only(e.left, 'l') && only(e.right, 'r')) {
        keys.push({ left: e.left, right: e.right, text: c.text, conjunct: c.index })
        continue
      }
      if (only(e.left, 'r') && only(e.right, 'l')) {
        keys.push({ left: e.right, right: e.left, text: c.text, conjunct: c.index })
        continue
      }
    }
    rest.push(c)
  }
  const plan: PassPlan = { conjuncts, keys, bands: keys.length === 0 ? bandOptions(rest) : [], residuals: rest }
  describePairs(conjuncts, plan, types)
  return plan
}

interface RangeBound {
  side: Side
  column: string
  lo?: Expr
  hi?: Expr
  loStrict: boolean
  hiStrict: boolean
  text: string
}

/** Ranges on a plain column of one side whose bounds use only the other side. */
function rangesOf(c: Conjunct): RangeBound[] {
  const e = c.expr
  const out: RangeBound[] = []
  const plain = (x: Expr): x is Extract<Expr, { kind: 'column' }> => x.kind === 'column'
  const other = (s: Side): Side => (s === 'l' ? 'r' : 'l')
  if (e.kind === 'between' && !e.negated && plain(e.value)) {
    const o = other(e.value.side)
    if (only(e.lo, o) && only(e.hi, o)) {
      out.push({
        side: e.value.side,
        column: e.value.name,
        lo: e.lo,
        hi: e.hi,
        loStrict: false,
        hiStrict: false,
        text: c.text,
      })
    }
  }
  if (e.kind === 'compare' && e.op !== '=' && e.op !== '<>') {
    const pairs: [Expr, CompareOp, Expr][] = [
      [e.left, e.op, e.right],
      [e.right, flip(e.op), e.left],
    ]
    for (const [col, op, bound] of pairs) {
      if (!plain(col) || !only(bound, other(col.side))) continue
      const strict = op === '<' || op === '>'
      if (op === '>' || op === '>=')
        out.push({ side: col.side, column: col.name, lo: bound, loStrict: strict, hiStrict: false, text: c.text })
      else out.push({ side: col.side, column: col.name, hi: bound, hiStrict: strict, loStrict: false, text: c.text })
    }
    // ABS(a - b) <= t (or t >= ABS(a - b)), a and b on opposite sides: b within [a - t, a + t]
    for (const [abs, op, t] of pairs) {
      if (abs.kind !== 'call' || abs.name !== 'abs' || (op !== '<=' && op !== '<')) continue
      const diff = abs.args[0]
      if (diff.kind === 'arith' && diff.op === '-')
        out.push(...toleranceBand(diff.left, diff.right, t, op === '<', c.text))
    }
  }
  if (e.kind === 'call' && e.name === 'tolerance_match') {
    out.push(...toleranceBand(e.args[0], e.args[1], e.args[2], false, c.text))
  }
  return out
}

/**
 * `|a - b| <= t` as a band: the plain column of one side within [center - t, center + t], where
 * the center and the tolerance read only the other side (the probe). The tolerance may be a
 * constant or relative to the probe's own value (`0.1 * ABS(l.a)`): then only the other side's
 * column can be sorted. A negative or NULL tolerance gives an empty range, as the predicate
 * accepts no pair then.
 */
function toleranceBand(a: Expr, b: Expr, t: Expr, strict: boolean, text: string): RangeBound[] {
  const pos = t.pos
  const tSides = sidesOf(t)
  if (tSides.size > 1) return []
  for (const [col, center] of [
    [b, a],
    [a, b],
  ] as const) {
    if (col.kind !== 'column') continue
    const probe = col.side === 'l' ? 'r' : 'l'
    if (only(center, probe) && (tSides.size === 0 || tSides.has(probe))) {
      return [
        {
          side: col.side,
          column: col.name,
          lo: { kind: 'arith', op: '-', left: center, right: t, pos },
          hi: { kind: 'arith', op: '+', left: center, right: t, pos },
          loStrict: strict,
          hiStrict: strict,
          text,
        },
      ]
    }
  }
  return []
}

function flip(op: CompareOp): CompareOp {
  return op === '<' ? '>' : op === '<=' ? '>=' : op === '>' ? '<' : op === '>=' ? '<=' : op
}

/** Every column with a range, in the order written: a column's first lower and first upper bound. */
function bandOptions(conjuncts: Conjunct[]): Band[] {
  const byColumn = new Map<string, Band>()
  for (const c of conjuncts) {
    for (const r of rangesOf(c)) {
      const key = `${r.side}.${r.column}`
      const band = byColumn.get(key) ?? { side: r.side, column: r.column, loStrict: false, hiStrict: false, texts: [] }
      if (r.lo && !band.lo) {
        band.lo = r.lo
        band.loStrict = r.loStrict
      }
      if (r.hi && !band.hi) {
        band.hi = r.hi
        band.hiStrict = r.hiStrict
      }
      if (!band.texts.includes(r.text)) band.texts.push(r.text)
      byColumn.set(key, band)
    }
  }
  return [...byColumn.values()]
}

/**
 * The band to use without looking at data (the PostgreSQL engine's evidence join): the first
 * closed one written, else the first.
 */
export function firstClosedBand(plan: PassPlan): Band | undefined {
  return plan.bands.find((b) => b.lo && b.hi) ?? plan.bands[0]
}

/** Finds which l/r column pairs the predicate compares, by type: amounts, dates, names. */
function describePairs(
  conjuncts: Conjunct[],
  plan: PassPlan,
  types: (side: Side, column: string) => string | undefined,
): void {
  const keyConjuncts = new Set(plan.keys.map((k) => k.conjunct))
  for (const c of conjuncts) {
    const call = similarityCall(c.expr)
    if (call && !plan.similarity) plan.similarity = call
  }
  for (const c of conjuncts) {
    const cols: { side: Side; name: string }[] = []
    collectColumns(c.expr, cols)
    const left = cols.filter((x) => x.side === 'l')
    const right = cols.filter((x) => x.side === 'r')
    for (const l of left) {
      for (const r of right) {
        const lt = types('l', l.name)
        const rt = types('r', r.name)
        const numeric = (t?: string) => t === 'decimal' || t === 'integer' || t === 'float'
        const temporal = (t?: string) => t === 'date' || t === 'timestamp'
        if (!plan.amount && numeric(lt) && numeric(rt) && (lt === 'decimal' || rt === 'decimal'))
          plan.amount = { l: l.name, r: r.name }
        if (!plan.date && temporal(lt) && temporal(rt)) plan.date = { l: l.name, r: r.name }
        // an equality key holds on every candidate: it cannot tell them apart
        if (!plan.similarity && lt === 'string' && rt === 'string' && !keyConjuncts.has(c.index))
          plan.similarity = { l: l.name, r: r.name }
      }
    }
  }
}

/** The first similarity()/levenshtein() call comparing an l-only with an r-only expression. */
function similarityCall(e: Expr): SimilarityPair | undefined {
  if (e.kind === 'call' && (e.name === 'similarity' || e.name === 'levenshtein') && e.args.length === 2) {
    const [a, b] = e.args
    const pair = only(a, 'l') && only(b, 'r') ? [a, b] : only(a, 'r') && only(b, 'l') ? [b, a] : undefined
    if (pair) {
      const l = referencedColumns([pair[0]]).l.values().next().value
      const r = referencedColumns([pair[1]]).r.values().next().value
      if (l !== undefined && r !== undefined)
        return { l, r, left: pair[0], right: pair[1], ...(e.name === 'similarity' ? { call: e } : {}) }
    }
  }
  for (const v of Object.values(e)) {
    if (!v || typeof v !== 'object') continue
    const children = Array.isArray(v) ? v : [v]
    for (const x of children) {
      if (x && typeof x === 'object' && 'kind' in x && 'pos' in x) {
        const found = similarityCall(x as Expr)
        if (found) return found
      }
    }
  }
  return undefined
}

/** The columns an expression reads, per side. */
export function referencedColumns(exprs: Expr[]): { l: Set<string>; r: Set<string> } {
  const found: { side: Side; name: string }[] = []
  for (const e of exprs) collectColumns(e, found)
  const out = { l: new Set<string>(), r: new Set<string>() }
  for (const c of found) out[c.side].add(c.name)
  return out
}

function collectColumns(e: Expr, out: { side: Side; name: string }[]): void {
  if (e.kind === 'column') {
    out.push({ side: e.side, name: e.name })
    return
  }
  for (const v of Object.values(e)) {
    if (v && typeof v === 'object') {
      if (Array.isArray(v))
        for (const x of v) if (x && typeof x === 'object' && 'kind' in x) collectColumns(x as Expr, out)
      if ('kind' in v && 'pos' in v) collectColumns(v as Expr, out)
    }
  }
}
