// One pass of a recipe compiled over the sample tables by the engine's own compiler: its `when`
// split into the planner's conjuncts (so a rejected pair is told which conjunct rejected it), a
// probabilistic pass's blocking rules, and an aggregate pass's group equation. Every answer here
// is the one the engine would give on those rows, NULLs failing as in SQL.

import { parseAggregate } from '../language/aggregate-check.js'
import { decimalText } from '../language/decimal.js'
import { type Expr, parsePredicate } from '../language/predicate.js'
import type { Table } from '../engine/data/table.js'
import { ExprCompiler } from '../engine/plan/compile.js'
import { conjunctCost } from '../engine/plan/cost.js'
import { planPass, referencedColumns } from '../engine/plan/plan.js'
import { prepareAggregate } from '../engine/match/group-pass.js'
import type { GroupTolerance } from '../language/aggregate.js'
import { printGroupSum } from '../language/aggregate.js'
import { isProbabilistic, type RecipePass } from '../recipes/schema.js'

export type PairCheck = (i: number, j: number) => boolean

/** A condition checked on one (left row, right row) pair. */
export interface SampleCheck {
  text: string
  expr: Expr
  holds: PairCheck
  /** The planner's cost of checking it on one pair (plan/cost.ts). */
  cost: number
}

/** How a confirmed group fares against an aggregate pass's equation. */
export interface GroupFit {
  fits: boolean
  /** The group's value minus `equals` ("-12.30"), or why there is none ("a NULL amount"). */
  delta: string
}

export interface SampleAggregate {
  /** "SUM(l.net_amount) - 0.49 = r.amount within 0" */
  text: string
  tolerance: GroupTolerance
  /** The summed side's per-record amount, exact: units at `eachScale`; null for NULL. */
  each: (row: number) => number | null
  eachScale: number
  /** × each record's amount in the group's value. */
  factor: { units: bigint; scale: number }
  sumSide: 'l' | 'r'
  /** Null when the group's shape is not one the pattern sums (two `equals` records for 1:N). */
  fit(lefts: number[], rights: number[]): GroupFit | null
}

export interface PassOnSamples {
  pass: RecipePass
  /** The `when`'s top-level conjuncts, in the order written (none for a probabilistic pass without one). */
  conjuncts: SampleCheck[]
  /** The same, cheapest first: how a pair is admitted or not, as the joins check it. */
  cheapFirst: SampleCheck[]
  /** Probabilistic passes: the blocking rules; a pair is a candidate when any holds. */
  blocks: SampleCheck[]
  aggregate?: SampleAggregate
  compiler: ExprCompiler
  /** Every column the pass reads, per side. */
  reads: { l: Set<string>; r: Set<string> }
}

/** Compiles a pass over the samples. Throws the compiler's errors (a lookup() without its tables). */
export function passOnSamples(pass: RecipePass, tables: { l: Table; r: Table }): PassOnSamples {
  const compiler = new ExprCompiler({ l: tables.l.columns, r: tables.r.columns }, tables)
  const types = (side: 'l' | 'r', c: string) => tables[side].columns.find((x) => x.name === c)?.type
  const check = (text: string, expr: Expr, cost = conjunctCost(expr)): SampleCheck => ({
    text,
    expr,
    holds: compiler.build<PairCheck>('i, j', `${compiler.compile(expr).code} === true`),
    cost,
  })
  const conjuncts: SampleCheck[] = []
  if (pass.when !== undefined) {
    const plan = planPass(parsePredicate(pass.when), pass.when, types)
    for (const c of plan.conjuncts) conjuncts.push(check(c.text, c.expr, c.cost))
  }
  const cheapFirst = [...conjuncts].sort((a, b) => a.cost - b.cost)
  const blocks = isProbabilistic(pass) ? (pass.block ?? []).map((rule) => check(rule, parsePredicate(rule))) : []
  const aggregate = pass.aggregate && pass.pattern !== '1:1' ? sampleAggregate(pass, compiler) : undefined
  const reads = referencedColumns([
    ...conjuncts.map((c) => c.expr),
    ...blocks.map((b) => b.expr),
    ...(aggregate ? aggregateReads(pass) : []),
  ])
  return { pass, conjuncts, cheapFirst, blocks, aggregate, compiler, reads }
}

/** Whether the pass would consider the pair: every conjunct holds and, for a probabilistic pass, a blocking rule. */
export function admits(p: PassOnSamples, i: number, j: number): boolean {
  return p.cheapFirst.every((c) => c.holds(i, j)) && (p.blocks.length === 0 || p.blocks.some((b) => b.holds(i, j)))
}

function aggregateReads(pass: RecipePass): Expr[] {
  const parsed = parseAggregate(pass.aggregate!, pass.pattern)
  return [parsed.sum.each, parsed.equals]
}

function sampleAggregate(pass: RecipePass, compiler: ExprCompiler): SampleAggregate {
  const agg = pass.aggregate!
  const parsed = parseAggregate(agg, pass.pattern)
  const prepared = prepareAggregate(pass, compiler)
  const { equation } = prepared
  const tol = parsed.tolerance
  const within =
    tol.below.units === tol.above.units && tol.below.scale === tol.above.scale
      ? decimalText(tol.below)
      : `${decimalText(tol.below)} below, ${decimalText(tol.above)} above`
  const sumSide = parsed.sum.side
  return {
    text: `${printGroupSum(parsed.sum)} = ${agg.equals} within ${within}`,
    tolerance: tol,
    each: prepared.each,
    eachScale: compiler.compile(parsed.sum.each).type.scale ?? 0,
    factor: parsed.sum.factor,
    sumSide,
    fit(lefts, rights) {
      const [summed, others] = sumSide === 'l' ? [lefts, rights] : [rights, lefts]
      // 1:N and N:1 compare the group with one record; N:M with the other side's sum
      if (pass.pattern !== 'N:M' && others.length !== 1) return null
      const total = (rows: number[], value: (row: number) => number | null) => {
        let s = 0
        for (const row of rows) {
          const v = value(row)
          if (v === null) return null
          s += v
        }
        return s
      }
      const sum = total(summed, prepared.each)
      const equals = total(others, prepared.equals)
      if (sum === null || equals === null) return { fits: false, delta: 'a NULL amount' }
      const w = equation.window(equals)
      const delta = decimalText({ units: BigInt(equation.delta(equals, sum)), scale: equation.scale })
      return { fits: sum >= w.lo && sum <= w.hi, delta }
    },
  }
}
