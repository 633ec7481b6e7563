// Scores and deltas of candidate pairs, from the columns the predicate compares: closeness of
// amounts (relative to the amount), of dates, and name similarity. A score is in 0..1, 1 for
// identical amounts and dates. Deltas are numbers: the amount delta in exact units
// at the pass's amount scale (left minus right), the date delta in days (right minus left).

import type { Expr } from '../../language/predicate.js'
import type { ExprCompiler } from '../plan/compile.js'
import type { PassPlan, SimilarityPair } from '../plan/plan.js'
import { trigramSimilarity } from '../plan/runtime.js'

const DAY_MS = 86_400_000
const col = (side: 'l' | 'r', name: string): Expr => ({ kind: 'column', side, name, pos: { start: 0, end: 0 } })

type Reader<T> = (row: number) => T | null

export interface PairScorer {
  score(i: number, j: number): number
  /** How alike a pair is apart from amounts (date closeness, similarity) in 0..1: ranks a group's candidates. */
  likeness(i: number, j: number): number
  /** Scale of amount deltas; -1 when the amounts are floats (deltas are then plain numbers). */
  amountScale: number
  /** Left amount minus right amount (sums for groups), or NaN when there is no amount pair or a NULL. */
  amountDelta(left: ArrayLike<number>, right: ArrayLike<number>): number
  pairAmountDelta(i: number, j: number): number
  /** Right date minus left date in days (first record of each side), or NaN. */
  days(i: number, j: number): number
  /**
   * The same scorer, taking a pair's similarity from `kept` (what its candidate check computed)
   * instead of computing it again; NaN from `kept` means not kept, and it is computed.
   */
  reusing(kept: (i: number, j: number) => number): PairScorer
}

/** What a pass scores by: its plan's pairs, or those the recipe's other passes compare. */
export type ScoredPairs = Pick<PassPlan, 'amount' | 'date'> & { similarity?: SimilarityPair }

export function scorer(plan: ScoredPairs, compiler: ExprCompiler): PairScorer {
  const readers = compileReaders(plan, compiler)
  const computed = (i: number, j: number): number | null => {
    const a = readers.nameL!(i)
    const b = readers.nameR!(j)
    return a === null || b === null ? null : trigramSimilarity(a, b)
  }
  return scorerWith(readers, readers.nameL ? computed : null)
}

interface Readers {
  amountL?: Reader<number>
  amountR?: Reader<number>
  amountScale: number
  dateL?: Reader<number>
  dateR?: Reader<number>
  dateUnit: number
  nameL?: Reader<string>
  nameR?: Reader<string>
}

function compileReaders(plan: ScoredPairs, compiler: ExprCompiler): Readers {
  let amountL: Reader<number> | undefined
  let amountR: Reader<number> | undefined
  let amountScale = 0
  if (plan.amount) {
    const [l, r, common] = compiler.operands(col('l', plan.amount.l), col('r', plan.amount.r))
    amountL = compiler.build('i', l.code)
    amountR = compiler.build('j', r.code)
    amountScale = common.kind === 'decimal' ? (common.scale ?? 0) : common.kind === 'float' ? -1 : 0
  }
  let dateL: Reader<number> | undefined
  let dateR: Reader<number> | undefined
  let dateUnit = 1
  if (plan.date) {
    const [l, r, common] = compiler.operands(col('l', plan.date.l), col('r', plan.date.r))
    dateL = compiler.build('i', l.code)
    dateR = compiler.build('j', r.code)
    dateUnit = common.kind === 'timestamp' ? DAY_MS : 1
  }
  let nameL: Reader<string> | undefined
  let nameR: Reader<string> | undefined
  if (plan.similarity) {
    const s = plan.similarity
    nameL = compiler.build('i', compiler.compile(s.left ?? col('l', s.l)).code)
    nameR = compiler.build('j', compiler.compile(s.right ?? col('r', s.r)).code)
  }
  return { amountL, amountR, amountScale, dateL, dateR, dateUnit, nameL, nameR }
}

/** The scorer over compiled readers; `similarity` gives a pair's name similarity (null: a NULL name). */
function scorerWith(readers: Readers, similarity: ((i: number, j: number) => number | null) | null): PairScorer {
  const { amountL, amountR, amountScale, dateL, dateR, dateUnit } = readers
  const amountUnit = amountScale < 0 ? 0.01 : 1

  // Closeness decays smoothly and never saturates: two candidates that are both far off still
  // rank by how far (a sale beats a chargeback of the same order), so real ties stay rare.
  const closeness = (i: number, j: number, amounts: boolean): number => {
    let total = 0
    let parts = 0
    if (amounts && amountL && amountR) {
      const a = amountL(i)
      const b = amountR(j)
      if (a !== null && b !== null) {
        total += 1 / (1 + Math.abs(a - b) / Math.max(Math.abs(a) * 0.01, amountUnit))
        parts++
      }
    }
    if (dateL && dateR) {
      const a = dateL(i)
      const b = dateR(j)
      if (a !== null && b !== null) {
        total += 1 / (1 + Math.abs(b - a) / dateUnit / 7)
        parts++
      }
    }
    if (similarity) {
      const v = similarity(i, j)
      if (v !== null) {
        total += v
        parts++
      }
    }
    return parts === 0 ? 1 : total / parts
  }
  const score = (i: number, j: number) => closeness(i, j, true)
  const likeness = (i: number, j: number) => closeness(i, j, false)

  const amountDelta = (left: ArrayLike<number>, right: ArrayLike<number>): number => {
    if (!amountL || !amountR) return Number.NaN
    let sum = 0
    for (let k = 0; k < left.length; k++) {
      const v = amountL(left[k])
      if (v === null) return Number.NaN
      sum += v
    }
    for (let k = 0; k < right.length; k++) {
      const v = amountR(right[k])
      if (v === null) return Number.NaN
      sum -= v
    }
    return sum
  }

  const pairAmountDelta = (i: number, j: number): number => {
    if (!amountL || !amountR) return Number.NaN
    const a = amountL(i)
    const b = amountR(j)
    return a === null || b === null ? Number.NaN : a - b
  }

  const days = (i: number, j: number): number => {
    if (!dateL || !dateR) return Number.NaN
    const a = dateL(i)
    const b = dateR(j)
    if (a === null || b === null) return Number.NaN
    return Math.round(((b - a) / dateUnit) * 1000) / 1000
  }

  const reusing = (kept: (i: number, j: number) => number): PairScorer => {
    if (!similarity) return scorer
    const computed = similarity
    return scorerWith(readers, (i, j) => {
      const v = kept(i, j)
      return Number.isNaN(v) ? computed(i, j) : v
    })
  }
  const scorer: PairScorer = { score, likeness, amountScale, amountDelta, pairAmountDelta, days, reusing }
  return scorer
}
