// One pass of a recipe: prepared (parsed, planned, compiled) and run on the records earlier passes
// left free. A pass with equality keys runs on partitioned copies of the columns it reads
// (partition.ts), where its rows are positions that map back to table rows; a band pass runs on
// the tables themselves. Either way the compiled code reads one pair of tables (`space`), and
// matches are emitted in table rows.

import { largeArray } from '../data/alloc.js'
import type { Expr, Side } from '../../language/predicate.js'
import { parsePredicate } from '../../language/predicate.js'
import { aggregateExprs } from '../../language/aggregate.js'
import { conditionOf, type RecipePass } from '../../recipes/schema.js'
import type { SearchBounds } from './aggregate.js'
import { aggregatePass, type PreparedAggregate, prepareAggregate } from './group-pass.js'
import { type AssignmentReport, assignOneToOne } from './assign.js'
import { CompileError, ExprCompiler } from '../plan/compile.js'
import type { MatchBuilder } from '../explain/evidence.js'
import { type BandEvidence, type BandReport, bandJoin } from './bandpass.js'
import { type ConjunctChecks, conjunctChecks, noChecks } from './checks.js'
import { type NearMisses, nearMisses, partitionedJoin } from './hashpass.js'
import { type CompiledBand, compileBand, PairList } from './join.js'
import { hashBytes, keyEquality, keyHashes, plainStringKeys } from './keys.js'
import { type PartitionedSide, partitionBits, partitionSide } from './partition.js'
import { PARALLEL_MIN_ROWS, partitionHelper } from './partition-helper.js'
import { type PairOrder, pairOrder } from './prefer.js'
import { type PassPlan, planPass, referencedColumns } from '../plan/plan.js'
import { type PairScorer, type ScoredPairs, scorer as scorerOf } from './score.js'
import type { Table } from '../data/table.js'
import type { ColumnInfo } from '../data/types.js'
import type { LookupSet } from '../data/lookup.js'
import { TypeChecker } from '../../language/types.js'

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
  /** The recipe's record keys, which `prefer: first_key` (and every preference, last) orders by. */
  keys?: { l: string[]; r: string[] }
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
  /** A 1:1 pass's `prefer`: the order in which its ties are resolved. */
  prefer?: PairOrder
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
  /** 1:1 passes: what assignment did (components, exact or best-first). */
  assignment?: AssignmentReport
  /** Records `prefer` left unmatched, in input rows: each tied with `winner` (its side) for `partner`. */
  passedOver?: { side: Side; record: number; winner: number; partner: number }[]
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
    /** The run's lookup tables, indexed once for every pass. */
    lookups?: LookupSet
  } = {},
): PreparedPass {
  const parallel = opts.parallel !== false
  const lookups = opts.lookups
  const schemas = {
    ...(external?.schemas ?? { l: tables.l.columns, r: tables.r.columns }),
    ...(lookups ? { lookups: lookups.schemas } : {}),
  }
  const when = conditionOf(pass)
  const expr = parsePredicate(when)
  const checker = new TypeChecker(schemas)
  checker.check(expr)
  if (checker.issues.length) throw new CompileError(checker.issues[0].message, expr)
  const plan = planPass(expr, when, (side, c) => schemas[side].find((x) => x.name === c)?.type)
  if (!plan.keys.length && !plan.bands.length)
    throw new Error(`pass "${pass.name}" has no usable join: add an equality or a range between l and r columns`)
  const scored = scoredPairs(plan, compared)
  const aggregateReads = pass.aggregate ? aggregateExprs(pass.aggregate) : []
  const space: PassSpace =
    plan.keys.length && !external
      ? partitionedSpace(
          plan,
          tables,
          [...plan.conjuncts.map((c) => c.expr), ...aggregateReads],
          scored,
          parallel,
          lookups,
        )
      : { tables, leftRows: null, rightRows: null }
  const compiler = new ExprCompiler({ l: space.tables.l.columns, r: space.tables.r.columns }, space.tables, lookups)
  const scorer = scorerOf(scored, compiler)
  const aggregate = pass.pattern === '1:1' ? undefined : prepareAggregate(pass, compiler)
  if (pass.prefer && pass.pattern !== '1:1')
    throw new Error(`prefer resolves ties of 1:1 passes; pass "${pass.name}" is ${pass.pattern}`)
  const prefer = pass.prefer
    ? pairOrder(pass.prefer, {
        scored,
        compiler,
        scorer,
        leftRows: space.leftRows,
        rightRows: space.rightRows,
        tables,
        keys: compared.keys ?? { l: [], r: [] },
      })
    : undefined
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
    prefer,
    amountScale: aggregate ? aggregate.equation.scale : scorer.amountScale,
  }
}

/** The columns a pass reads to score, compute deltas and sum groups: what an external engine must supply. */
export function assignmentColumns(
  pass: RecipePass,
  plan: PassPlan,
  compared: ComparedColumns,
): { l: Set<string>; r: Set<string> } {
  const exprs = pass.aggregate ? aggregateExprs(pass.aggregate) : []
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
  lookups?: LookupSet,
): PassSpace {
  const used = withScoredColumns(referencedColumns(exprs), scored)
  const bits = partitionBits(Math.max(tables.l.length, tables.r.length))
  // the left side on the helper thread (when there is one) while this thread does the right; a
  // plain string key is hashed there too, the rest here first
  const helper = parallel && tables.l.length >= PARALLEL_MIN_ROWS ? partitionHelper() : null
  const plain = helper ? plainStringKeys(plan.keys, tables) : null
  const hashes = plain
    ? null
    : keyHashes(plan.keys, new ExprCompiler({ l: tables.l.columns, r: tables.r.columns }, tables, lookups), tables)
  const pending = helper?.partition(tables.l, [...used.l], hashes?.left ?? { column: plain!.left }, bits)
  const right = partitionSide(tables.r, [...used.r], hashes?.right ?? hashBytes(plain!.right), bits)
  const left = pending?.() ?? partitionSide(tables.l, [...used.l], hashes?.left ?? hashBytes(plain!.left), bits)
  return {
    tables: { l: left.table, r: right.table },
    leftRows: left.rows,
    rightRows: right.rows,
    partitioned: { left, right, equal: () => false },
  }
}

const round = (x: number) => Math.round(x * 1e6) / 1e6

/** Free flags by position: the input flags themselves, or gathered through the position map. */
function spaceFree(free: Uint8Array, rows: Int32Array | null): Uint8Array {
  if (rows === null) return free
  const out = largeArray(Uint8Array, rows.length)
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
    const passedOver: NonNullable<PassEvidence['passedOver']> = []
    evidence.assignment = assignOneToOne(
      pairs.left,
      pairs.right,
      pairs.length,
      s.score,
      lf,
      rf,
      {
        pair: (i, j, score) => sink.pair(i, j, score, false, s.pairAmountDelta(i, j), s.days(i, j)),
        // a tie's deltas are those of (i, j), one pair of an optimal assignment of its records
        tie: (l, r, score, i, j) => sink.group(l, r, score, true, s.pairAmountDelta(i, j), s.days(i, j)),
        passedOver: (side, record, winner, partner) => {
          const [own, other] = side === 'l' ? [leftRow, rightRow] : [rightRow, leftRow]
          passedOver.push({ side, record: own(record), winner: own(winner), partner: other(partner) })
        },
      },
      { prefer: p.prefer },
    )
    if (passedOver.length) evidence.passedOver = passedOver
  } else evidence.search = aggregatePass(p, pairs, lf, rf, sink.group)
  return evidence
}

/**
 * Every pair of free records a prepared pass's predicate holds for, in table rows, without
 * assigning anything: the blocking rules of probabilistic passes find their candidates this way,
 * with the same joins (partitioned hash, band) as ordinary passes.
 */
export function collectCandidates(
  p: PreparedPass,
  leftFree: Uint8Array,
  rightFree: Uint8Array,
  onPair: (i: number, j: number) => void,
): void {
  const { space } = p
  const lf = spaceFree(leftFree, space.leftRows)
  const rf = spaceFree(rightFree, space.rightRows)
  const toLeft = space.leftRows
  const toRight = space.rightRows
  const emit = toLeft === null || toRight === null ? onPair : (i: number, j: number) => onPair(toLeft[i], toRight[j])
  if (space.partitioned) {
    const { left, right, equal } = space.partitioned
    const total = p.checks.total
    // near misses are not wanted here, but the join keeps them as it goes
    const near = { left: nearMisses(left.rows.length, total), right: nearMisses(right.rows.length, total) }
    partitionedJoin(left, right, equal, p.checks, lf, rf, near.left, near.right, emit)
  } else bandJoin(p.bands, p.checks, lf, rf, emit)
}
