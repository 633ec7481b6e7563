// Runs a recipe over two tables: passes in DAG order, each on what earlier passes left, and the
// evidence for every record. Every input record lands in exactly one of matched (a match,
// possibly flagged ambiguous), unmatched-left or unmatched-right.

import type { Expr, Side } from '../recipes/predicate.js'
import { parsePredicate } from '../recipes/predicate.js'
import type { Pattern, Recipe, RecipePass } from '../recipes/schema.js'
import { matchGroups } from './aggregate.js'
import { assignOneToOne } from './assign.js'
import { ExprCompiler } from './compile.js'
import {
  emptyMatches,
  emptyUnmatched,
  MatchBuilder,
  type MatchSet,
  type PassInfo,
  type UnmatchedSet,
} from './evidence.js'
import { bandCandidates, hashCandidates, PairList, residualTest } from './join.js'
import { joinKeys, type JoinKeys } from './keys.js'
import { explainUnmatched } from './nearmiss.js'
import { orderPasses } from './passes.js'
import { type PassPlan, planPass } from './plan.js'
import { type PairScorer, scorer as scorerOf } from './score.js'
import { sumUnits } from './summary.js'
import type { Table } from './table.js'
import { POW10 } from './values.js'

export interface PassReport {
  name: string
  pattern: Pattern
  status: 'done' | 'failed' | 'skipped'
  depends_on: string[]
  blocked_by?: string[]
  error?: string
  matches: number
  ambiguous: number
  left_matched: number
  right_matched: number
  left_amount: string | null
  right_amount: string | null
  ms: number
}

export interface SideSummary {
  rows: number
  matched: number
  unmatched: number
  /** Sum of the side's amount column (the first amount a pass compares), exact; null without one. */
  amount: string | null
  matched_amount: string | null
  unmatched_amount: string | null
}

export interface RunSummary {
  recipe: string
  recipe_version: number | null
  status: 'completed' | 'failed'
  left: SideSummary
  right: SideSummary
  matches: number
  ambiguous: number
  /** Matched records over all records, both sides. */
  match_rate: number
  passes: PassReport[]
  timings: { plan_ms: number; match_ms: number; evidence_ms: number; total_ms: number }
}

export interface RunResult {
  left: Table
  right: Table
  passes: PassInfo[]
  matches: MatchSet
  unmatchedLeft: UnmatchedSet
  unmatchedRight: UnmatchedSet
  summary: RunSummary
}

export interface RunProgress {
  pass: string
  phase: number
  phases: number
  percent: number
}

export interface RunOptions {
  version?: number
  onProgress?: (p: RunProgress) => void
  signal?: AbortSignal
}

/** A pass ready to run: its plan, compiled residual, join keys and scorer. */
export interface PreparedPass {
  index: number
  pass: RecipePass
  plan: PassPlan
  compiler: ExprCompiler
  residual: (i: number, j: number) => boolean
  keys?: JoinKeys
  scorer: PairScorer
  aggregate?: PreparedAggregate
  /** Scale of this pass's amount deltas (-1: float amounts). */
  amountScale: number
}

/** An aggregate pass's amounts as integer units at one scale, and its limits. */
interface PreparedAggregate {
  sumSide: Side
  sum: (row: number) => number | null
  equals: (row: number) => number | null
  scale: number
  tolerance: number
  maxGroup: number
}

export function reconcile(recipe: Recipe, left: Table, right: Table, opts: RunOptions = {}): RunResult {
  const t0 = performance.now()
  const tables = { l: left, r: right }
  const order = orderPasses(recipe.passes)
  const leftFree = new Uint8Array(left.length).fill(1)
  const rightFree = new Uint8Array(right.length).fill(1)
  const matches = new MatchBuilder()
  const reports = new Map<string, PassReport>()
  const prepared: PreparedPass[] = []
  const compared = comparedColumns(recipe, tables)
  const amounts = { left: sumUnits(left, compared.amount?.l), right: sumUnits(right, compared.amount?.r) }
  const t1 = performance.now()

  let phaseNo = 0
  for (const phase of order.phases) {
    phaseNo++
    for (const name of phase) {
      opts.signal?.throwIfAborted()
      const index = recipe.passes.findIndex((p) => p.name === name)
      const pass = recipe.passes[index]
      const deps = order.dependencies.get(name)!
      const report: PassReport = {
        name,
        pattern: pass.pattern,
        status: 'done',
        depends_on: deps,
        matches: 0,
        ambiguous: 0,
        left_matched: 0,
        right_matched: 0,
        left_amount: null,
        right_amount: null,
        ms: 0,
      }
      reports.set(name, report)
      const blocked = deps.filter((d) => reports.get(d)?.status !== 'done')
      if (blocked.length) {
        report.status = 'skipped'
        report.blocked_by = blocked
        continue
      }
      const started = performance.now()
      try {
        const p = preparePass(index, pass, tables, compared)
        prepared.push(p)
        runPass(p, leftFree, rightFree, matches)
      } catch (err) {
        report.status = 'failed'
        report.error = (err as Error).message
      }
      report.ms = Math.round(performance.now() - started)
      opts.onProgress?.({
        pass: name,
        phase: phaseNo,
        phases: order.phases.length,
        percent: Math.round((100 * phaseNo) / order.phases.length),
      })
    }
  }
  const t2 = performance.now()

  const passes = recipe.passes.map((p) => reports.get(p.name)!)
  const failed = passes.some((r) => r.status !== 'done')
  const matchSet = failed ? emptyMatches() : matches.finish()
  const passInfo = recipe.passes.map((pass, n) =>
    passInfoOf(
      pass,
      prepared.find((p) => p.index === n),
    ),
  )
  const unmatchedLeft = failed ? emptyUnmatched() : explainUnmatched('l', prepared, leftFree, rightFree, tables)
  const unmatchedRight = failed ? emptyUnmatched() : explainUnmatched('r', prepared, rightFree, leftFree, tables)
  const t3 = performance.now()

  // per-pass counts and amounts, from the match columns
  const leftMatchedByPass = recipe.passes.map(() => [] as number[])
  const rightMatchedByPass = recipe.passes.map(() => [] as number[])
  let ambiguous = 0
  for (let k = 0; k < matchSet.count; k++) {
    const report = passes[matchSet.pass[k]]
    report.matches++
    if (matchSet.ambiguous[k]) {
      report.ambiguous++
      ambiguous++
    }
    for (let n = matchSet.leftStart[k]; n < matchSet.leftStart[k + 1]; n++)
      leftMatchedByPass[matchSet.pass[k]].push(matchSet.leftRows[n])
    for (let n = matchSet.rightStart[k]; n < matchSet.rightStart[k + 1]; n++)
      rightMatchedByPass[matchSet.pass[k]].push(matchSet.rightRows[n])
  }
  passes.forEach((report, n) => {
    report.left_matched = leftMatchedByPass[n].length
    report.right_matched = rightMatchedByPass[n].length
    report.left_amount = amounts.left(leftMatchedByPass[n])
    report.right_amount = amounts.right(rightMatchedByPass[n])
  })

  const side = (table: Table, sum: (rows: ArrayLike<number>) => string | null, un: UnmatchedSet): SideSummary => {
    const matched = failed ? 0 : table.length - un.rows.length
    return {
      rows: table.length,
      matched,
      unmatched: failed ? 0 : un.rows.length,
      amount: sum(allRows(table.length)),
      matched_amount: failed ? null : sum(matchedRows(un.rows, table.length)),
      unmatched_amount: failed ? null : sum(un.rows),
    }
  }
  const leftSummary = side(left, amounts.left, unmatchedLeft)
  const rightSummary = side(right, amounts.right, unmatchedRight)
  const summary: RunSummary = {
    recipe: recipe.name,
    recipe_version: opts.version ?? null,
    status: failed ? 'failed' : 'completed',
    left: leftSummary,
    right: rightSummary,
    matches: matchSet.count,
    ambiguous,
    match_rate:
      left.length + right.length === 0
        ? 0
        : round((leftSummary.matched + rightSummary.matched) / (left.length + right.length)),
    passes,
    timings: { plan_ms: ms(t1 - t0), match_ms: ms(t2 - t1), evidence_ms: ms(t3 - t2), total_ms: ms(t3 - t0) },
  }
  // A failed run commits nothing: its report says why, per pass.
  return { left, right, passes: passInfo, matches: matchSet, unmatchedLeft, unmatchedRight, summary }
}

const round = (x: number) => Math.round(x * 1e6) / 1e6
const ms = (x: number) => Math.round(x * 10) / 10

function allRows(n: number): Int32Array {
  const rows = new Int32Array(n)
  for (let i = 0; i < n; i++) rows[i] = i
  return rows
}

/** The rows of 0..n not listed in `unmatched` (which is in ascending order). */
function matchedRows(unmatched: Int32Array, n: number): Int32Array {
  const out = new Int32Array(n - unmatched.length)
  let k = 0
  let u = 0
  for (let i = 0; i < n; i++) {
    if (u < unmatched.length && unmatched[u] === i) u++
    else out[k++] = i
  }
  return out
}

export function freeRows(free: Uint8Array): Int32Array {
  let n = 0
  for (let i = 0; i < free.length; i++) n += free[i]
  const rows = new Int32Array(n)
  let k = 0
  for (let i = 0; i < free.length; i++) if (free[i]) rows[k++] = i
  return rows
}

/**
 * The amount and date pairs the recipe compares, from its first pass that compares each. A pass
 * that does not compare them itself (an exact key pass) still scores its candidates by them, so
 * a sale beats a chargeback on the same order instead of tying with it.
 */
export interface ComparedColumns {
  amount?: { l: string; r: string }
  date?: { l: string; r: string }
}

export function preparePass(
  index: number,
  pass: RecipePass,
  tables: { l: Table; r: Table },
  compared: ComparedColumns = {},
): PreparedPass {
  const compiler = new ExprCompiler({ l: tables.l.columns, r: tables.r.columns }, tables)
  const expr = parsePredicate(pass.when)
  compiler.typeOf(expr)
  const plan = planPass(expr, pass.when, (side, c) => tables[side].columns.find((x) => x.name === c)?.type)
  if (!plan.keys.length && !plan.band)
    throw new Error(`pass "${pass.name}" has no usable join: add an equality or a range between l and r columns`)
  const scorer = scorerOf(
    { ...plan, amount: plan.amount ?? compared.amount, date: plan.date ?? compared.date },
    compiler,
  )
  const aggregate = pass.pattern === '1:1' ? undefined : prepareAggregate(pass, compiler)
  return {
    index,
    pass,
    plan,
    compiler,
    residual: residualTest(plan, compiler),
    keys: plan.keys.length ? joinKeys(plan.keys, compiler, tables) : undefined,
    scorer,
    aggregate,
    amountScale: aggregate ? aggregate.scale : scorer.amountScale,
  }
}

function prepareAggregate(pass: RecipePass, c: ExprCompiler): PreparedAggregate {
  const agg = pass.aggregate
  if (!agg)
    throw new Error(`pass "${pass.name}" (${pass.pattern}) needs an aggregate: { sum, equals, tolerance, max_group }`)
  const sumExpr = parsePredicate(agg.sum)
  const equalsExpr = parsePredicate(agg.equals)
  const sumSide = sideOfColumn(sumExpr, 'aggregate.sum')
  const equalsSide = sideOfColumn(equalsExpr, 'aggregate.equals')
  if (sumSide === equalsSide) throw new Error('aggregate.sum and aggregate.equals must be on opposite sides')
  if (pass.pattern === '1:N' && sumSide !== 'r')
    throw new Error('a 1:N pass sums right records: aggregate.sum must be an r. column')
  if (pass.pattern === 'N:1' && sumSide !== 'l')
    throw new Error('an N:1 pass sums left records: aggregate.sum must be an l. column')
  const [sumC, eqC, common] = c.operands(sumExpr, equalsExpr)
  if (common.kind !== 'decimal' && common.kind !== 'integer')
    throw new Error('aggregate amounts must be decimal or integer columns')
  const scale = common.scale ?? 0
  const rowVar = (s: Side) => (s === 'l' ? 'i' : 'j')
  return {
    sumSide,
    sum: c.build(rowVar(sumSide), sumC.code),
    equals: c.build(rowVar(equalsSide), eqC.code),
    scale,
    tolerance: toUnits(agg.tolerance ?? 0, scale),
    maxGroup: agg.max_group ?? 5,
  }
}

function passInfoOf(pass: RecipePass, p: PreparedPass | undefined): PassInfo {
  const plan = p?.plan
  return {
    name: pass.name,
    pattern: pass.pattern,
    conjuncts: plan ? plan.conjuncts.map((c) => c.text) : [pass.when],
    join: plan ? plan.keys.map((k) => k.text).join(' AND ') || plan.band?.texts.join(' AND ') || '' : pass.when,
    amountScale: p ? p.amountScale : 0,
  }
}

/** Candidate pairs of a pass among the free rows (or the given rows), residual applied. */
export function candidatePairs(p: PreparedPass, leftRows: Int32Array, rightRows: Int32Array): PairList {
  const pairs = new PairList()
  const push = (i: number, j: number) => pairs.push(i, j)
  if (p.keys) hashCandidates(p.keys, leftRows, rightRows, p.residual, push)
  else bandCandidates(p.plan, p.compiler, leftRows, rightRows, p.residual, push)
  return pairs
}

function runPass(p: PreparedPass, leftFree: Uint8Array, rightFree: Uint8Array, out: MatchBuilder): void {
  const pairs = candidatePairs(p, freeRows(leftFree), freeRows(rightFree))
  const s = p.scorer
  if (p.pass.pattern === '1:1') {
    assignOneToOne(pairs.left, pairs.right, pairs.length, s.score, leftFree, rightFree, {
      pair: (i, j, score) => out.pair(p.index, i, j, round(score), false, s.pairAmountDelta(i, j), s.days(i, j)),
      // a tie's deltas are those of one tied pair: every pair in it scored the same
      tie: (l, r, score) =>
        out.group(p.index, l, r, round(score), true, s.pairAmountDelta(l[0], r[0]), s.days(l[0], r[0])),
    })
    return
  }
  aggregatePass(p, pairs, leftFree, rightFree, out)
}

function aggregatePass(
  p: PreparedPass,
  pairs: PairList,
  leftFree: Uint8Array,
  rightFree: Uint8Array,
  out: MatchBuilder,
): void {
  const agg = p.aggregate!
  const { tolerance } = agg
  const closeness = (delta: number) =>
    round(0.5 + 0.5 * (1 - Math.min(1, Math.abs(delta) / Math.max(1, tolerance * 2))))

  if (p.pass.pattern === 'N:M') {
    const leftAmount = agg.sumSide === 'l' ? agg.sum : agg.equals
    const rightAmount = agg.sumSide === 'r' ? agg.sum : agg.equals
    for (const g of keyGroups(pairs, leftFree.length, rightFree.length)) {
      let delta = 0
      for (const i of g.left) delta += leftAmount(i) ?? 0
      for (const j of g.right) delta -= rightAmount(j) ?? 0
      if (Math.abs(delta) > tolerance) continue
      for (const i of g.left) leftFree[i] = 0
      for (const j of g.right) rightFree[j] = 0
      out.group(p.index, g.left, g.right, closeness(delta), false, delta, Number.NaN)
    }
    return
  }

  // 1:N: one left against many right (sum on r); N:1: one right against many left (sum on l)
  const oneSide: Side = p.pass.pattern === '1:N' ? 'l' : 'r'
  const candidates = new Map<number, number[]>()
  for (let n = 0; n < pairs.length; n++) {
    const one = oneSide === 'l' ? pairs.left[n] : pairs.right[n]
    const many = oneSide === 'l' ? pairs.right[n] : pairs.left[n]
    const list = candidates.get(one)
    if (list) list.push(many)
    else candidates.set(one, [many])
  }
  const oneFree = oneSide === 'l' ? leftFree : rightFree
  const manyFree = oneSide === 'l' ? rightFree : leftFree
  for (const g of matchGroups(candidates, agg.equals, agg.sum, tolerance, agg.maxGroup, manyFree)) {
    oneFree[g.one] = 0
    const many = [...g.many, ...(g.alternatives ?? [])].sort((a, b) => a - b)
    const l = oneSide === 'l' ? [g.one] : many
    const r = oneSide === 'l' ? many : [g.one]
    // delta is left minus right: for N:1 the group is on the left
    const delta = oneSide === 'l' ? g.delta : -g.delta
    out.group(p.index, l, r, closeness(g.delta), g.ambiguous, delta, p.scorer.days(l[0], r[0]))
  }
}

/** N:M groups: connected components of the candidate graph (records sharing the pass's keys). */
function keyGroups(pairs: PairList, leftLength: number, rightLength: number): { left: number[]; right: number[] }[] {
  // nodes: left rows 0..L-1, right rows L..L+R-1
  const parent = new Int32Array(leftLength + rightLength).fill(-1)
  const find = (x: number): number => {
    let root = x
    while (parent[root] !== root) root = parent[root]
    while (parent[x] !== root) {
      const up = parent[x]
      parent[x] = root
      x = up
    }
    return root
  }
  for (let n = 0; n < pairs.length; n++) {
    const a = pairs.left[n]
    const b = leftLength + pairs.right[n]
    if (parent[a] < 0) parent[a] = a
    if (parent[b] < 0) parent[b] = b
    const ra = find(a)
    const rb = find(b)
    if (ra !== rb) parent[ra] = rb
  }
  const groups = new Map<number, { left: number[]; right: number[] }>()
  for (let x = 0; x < parent.length; x++) {
    if (parent[x] < 0) continue
    const root = find(x)
    let g = groups.get(root)
    if (!g) {
      g = { left: [], right: [] }
      groups.set(root, g)
    }
    if (x < leftLength) g.left.push(x)
    else g.right.push(x - leftLength)
  }
  return [...groups.values()]
}

function sideOfColumn(e: Expr, what: string): Side {
  if (e.kind !== 'column') throw new Error(`${what} must be a column such as r.amount`)
  return e.side
}

/** A tolerance in units at `scale`, rounded down: a tolerance finer than the scale allows no extra difference. */
export function toUnits(t: number | string, scale: number): number {
  const text = typeof t === 'number' ? String(t) : t
  const [int, frac = ''] = text.split('.')
  if (frac.length > scale) return Math.floor(Number(`${int}${frac}`) / POW10[frac.length - scale])
  return Number(`${int}${frac.padEnd(scale, '0')}`)
}

export function comparedColumns(recipe: Recipe, tables: { l: Table; r: Table }): ComparedColumns {
  const out: ComparedColumns = {}
  for (const pass of recipe.passes) {
    try {
      const plan = planPass(
        parsePredicate(pass.when),
        pass.when,
        (side, c) => tables[side].columns.find((x) => x.name === c)?.type,
      )
      out.amount ??= plan.amount
      out.date ??= plan.date
    } catch {
      // a pass that does not parse reports itself when it runs
    }
  }
  return out
}
