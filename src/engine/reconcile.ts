// Runs a recipe over two tables: passes in DAG order, each on what earlier passes left, and the
// evidence for every record. Every input record lands in exactly one of matched (a match,
// possibly flagged ambiguous), unmatched-left or unmatched-right.

import { parsePredicate } from '../recipes/predicate.js'
import type { Pattern, Recipe, RecipePass } from '../recipes/schema.js'
import {
  emptyMatches,
  emptyUnmatched,
  MatchBuilder,
  type MatchSet,
  type PassInfo,
  type UnmatchedSet,
} from './evidence.js'
import { explainUnmatched } from './nearmiss.js'
import { type ComparedColumns, type PassEvidence, type PreparedPass, preparePass, runPass } from './pass.js'
import { orderPasses } from './passes.js'
import { planPass } from './plan.js'
import { amountColumn, type SideTotals, sideTotals } from './summary.js'
import type { Table } from './table.js'

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

export function reconcile(recipe: Recipe, left: Table, right: Table, opts: RunOptions = {}): RunResult {
  const t0 = performance.now()
  const tables = { l: left, r: right }
  const order = orderPasses(recipe.passes)
  const leftFree = new Uint8Array(left.length).fill(1)
  const rightFree = new Uint8Array(right.length).fill(1)
  const matches = new MatchBuilder()
  const reports = new Map<string, PassReport>()
  const prepared: PreparedPass[] = []
  const evidence: PassEvidence[] = []
  const compared = comparedColumns(recipe, tables)
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
        evidence.push(runPass(p, leftFree, rightFree, matches))
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
  const unmatchedLeft = failed ? emptyUnmatched() : explainUnmatched('l', evidence, leftFree, rightFree, tables)
  const unmatchedRight = failed ? emptyUnmatched() : explainUnmatched('r', evidence, rightFree, leftFree, tables)
  const t3 = performance.now()

  // counts and amounts per side and per pass, from the match columns
  let ambiguous = 0
  for (let k = 0; k < matchSet.count; k++) {
    const report = passes[matchSet.pass[k]]
    report.matches++
    if (matchSet.ambiguous[k]) {
      report.ambiguous++
      ambiguous++
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
  const side = (t: SideTotals): SideSummary => ({
    rows: t.rows,
    matched: failed ? 0 : t.matched,
    unmatched: failed ? 0 : t.rows - t.matched,
    amount: t.amount,
    matched_amount: failed ? null : t.matchedAmount,
    unmatched_amount: failed ? null : t.unmatchedAmount,
  })
  const leftSummary = side(leftTotals)
  const rightSummary = side(rightTotals)
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
