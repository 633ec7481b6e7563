// Why each unmatched record of a run is an exception, from the evidence the run keeps for it (its
// closest candidate, the pass and first conjunct that candidate failed, whether another record
// took it, a tie `prefer` resolved against it):
//   duplicate                  tied with a record of its side for its candidate; or its candidate
//                              satisfied every conjunct but was taken by another record; or its
//                              candidate was taken by a record of its side with the same amount
//                              (the same transaction twice)
//   missing_counterpart        no record of the other side shares its join in any pass, or its
//                              closest candidate failed a check and was taken by a record that is
//                              not its double (a chargeback beside its sale)
//   fee_variance               its closest candidate (free) failed only amount checks, with the
//                              same sign, and the difference is a fee: it equals another amount
//                              column of either record (a fee the data states), or is within
//                              EXCEPTION_FEE_SHARE of the larger amount (0 turns that rule off)
//   amount_outside_tolerance   the first failed conjunct compares amounts (otherwise), or a group
//                              pass found no group summing to it
//   date_outside_window        the first failed conjunct compares dates
//   other                      any other check, a candidate outscored, a probabilistic pass's
//                              weight below its threshold
// Conjunct kinds come from the parsed predicate and the columns' types (conjuncts.ts). Runs in
// the run's worker thread, over the engine's columns.

import { isProbabilistic, type Recipe } from '../recipes/schema.js'
import type { RunResult } from '../engine/reconcile.js'
import type { Table } from '../engine/data/table.js'
import type { LookupSet } from '../engine/data/lookup.js'
import { ExprCompiler } from '../engine/plan/compile.js'
import { POW10 } from '../engine/data/values.js'
import type { ExactDecimal } from '../language/decimal.js'
import { type PassConjuncts, recipeConjuncts } from './conjuncts.js'

export const REASONS = [
  'missing_counterpart',
  'amount_outside_tolerance',
  'fee_variance',
  'date_outside_window',
  'duplicate',
  'ambiguous',
  'unmatched_by_operator',
  'other',
] as const
export type Reason = (typeof REASONS)[number]

/** A side's amount or date column as the classifier reads it. */
export interface ValueColumn {
  values: Float64Array | Int32Array
  valid: Uint8Array | null
  /** Decimal scale (0 for integers); for dates: 'date' days or 'timestamp' ms. */
  scale: number
  type: 'decimal' | 'integer' | 'date' | 'timestamp'
}

export function valueColumn(table: Table, name: string | undefined): ValueColumn | undefined {
  const c = name === undefined ? -1 : table.columns.findIndex((x) => x.name === name)
  const col = c < 0 ? undefined : table.data[c]
  if (!col) return undefined
  if (col.type === 'decimal') return { values: col.values, valid: col.valid, scale: col.scale, type: 'decimal' }
  if (col.type === 'integer') return { values: col.values, valid: col.valid, scale: 0, type: 'integer' }
  if (col.type === 'date') return { values: col.values, valid: col.valid, scale: 0, type: 'date' }
  if (col.type === 'timestamp') return { values: col.values, valid: col.valid, scale: 0, type: 'timestamp' }
  return undefined
}

export const present = (c: ValueColumn | undefined, row: number): boolean =>
  c !== undefined && (c.valid === null || c.valid[row] === 1)

export interface Classified {
  reason: Reason[]
  /** Own amount minus the candidate's, in units at `differenceScale`; NaN where there is none. */
  difference: Float64Array
}

export interface ClassifyContext {
  recipe: Recipe
  result: RunResult
  amount: { l?: ValueColumn; r?: ValueColumn }
  lookups?: LookupSet
  /** The share of the larger amount a difference may be and still read as a fee; null: off. */
  feeShare: ExactDecimal | null
}

export function differenceScale(amount: ClassifyContext['amount']): number {
  return Math.max(amount.l?.scale ?? 0, amount.r?.scale ?? 0)
}

/**
 * Classifies the unmatched records of one side a range at a time: `classify(from, to)` fills
 * `reason` and `difference` for records from..to. The caller works through them in blocks, each
 * block's candidates read from cache (batch.ts).
 */
export function sideClassifier(
  ctx: ClassifyContext,
  side: 'left' | 'right',
): Classified & { classify(from: number, to: number): void } {
  const { result } = ctx
  const u = side === 'left' ? result.unmatchedLeft : result.unmatchedRight
  const n = u.rows.length
  const own = side === 'left' ? ctx.amount.l : ctx.amount.r
  const other = side === 'left' ? ctx.amount.r : ctx.amount.l
  const scale = differenceScale(ctx.amount)
  const types = (s: 'l' | 'r', c: string) =>
    (s === 'l' ? result.left : result.right).columns.find((x) => x.name === c)?.type
  const passes = recipeConjuncts(ctx.recipe, types)
  const holds = new OtherChecks(ctx, passes)
  const fees = new FeeColumns(ctx, scale)
  const takers = new Takers(ctx, side)
  const reason = new Array<Reason>(n)
  const difference = new Float64Array(n).fill(Number.NaN)
  const classify = (from: number, to: number) => {
    for (let k = from; k < to; k++) {
      const row = u.rows[k]
      const cand = u.candidate[k]
      const p = u.pass[k]
      if (cand >= 0 && present(own, row) && present(other, cand))
        difference[k] = own!.values[row] * POW10[scale - own!.scale] - other!.values[cand] * POW10[scale - other!.scale]
      if (u.tiedWith[k] >= 0) {
        reason[k] = 'duplicate'
        continue
      }
      if (cand < 0 || p < 0) {
        reason[k] = 'missing_counterpart'
        continue
      }
      const pass = ctx.recipe.passes[p]
      const conj = u.conjunct[k]
      if (conj < 0) {
        // the candidate satisfied every conjunct of the pass
        reason[k] = u.candidateTaken[k]
          ? 'duplicate'
          : pass.pattern !== '1:1' && !isProbabilistic(pass)
            ? 'amount_outside_tolerance'
            : 'other'
        continue
      }
      if (u.candidateTaken[k]) {
        reason[k] = takers.sameAmount(row, cand) ? 'duplicate' : 'missing_counterpart'
        continue
      }
      const kind = passes[p]?.kinds[conj] ?? 'other'
      if (kind === 'date') reason[k] = 'date_outside_window'
      else if (kind !== 'amount') reason[k] = 'other'
      else {
        const [l, r] = side === 'left' ? [row, cand] : [cand, row]
        const d = difference[k]
        const feeLike =
          !Number.isNaN(d) &&
          d !== 0 &&
          Math.sign(own!.values[row]) === Math.sign(other!.values[cand]) &&
          holds.otherThanAmounts(p, l, r) &&
          (fees.stated(Math.abs(d), l, r) || fees.withinShare(Math.abs(d), own!, row, other!, cand))
        reason[k] = feeLike ? 'fee_variance' : 'amount_outside_tolerance'
      }
    }
  }
  return { reason, difference, classify }
}

/** The records of a side that took the candidates of its unmatched records (the match holding each candidate). */
class Takers {
  private readonly matchOf: Int32Array
  constructor(
    private readonly ctx: ClassifyContext,
    private readonly side: 'left' | 'right',
  ) {
    const m = ctx.result.matches
    const [start, rows, length] =
      side === 'left'
        ? [m.rightStart, m.rightRows, ctx.result.right.length]
        : [m.leftStart, m.leftRows, ctx.result.left.length]
    this.matchOf = new Int32Array(length).fill(-1)
    for (let k = 0; k < m.count; k++) for (let x = start[k]; x < start[k + 1]; x++) this.matchOf[rows[x]] = k
  }

  /** Whether a record of the match that took `candidate` has the amount `row` has (true when amounts are unknown). */
  sameAmount(row: number, candidate: number): boolean {
    const amount = this.side === 'left' ? this.ctx.amount.l : this.ctx.amount.r
    const k = this.matchOf[candidate]
    if (k < 0 || !present(amount, row)) return true
    const m = this.ctx.result.matches
    const [start, rows] = this.side === 'left' ? [m.leftStart, m.leftRows] : [m.rightStart, m.rightRows]
    for (let x = start[k]; x < start[k + 1]; x++)
      if (!present(amount, rows[x]) || amount!.values[rows[x]] === amount!.values[row]) return true
    return false
  }
}

/** Whether a pair satisfies every conjunct of a pass that is not an amount check (compiled once per pass). */
class OtherChecks {
  private readonly compiled = new Map<number, ((i: number, j: number) => boolean) | null>()
  constructor(
    private readonly ctx: ClassifyContext,
    private readonly passes: (PassConjuncts | null)[],
  ) {}

  otherThanAmounts(pass: number, l: number, r: number): boolean {
    let check = this.compiled.get(pass)
    if (check === undefined) {
      check = this.compile(pass)
      this.compiled.set(pass, check)
    }
    return check !== null && check(l, r)
  }

  private compile(pass: number): ((i: number, j: number) => boolean) | null {
    const conj = this.passes[pass]
    if (!conj) return null
    const { left, right } = this.ctx.result
    try {
      // few rows of each side are read: their strings are decoded as they are
      const compiler = new ExprCompiler(
        { l: left.columns, r: right.columns },
        { l: left, r: right },
        this.ctx.lookups,
        true,
      )
      const tests = conj.exprs
        .filter((_, c) => conj.kinds[c] !== 'amount')
        .map((e) => `${compiler.compile(e).code} === true`)
      return tests.length ? compiler.build<(i: number, j: number) => boolean>('i, j', tests.join(' && ')) : () => true
    } catch {
      // a column the result's tables do not hold (the PostgreSQL engine keeps only what assignment reads)
      return null
    }
  }
}

/** The other decimal columns of both sides, where a record may state the fee that explains a difference. */
class FeeColumns {
  private readonly columns: { side: 'l' | 'r'; values: Float64Array; valid: Uint8Array | null; scale: number }[] = []
  constructor(
    private readonly ctx: ClassifyContext,
    private readonly scale: number,
  ) {
    for (const [side, table, amount] of [
      ['l', ctx.result.left, ctx.amount.l],
      ['r', ctx.result.right, ctx.amount.r],
    ] as const) {
      table.data.forEach((col) => {
        if ((col.type === 'decimal' || col.type === 'integer') && col.values !== amount?.values)
          this.columns.push({
            side,
            values: col.values,
            valid: col.valid,
            scale: col.type === 'decimal' ? col.scale : 0,
          })
      })
    }
  }

  /** |d| (units at the difference's scale) equals a stated amount of the left or right record. */
  stated(d: number, l: number, r: number): boolean {
    for (const c of this.columns) {
      const row = c.side === 'l' ? l : r
      if (c.valid !== null && c.valid[row] === 0) continue
      const v = Math.abs(c.values[row])
      // compared at the finer scale, exactly
      if (c.scale <= this.scale ? v * POW10[this.scale - c.scale] === d : v === d * POW10[c.scale - this.scale])
        return true
    }
    return false
  }

  /** |d| <= share × the larger absolute amount, exactly (BigInt: the product can pass 2^53). */
  withinShare(d: number, own: ValueColumn, row: number, other: ValueColumn, cand: number): boolean {
    const share = this.ctx.feeShare
    if (!share || share.units <= 0n) return false
    const a = Math.abs(own.values[row]) * POW10[this.scale - own.scale]
    const b = Math.abs(other.values[cand]) * POW10[this.scale - other.scale]
    return BigInt(d) * 10n ** BigInt(share.scale) <= share.units * BigInt(Math.max(a, b))
  }
}
