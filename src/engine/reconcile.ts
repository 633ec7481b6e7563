// Runs a recipe over two tables: passes in DAG order, each on what earlier passes left, and the
// evidence for every record. Every input record lands in exactly one of matched (a match,
// possibly flagged ambiguous), unmatched-left or unmatched-right.

import { largeArray } from './data/alloc.js'
import { parsePredicate } from '../language/predicate.js'
import { isProbabilistic, type Pattern, type Recipe, type RecipePass } from '../recipes/schema.js'
import {
  emptyMatches,
  emptyUnmatched,
  MatchBuilder,
  type MatchSet,
  type PassInfo,
  type UnmatchedSet,
} from './explain/evidence.js'
import type { SearchBounds } from './match/aggregate.js'
import type { AssignmentReport } from './match/assign.js'
import type { BandReport } from './match/bandpass.js'
import { explainUnmatched } from './explain/nearmiss.js'
import { type ComparedColumns, type PassEvidence, type PreparedPass, preparePass, runPass } from './match/pass.js'
import { type ProbabilisticPass, type ProbabilisticReport, runProbabilisticPass } from './match/probabilistic/pass.js'
import { PARALLEL_MIN_ROWS, partitionHelper } from './match/partition-helper.js'
import { orderPasses } from './plan/passes.js'
import { firstClosedBand, type PassPlan, planPass } from './plan/plan.js'
import { amountColumn, type SideTotals, sideTotals } from './explain/summary.js'
import type { Table } from './data/table.js'
import { buildLookups } from './data/lookup.js'

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
  /** Aggregate passes (1:N, N:1, N:M): how often the bounded group search met its limits. */
  search?: SearchBounds
  /** Probabilistic passes: candidates per blocking rule, the training, and the model used. */
  probabilistic?: ProbabilisticReport
  /** 1:1 passes: pairs taken at once, and the contested components solved exactly or best-first. */
  assignment?: AssignmentReport
  /** Band passes: the band the run chose on the data, its estimated and actual pairs. */
  band?: BandReport
  ms: number
}

export interface SideSummary {
  rows: number
  /** Records in a match, ambiguous ones included. */
  matched: number
  /** Of those, the records held in ambiguous matches for review. */
  ambiguous: number
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
  /** Use the partitioning helper thread for large sides (default true; partition-helper.ts). */
  parallel?: boolean
  /** The tables of the recipe's lookups, by lookup name, loaded whole. */
  lookups?: Record<string, Table>
  /** Check cheap conjuncts first (default true); false evaluates all, as written (the tests' reference). */
  cheapFirst?: boolean
  /**
   * Sees a completed run's matches as soon as its passes are done, before the unmatched records
   * are explained and the sides totalled (a fifth of the run, on one thread): a writer can start
   * on the matches set meanwhile. The same objects end up in the result.
   */
  onMatches?: (early: EarlyMatches) => void
}

/** What a run's matches set is made of, known once its passes are done. */
export type EarlyMatches = Pick<RunResult, 'left' | 'right' | 'passes' | 'matches'>

/** One pass in execution order, with the phase of the DAG it belongs to. */
export interface PassStep {
  index: number
  pass: RecipePass
  phase: number
}

/**
 * Runs passes in DAG order and keeps their reports: a pass whose dependencies did not all finish
 * is skipped with `blocked_by`; a pass that throws is `failed` with its message. Shared by the
 * in-process engine and the PostgreSQL engine, which differ only in how a pass finds candidates.
 */
export class PassScheduler {
  readonly steps: PassStep[] = []
  readonly phases: number
  private readonly reports = new Map<string, PassReport>()
  private readonly started = new Map<string, number>()

  constructor(private readonly recipe: Recipe) {
    const order = orderPasses(recipe.passes)
    this.phases = order.phases.length
    order.phases.forEach((names, n) => {
      for (const name of names) {
        const index = recipe.passes.findIndex((p) => p.name === name)
        this.steps.push({ index, pass: recipe.passes[index], phase: n + 1 })
        this.reports.set(name, {
          name,
          pattern: recipe.passes[index].pattern,
          status: 'done',
          depends_on: order.dependencies.get(name)!,
          matches: 0,
          ambiguous: 0,
          left_matched: 0,
          right_matched: 0,
          left_amount: null,
          right_amount: null,
          ms: 0,
        })
      }
    })
  }

  /** False (and the pass marked skipped) when a pass it depends on did not finish. */
  begin(step: PassStep): boolean {
    const report = this.reports.get(step.pass.name)!
    const blocked = report.depends_on.filter((d) => this.reports.get(d)!.status !== 'done')
    if (blocked.length) {
      report.status = 'skipped'
      report.blocked_by = blocked
      return false
    }
    this.started.set(step.pass.name, performance.now())
    return true
  }

  /** Records what a pass's group search or 1:1 assignment ran into. */
  searched(step: PassStep, done: Pick<PassEvidence, 'search' | 'assignment'>): void {
    const report = this.reports.get(step.pass.name)!
    if (done.search) report.search = done.search
    if (done.assignment) report.assignment = done.assignment
  }

  /** Records what a probabilistic pass found and learned. */
  weighed(step: PassStep, report: ProbabilisticReport): void {
    this.reports.get(step.pass.name)!.probabilistic = report
  }

  /** Records the band a band pass ran with. */
  banded(step: PassStep, band: BandReport | undefined): void {
    if (band) this.reports.get(step.pass.name)!.band = band
  }

  fail(step: PassStep, err: unknown): void {
    const report = this.reports.get(step.pass.name)!
    report.status = 'failed'
    report.error = (err as Error).message ?? String(err)
  }

  end(step: PassStep, onProgress?: (p: RunProgress) => void): void {
    const report = this.reports.get(step.pass.name)!
    report.ms = Math.round(performance.now() - (this.started.get(step.pass.name) ?? performance.now()))
    onProgress?.({
      pass: step.pass.name,
      phase: step.phase,
      phases: this.phases,
      percent: Math.round((100 * step.phase) / this.phases),
    })
  }

  /** Reports in the recipe's order. */
  list(): PassReport[] {
    return this.recipe.passes.map((p) => this.reports.get(p.name)!)
  }
}

export function reconcile(recipe: Recipe, left: Table, right: Table, opts: RunOptions = {}): RunResult {
  const t0 = performance.now()
  const parallel = opts.parallel !== false
  // started now, the helper thread boots while the first pass hashes its keys
  if (parallel && left.length >= PARALLEL_MIN_ROWS) partitionHelper()
  const tables = { l: left, r: right }
  const scheduler = new PassScheduler(recipe)
  const leftFree = largeArray(Uint8Array, left.length).fill(1)
  const rightFree = largeArray(Uint8Array, right.length).fill(1)
  const matches = new MatchBuilder(left.length, right.length)
  const prepared: PreparedPass[] = []
  const probabilistic: ProbabilisticPass[] = []
  const evidence: PassEvidence[] = []
  const compared = comparedColumns(recipe, tables)
  // indexed once for the run; a missing table or a key held by two rows fails the run here
  const lookups = buildLookups(recipe.lookups, opts.lookups ?? {})
  const t1 = performance.now()

  for (const step of scheduler.steps) {
    opts.signal?.throwIfAborted()
    if (!scheduler.begin(step)) continue
    try {
      if (isProbabilistic(step.pass)) {
        const keys = { left: recipe.left.key, right: recipe.right.key }
        const done = runProbabilisticPass(
          step.index,
          step.pass,
          tables,
          keys,
          compared,
          leftFree,
          rightFree,
          matches,
          parallel,
          lookups,
        )
        probabilistic[step.index] = done
        scheduler.weighed(step, done.report)
        scheduler.searched(step, done.evidence)
        evidence.push(done.evidence)
        scheduler.end(step, opts.onProgress)
        continue
      }
      const p = preparePass(step.index, step.pass, tables, compared, undefined, {
        parallel,
        cheapFirst: opts.cheapFirst,
        lookups,
      })
      prepared.push(p)
      const done = runPass(p, leftFree, rightFree, matches)
      scheduler.searched(step, done)
      scheduler.banded(step, done.band?.report)
      evidence.push(done)
    } catch (err) {
      scheduler.fail(step, err)
    }
    scheduler.end(step, opts.onProgress)
  }
  const t2 = performance.now()
  const failed = scheduler.list().some((r) => r.status !== 'done')
  let finished: Finished | undefined
  if (!failed && opts.onMatches) {
    finished = finishMatches(recipe, scheduler, prepared, probabilistic, matches, left.length)
    opts.onMatches({ left, right, passes: finished.passInfo, matches: finished.matchSet })
  }
  const unmatchedLeft = failed ? emptyUnmatched() : explainUnmatched('l', evidence, leftFree, rightFree)
  const unmatchedRight = failed ? emptyUnmatched() : explainUnmatched('r', evidence, rightFree, leftFree)
  const t3 = performance.now()
  return assembleResult({
    recipe,
    version: opts.version,
    scheduler,
    prepared,
    probabilistic,
    matches,
    left,
    right,
    unmatchedLeft,
    unmatchedRight,
    compared,
    timings: { plan_ms: ms(t1 - t0), match_ms: ms(t2 - t1), evidence_ms: ms(t3 - t2), total_ms: ms(t3 - t0) },
    finished,
  })
}

interface Finished {
  matchSet: MatchSet
  passInfo: PassInfo[]
}

/** The match columns of a run whose passes all finished, and what each pass was. */
function finishMatches(
  recipe: Recipe,
  scheduler: PassScheduler,
  prepared: PreparedPass[],
  probabilistic: ProbabilisticPass[] | undefined,
  matches: MatchBuilder,
  leftRows: number,
): Finished {
  return {
    matchSet: matches.finish(
      scheduler.steps.map((s) => s.index),
      leftRows,
    ),
    passInfo: passInfos(recipe, scheduler, prepared, probabilistic),
  }
}

function passInfos(
  recipe: Recipe,
  scheduler: PassScheduler,
  prepared: PreparedPass[],
  probabilistic: ProbabilisticPass[] | undefined,
): PassInfo[] {
  const passes = scheduler.list()
  return recipe.passes.map((pass, n) =>
    passInfoOf(
      pass,
      prepared.find((p) => p.index === n),
      passes[n],
      probabilistic?.[n],
    ),
  )
}

/**
 * The run's result from its passes' work: the match columns, the unmatched sets and the summary
 * (counts and exact amounts per side and per pass). A failed run commits nothing: its report
 * says why, per pass.
 */
export function assembleResult(run: {
  recipe: Recipe
  version?: number
  scheduler: PassScheduler
  prepared: PreparedPass[]
  /** Probabilistic passes that ran, by index in the recipe. */
  probabilistic?: ProbabilisticPass[]
  matches: MatchBuilder
  left: Table
  right: Table
  unmatchedLeft: UnmatchedSet
  unmatchedRight: UnmatchedSet
  compared: ComparedColumns
  timings: RunSummary['timings']
  /** The matches already finished (and shown to onMatches). */
  finished?: Finished
}): RunResult {
  const { recipe, left, right, compared } = run
  const passes = run.scheduler.list()
  const failed = passes.some((r) => r.status !== 'done')
  const { matchSet, passInfo } = failed
    ? { matchSet: emptyMatches(), passInfo: passInfos(recipe, run.scheduler, run.prepared, run.probabilistic) }
    : (run.finished ?? finishMatches(recipe, run.scheduler, run.prepared, run.probabilistic, run.matches, left.length))
  let ambiguous = 0
  const held = { left: 0, right: 0 }
  for (let k = 0; k < matchSet.count; k++) {
    const report = passes[matchSet.pass[k]]
    report.matches++
    if (matchSet.ambiguous[k]) {
      report.ambiguous++
      ambiguous++
      held.left += matchSet.leftStart[k + 1] - matchSet.leftStart[k]
      held.right += matchSet.rightStart[k + 1] - matchSet.rightStart[k]
    }
  }
  const leftTotals = sideTotals(left, amountColumn(left, compared.amount?.l), matchSet, 'left', passes.length)
  const rightTotals = sideTotals(right, amountColumn(right, compared.amount?.r), matchSet, 'right', passes.length)
  passes.forEach((report, n) => {
    report.left_matched = leftTotals.byPass[n].records
    report.right_matched = rightTotals.byPass[n].records
    report.left_amount = leftTotals.byPass[n].amount
    report.right_amount = rightTotals.byPass[n].amount
  })
  const side = (t: SideTotals, ambiguousRecords: number): SideSummary => ({
    rows: t.rows,
    matched: failed ? 0 : t.matched,
    ambiguous: ambiguousRecords,
    unmatched: failed ? 0 : t.rows - t.matched,
    amount: t.amount,
    matched_amount: failed ? null : t.matchedAmount,
    unmatched_amount: failed ? null : t.unmatchedAmount,
  })
  const leftSummary = side(leftTotals, held.left)
  const rightSummary = side(rightTotals, held.right)
  const summary: RunSummary = {
    recipe: recipe.name,
    recipe_version: run.version ?? null,
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
    timings: run.timings,
  }
  return {
    left,
    right,
    passes: passInfo,
    matches: matchSet,
    unmatchedLeft: failed ? emptyUnmatched() : run.unmatchedLeft,
    unmatchedRight: failed ? emptyUnmatched() : run.unmatchedRight,
    summary,
  }
}

const round = (x: number) => Math.round(x * 1e6) / 1e6
export const ms = (x: number) => Math.round(x * 10) / 10

function passInfoOf(
  pass: RecipePass,
  p: PreparedPass | undefined,
  report: PassReport,
  weighed?: ProbabilisticPass,
): PassInfo {
  if (isProbabilistic(pass)) {
    const conjuncts = weighed?.conjuncts ?? [pass.when ?? `match probability >= ${pass.threshold ?? 0.5}`]
    return {
      name: pass.name,
      pattern: pass.pattern,
      conjuncts,
      join: (pass.block ?? []).join(' OR '),
      amountScale: weighed?.amountScale ?? 0,
      ...(weighed
        ? {
            probabilistic: {
              prior: Math.round(weighed.prior * 1000) / 1000,
              threshold: weighed.threshold,
              comparisons: weighed.comparisons.map((c) => ({ name: c.name, levels: c.labels })),
            },
          }
        : {}),
    }
  }
  const plan = p?.plan
  const search = report.search
  const when = pass.when ?? ''
  // a band pass's join is the band it ran with (the PostgreSQL engine's: the first closed one)
  const band =
    plan && (plan.bands.find((b) => `${b.side}.${b.column}` === report.band?.column) ?? firstClosedBand(plan))
  return {
    name: pass.name,
    pattern: pass.pattern,
    conjuncts: plan ? plan.conjuncts.map((c) => c.text) : [when],
    join: plan ? plan.keys.map((k) => k.text).join(' AND ') || band?.texts.join(' AND ') || '' : when,
    amountScale: p ? p.amountScale : 0,
    ...(search ? { search } : {}),
    ...(pass.prefer ? { prefer: pass.prefer } : {}),
  }
}

/** A hash key between two plain string columns, if the plan has one. */
function referenceKey(
  plan: PassPlan,
  type: (side: 'l' | 'r', column: string) => string | undefined,
): { l: string; r: string } | undefined {
  for (const k of plan.keys) {
    if (k.left.kind !== 'column' || k.right.kind !== 'column') continue
    if (type('l', k.left.name) === 'string' && type('r', k.right.name) === 'string')
      return { l: k.left.name, r: k.right.name }
  }
  return undefined
}

/**
 * The amount and date a probabilistic pass compares: its first relative or absolute comparison
 * of two plain columns (a decimal on one side at least), its first days comparison of two plain
 * columns. Its `when` is a filter, not what it compares.
 */
function comparedPairs(pass: RecipePass, tables: { l: Table; r: Table }): ComparedColumns {
  const out: ComparedColumns = {}
  const plain = (text: string) => /^\s*[lr]\.([A-Za-z_][A-Za-z0-9_]*)\s*$/.exec(text)?.[1]
  const type = (side: 'l' | 'r', c: string) => tables[side].columns.find((x) => x.name === c)?.type
  for (const c of pass.compare ?? []) {
    const pair = c.relative ?? c.absolute ?? c.days
    const l = pair && plain(pair[0])
    const r = pair && plain(pair[1])
    if (!l || !r) continue
    if (c.days) out.date ??= { l, r }
    else if (type('l', l) === 'decimal' || type('r', r) === 'decimal') out.amount ??= { l, r }
  }
  return out
}

export function comparedColumns(recipe: Recipe, tables: { l: Table; r: Table }): ComparedColumns {
  const out: ComparedColumns = {}
  for (const pass of recipe.passes) {
    if (isProbabilistic(pass)) {
      const pairs = comparedPairs(pass, tables)
      out.amount ??= pairs.amount
      out.date ??= pairs.date
      continue
    }
    if (pass.when === undefined) continue
    try {
      const plan = planPass(
        parsePredicate(pass.when),
        pass.when,
        (side, c) => tables[side].columns.find((x) => x.name === c)?.type,
      )
      out.amount ??= plan.amount
      out.date ??= plan.date
      out.reference ??= referenceKey(plan, (side, c) => tables[side].columns.find((x) => x.name === c)?.type)
    } catch {
      // a pass that does not parse reports itself when it runs
    }
  }
  out.keys = { l: recipe.left.key, r: recipe.right.key }
  return out
}
