// One pass of a recipe: prepared (parsed, planned, compiled) and run on the records earlier passes
// left free. A pass with equality keys runs on partitioned copies of the columns it reads
// (partition.ts), where its rows are positions that map back to table rows; a band pass runs on
// the tables themselves. Either way the compiled code reads one pair of tables (`space`), and
// matches are emitted in table rows.

import type { Expr, Side } from '../../language/predicate.js'
import { parsePredicate } from '../../language/predicate.js'
import type { RecipePass } from '../../recipes/schema.js'
import { matchGroups, noBounds, type SearchBounds } from './aggregate.js'
import { assignOneToOne } from './assign.js'
import { CompileError, ExprCompiler } from '../plan/compile.js'
import type { MatchBuilder } from '../explain/evidence.js'
import { type BandEvidence, type BandReport, bandJoin } from './bandpass.js'
import { type ConjunctChecks, conjunctChecks, noChecks } from './checks.js'
import { type NearMisses, nearMisses, partitionedJoin } from './hashpass.js'
import { type CompiledBand, compileBand, PairList } from './join.js'
import { keyEquality, keyHashes } from './keys.js'
import { type PartitionedSide, partitionBits, partitionSide } from './partition.js'
import { PARALLEL_MIN_ROWS, partitionHelper } from './partition-helper.js'
import { type PassPlan, planPass, referencedColumns } from '../plan/plan.js'
import { type PairScorer, type ScoredPairs, scorer as scorerOf } from './score.js'
import type { Table } from '../data/table.js'
import type { ColumnInfo } from '../data/types.js'
import { TypeChecker } from '../../language/types.js'
import { POW10 } from '../data/values.js'

/**
 * The amount and date pairs the recipe compares, from its first pass that compares each. A pass
 * that does not compare them itself (an exact key pass) still scores its candidates by them, so
 * a sale beats a chargeback on the same order instead of tying with it.
 */
export interface ComparedColumns {
  amount?: { l: string; r: string }
  date?: { l: string; r: string }
  /**
   * The recipe's reference: its first hash key between two plain string columns
   * (`l.invoice_id = r.reference_number`). A pass that neither keys on it nor compares strings
   * loosely itself (an amount-and-date band pass) scores candidates by how alike their
   * references are, so the payment naming the invoice beats one of the same amount.
   */
  reference?: { l: string; r: string }
}

/** The pairs a pass scores its candidates by: its own, else the recipe's. */
export function scoredPairs(plan: PassPlan, compared: ComparedColumns): ScoredPairs {
  const ref = compared.reference
  const keyedOnRef =
    ref !== undefined &&
    plan.keys.some(
      (k) => k.left.kind === 'column' && k.left.name === ref.l && k.right.kind === 'column' && k.right.name === ref.r,
    )
  return {
    amount: plan.amount ?? compared.amount,
    date: plan.date ?? compared.date,
    similarity: plan.similarity ?? (keyedOnRef ? undefined : ref),
  }
}

/** The tables a pass's compiled code reads, and how their rows map to the input tables' rows. */
export interface PassSpace {
  tables: { l: Table; r: Table }
  /** Position → input row; null when positions are rows. */
  leftRows: Int32Array | null
  rightRows: Int32Array | null
  partitioned?: { left: PartitionedSide; right: PartitionedSide; equal: (i: number, j: number) => boolean }
}

export interface PreparedPass {
  index: number
  pass: RecipePass
  plan: PassPlan
  space: PassSpace
  compiler: ExprCompiler
  checks: ConjunctChecks
  /** Band options of a pass without keys, compiled; which one runs is chosen on the data. */
  bands: CompiledBand[]
  scorer: PairScorer
  aggregate?: PreparedAggregate
  /** Scale of this pass's amount deltas (-1: float amounts). */
  amountScale: number
}

/** What a pass leaves behind to explain unmatched records once every pass has run. */
export interface PassEvidence {
  index: number
  /** Hash passes: nearest misses found during the join, by position. */
  near?: {
    left: NearMisses
    right: NearMisses
    leftRows: Int32Array
    rightRows: Int32Array
    /** Free flags by position after this pass: a record taken here needs no explanation. */
    leftFree: Uint8Array
    rightFree: Uint8Array
  }
  /** Band passes: the band used, the candidates and the near misses the join found. */
  band?: { pass: PreparedPass; join: BandEvidence; report: BandReport }
  /** Aggregate passes: how often the bounded group search met its limits. */
  search?: SearchBounds
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

/**
 * Parses, plans and compiles a pass over `tables`. With `external`, another engine finds the
 * candidates (the PostgreSQL engine): the predicate is checked against the sources' full schemas,
 * and only what assignment needs (scores, deltas, aggregate amounts) is compiled over `tables`,
 * which then hold just those columns.
 */
export function preparePass(
  index: number,
  pass: RecipePass,
  tables: { l: Table; r: Table },
  compared: ComparedColumns = {},
  external?: { schemas: { l: ColumnInfo[]; r: ColumnInfo[] } },
  opts: {
    /** Partition the left side on the helper thread when it is large enough (partition-helper.ts). */
    parallel?: boolean
    /** Check cheap conjuncts first and keep similarity for the score (checks.ts); false only for tests. */
    cheapFirst?: boolean
  } = {},
): PreparedPass {
  const parallel = opts.parallel !== false
  const schemas = external?.schemas ?? { l: tables.l.columns, r: tables.r.columns }
  const expr = parsePredicate(pass.when)
  const checker = new TypeChecker(schemas)
  checker.check(expr)
  if (checker.issues.length) throw new CompileError(checker.issues[0].message, expr)
  const plan = planPass(expr, pass.when, (side, c) => schemas[side].find((x) => x.name === c)?.type)
  if (!plan.keys.length && !plan.bands.length)
    throw new Error(`pass "${pass.name}" has no usable join: add an equality or a range between l and r columns`)
  const scored = scoredPairs(plan, compared)
  const aggregateExprs = pass.aggregate
    ? [parsePredicate(pass.aggregate.sum), parsePredicate(pass.aggregate.equals)]
    : []
  const space: PassSpace =
    plan.keys.length && !external
      ? partitionedSpace(plan, tables, [...plan.conjuncts.map((c) => c.expr), ...aggregateExprs], scored, parallel)
      : { tables, leftRows: null, rightRows: null }
  const compiler = new ExprCompiler({ l: space.tables.l.columns, r: space.tables.r.columns }, space.tables)
  const scorer = scorerOf(scored, compiler)
  const aggregate = pass.pattern === '1:1' ? undefined : prepareAggregate(pass, compiler)
  if (space.partitioned) space.partitioned.equal = keyEquality(plan.keys, compiler, space.tables)
  return {
    index,
    pass,
    plan,
    space,
    compiler,
    checks: external ? noChecks(plan.conjuncts.length) : conjunctChecks(plan, compiler, opts.cheapFirst !== false),
    bands: external || plan.keys.length ? [] : plan.bands.map((b) => compileBand(b, compiler)),
    scorer,
    aggregate,
    amountScale: aggregate ? aggregate.scale : scorer.amountScale,
  }
}

/** The columns a pass reads to score, compute deltas and sum groups: what an external engine must supply. */
export function assignmentColumns(
  pass: RecipePass,
  plan: PassPlan,
  compared: ComparedColumns,
): { l: Set<string>; r: Set<string> } {
  const exprs = pass.aggregate ? [parsePredicate(pass.aggregate.sum), parsePredicate(pass.aggregate.equals)] : []
  return withScoredColumns(referencedColumns(exprs), scoredPairs(plan, compared))
}

/** Adds the columns scoring reads (similarity may read expressions over several columns). */
function withScoredColumns(used: { l: Set<string>; r: Set<string> }, scored: ScoredPairs) {
  for (const pair of [scored.amount, scored.date, scored.similarity]) {
    if (pair) {
      used.l.add(pair.l)
      used.r.add(pair.r)
    }
  }
  const s = scored.similarity
  if (s?.left && s.right) {
    const more = referencedColumns([s.left, s.right])
    for (const c of more.l) used.l.add(c)
    for (const c of more.r) used.r.add(c)
  }
  return used
}

/** Both sides partitioned by key hash, with the columns the pass reads (predicate, aggregate, scoring). */
function partitionedSpace(
  plan: PassPlan,
  tables: { l: Table; r: Table },
  exprs: Expr[],
  scored: ScoredPairs,
  parallel: boolean,
): PassSpace {
  const hashing = new ExprCompiler({ l: tables.l.columns, r: tables.r.columns }, tables)
  const hashes = keyHashes(plan.keys, hashing, tables)
  const used = withScoredColumns(referencedColumns(exprs), scored)
  const bits = partitionBits(Math.max(tables.l.length, tables.r.length))
  // the left side on the helper thread (when there is one) while this thread does the right
  const helper = parallel && tables.l.length >= PARALLEL_MIN_ROWS ? partitionHelper() : null
  const pending = helper?.partition(tables.l, [...used.l], hashes.left, bits)
  const right = partitionSide(tables.r, [...used.r], hashes.right, bits)
  const left = pending?.() ?? partitionSide(tables.l, [...used.l], hashes.left, bits)
  return {
    tables: { l: left.table, r: right.table },
    leftRows: left.rows,
    rightRows: right.rows,
    partitioned: { left, right, equal: () => false },
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

const round = (x: number) => Math.round(x * 1e6) / 1e6

/** Free flags by position: the input flags themselves, or gathered through the position map. */
function spaceFree(free: Uint8Array, rows: Int32Array | null): Uint8Array {
  if (rows === null) return free
  const out = new Uint8Array(rows.length)
  for (let k = 0; k < rows.length; k++) out[k] = free[rows[k]]
  return out
}

/**
 * Runs a prepared pass on the free records: finds candidates, assigns matches (1:1) or groups
 * (1:N, N:1, N:M), emits them in input rows and marks those records taken. Returns what the pass
 * knows about near misses.
 */
export function runPass(
  p: PreparedPass,
  leftFree: Uint8Array,
  rightFree: Uint8Array,
  out: MatchBuilder,
  /** Candidates found by another engine (rows of `p.space.tables`); the pass then only assigns. */
  external?: PairList,
): PassEvidence {
  const { space } = p
  const lf = spaceFree(leftFree, space.leftRows)
  const rf = spaceFree(rightFree, space.rightRows)
  // a 1:1 pass keeps each candidate's similarity with it, for its score
  const kept = external || p.pass.pattern !== '1:1' ? null : p.checks.kept
  const pairs = external ?? new PairList(lf.length, kept !== null)
  const push = kept
    ? (i: number, j: number) => pairs.pushValue(i, j, kept())
    : (i: number, j: number) => pairs.push(i, j)
  let evidence: PassEvidence
  if (external) evidence = { index: p.index }
  else if (space.partitioned) {
    const { left, right, equal } = space.partitioned
    const total = p.checks.total
    const near = { left: nearMisses(left.rows.length, total), right: nearMisses(right.rows.length, total) }
    partitionedJoin(left, right, equal, p.checks, lf, rf, near.left, near.right, push)
    evidence = {
      index: p.index,
      near: { ...near, leftRows: left.rows, rightRows: right.rows, leftFree: lf, rightFree: rf },
    }
  } else {
    const join = bandJoin(p.bands, p.checks, lf, rf, push)
    evidence = { index: p.index, band: { pass: p, join: join.evidence, report: join.report } }
  }
  const toLeft = space.leftRows
  const toRight = space.rightRows
  const leftRow = (k: number) => (toLeft === null ? k : toLeft[k])
  const rightRow = (k: number) => (toRight === null ? k : toRight[k])
  const take = (l: ArrayLike<number>, r: ArrayLike<number>) => {
    for (let n = 0; n < l.length; n++) leftFree[leftRow(l[n])] = 0
    for (let n = 0; n < r.length; n++) rightFree[rightRow(r[n])] = 0
  }
  const rowsOf = (positions: number[], map: (k: number) => number) => positions.map(map).sort((a, b) => a - b)
  const s = pairs.values ? p.scorer.reusing(pairs.valueOf()) : p.scorer
  const sink = {
    pair: (i: number, j: number, score: number, ambiguous: boolean, amount: number, days: number) => {
      leftFree[leftRow(i)] = 0
      rightFree[rightRow(j)] = 0
      out.pair(p.index, leftRow(i), rightRow(j), round(score), ambiguous, amount, days)
    },
    group: (l: number[], r: number[], score: number, ambiguous: boolean, amount: number, days: number) => {
      take(l, r)
      out.group(p.index, rowsOf(l, leftRow), rowsOf(r, rightRow), round(score), ambiguous, amount, days)
    },
  }
  if (p.pass.pattern === '1:1') {
    assignOneToOne(pairs.left, pairs.right, pairs.length, s.score, lf, rf, {
      pair: (i, j, score) => sink.pair(i, j, score, false, s.pairAmountDelta(i, j), s.days(i, j)),
      // a tie's deltas are those of one tied pair: every pair in it scored the same
      tie: (l, r, score) => sink.group(l, r, score, true, s.pairAmountDelta(l[0], r[0]), s.days(l[0], r[0])),
    })
  } else evidence.search = aggregatePass(p, pairs, lf, rf, sink.group)
  return evidence
}

type GroupSink = (l: number[], r: number[], score: number, ambiguous: boolean, amount: number, days: number) => void

function aggregatePass(
  p: PreparedPass,
  pairs: PairList,
  leftFree: Uint8Array,
  rightFree: Uint8Array,
  emit: GroupSink,
): SearchBounds {
  const bounds = noBounds()
  const agg = p.aggregate!
  const { tolerance } = agg
  const closeness = (delta: number) => 0.5 + 0.5 * (1 - Math.min(1, Math.abs(delta) / Math.max(1, tolerance * 2)))

  if (p.pass.pattern === 'N:M') {
    const leftAmount = agg.sumSide === 'l' ? agg.sum : agg.equals
    const rightAmount = agg.sumSide === 'r' ? agg.sum : agg.equals
    // max_group bounds each side of an N:M group only when the recipe declares it
    const limit = p.pass.aggregate?.max_group ?? Infinity
    for (const g of keyGroups(pairs, leftFree.length, rightFree.length)) {
      if (g.left.length > limit || g.right.length > limit) {
        bounds.groups_over_max++
        continue
      }
      const delta = groupDelta(g.left, g.right, leftAmount, rightAmount)
      if (delta === null || Math.abs(delta) > tolerance) continue
      for (const i of g.left) leftFree[i] = 0
      for (const j of g.right) rightFree[j] = 0
      emit(g.left, g.right, closeness(delta), false, delta, Number.NaN)
    }
    return bounds
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
  const likeness = p.scorer.likeness
  const rank = oneSide === 'l' ? likeness : (one: number, many: number) => likeness(many, one)
  for (const g of matchGroups(candidates, agg.equals, agg.sum, tolerance, agg.maxGroup, manyFree, rank, bounds)) {
    oneFree[g.one] = 0
    const many = [...g.many, ...(g.alternatives ?? [])].sort((a, b) => a - b)
    const l = oneSide === 'l' ? [g.one] : many
    const r = oneSide === 'l' ? many : [g.one]
    // delta is left minus right: for N:1 the group is on the left
    const delta = oneSide === 'l' ? g.delta : -g.delta
    emit(l, r, closeness(g.delta), g.ambiguous, delta, p.scorer.days(l[0], r[0]))
  }
  return bounds
}

/** Left sum minus right sum, in units; null when an amount is NULL (a group of unknown sum never matches). */
function groupDelta(
  left: number[],
  right: number[],
  leftAmount: (row: number) => number | null,
  rightAmount: (row: number) => number | null,
): number | null {
  let delta = 0
  for (const i of left) {
    const v = leftAmount(i)
    if (v === null) return null
    delta += v
  }
  for (const j of right) {
    const v = rightAmount(j)
    if (v === null) return null
    delta -= v
  }
  return delta
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
