// The compiled conjunct checks of a pass, used by both joins and by the evidence of unmatched
// records. A pass's conjuncts (not the key equalities of a hash pass, which hold for every pair
// its join produces) are split by cost (plan/cost.ts) into cheap ones and costly ones
// (similarity(), levenshtein(), regexp_replace, a LIKE pattern built from the row):
//   cheapHolds  whether a pair satisfies every cheap conjunct, cheapest first, stopping at the
//               first that fails: most pairs a band visits end here
//   cheap       which cheap conjuncts a pair fails, as a bitmask
//   costly      which costly ones it fails
// `cheap | costly` is the full mask a record's nearest miss is judged by (how many conjuncts a
// pair fails, and the first one written). The joins compute `costly` only where its answer can
// change an outcome: a candidate, or a nearest miss (hashpass.ts `improves`, bandpass.ts). Bits
// follow the order written whatever order the checks run in, so the first failed conjunct is the
// first written.

import type { ExprCompiler } from '../plan/compile.js'
import { COSTLY } from '../plan/cost.js'
import type { Conjunct, PassPlan } from '../plan/plan.js'

/** Bits available for individual conjuncts; any beyond share the last bit. */
const CONJUNCT_BITS = 30

export interface ConjunctChecks {
  /** True when the pair satisfies every cheap conjunct (true when there is none). */
  cheapHolds: (i: number, j: number) => boolean
  /** Bits of the cheap conjuncts the pair fails (NULL fails, as in SQL). */
  cheap: (i: number, j: number) => number
  /** Bits of the costly conjuncts the pair fails; null when the pass has none. */
  costly: ((i: number, j: number) => number) | null
  /**
   * False when every conjunct of every pair a join visits is to be evaluated, in the order
   * written, nothing skipped: the reference the ordered, lazy evaluation is held to
   * (test/check-order.test.ts). The same split and the same results, only slower.
   */
  lazy: boolean
  /** checked[b] is the index in the plan's conjuncts of bit b. */
  checked: number[]
  /** Conjuncts of the pass, checked or not. */
  total: number
  /** The bits of the costly conjuncts, and how many there are (a nearest miss's rank: hashpass.ts `rank`). */
  costlyBits: number
  costlyCount: number
  /**
   * The pass's `similarity()` (the one its score reads) as the last evaluation of `costly`
   * computed it: right after a check that found a pair to be a candidate, that pair's value. NaN
   * when it was NULL. Null when nothing is kept.
   */
  kept: (() => number) | null
}

/** Checks of a pass whose candidates another engine finds: nothing to check here. */
export function noChecks(total: number): ConjunctChecks {
  return {
    cheapHolds: () => true,
    cheap: () => 0,
    costly: null,
    lazy: true,
    checked: [],
    total,
    costlyBits: 0,
    costlyCount: 0,
    kept: null,
  }
}

/**
 * The conjuncts a pass checks per pair (not its key equalities, which hold for every pair its
 * join gives), in the order written, and the same split by cost. The PostgreSQL engine ranks
 * nearest misses with the same split (connectors/postgres/pushdown.ts).
 */
export function checkedConjuncts(plan: PassPlan): { checked: Conjunct[]; cheap: Conjunct[]; costly: Conjunct[] } {
  const keyConjuncts = new Set(plan.keys.map((k) => k.conjunct))
  const checked = plan.conjuncts.filter((c) => !keyConjuncts.has(c.index))
  return {
    checked,
    cheap: checked.filter((c) => c.cost < COSTLY),
    costly: checked.filter((c) => c.cost >= COSTLY),
  }
}

/** Compiles a pass's checks; `lazy` false evaluates everything, as written (see `lazy`). */
export function conjunctChecks(plan: PassPlan, compiler: ExprCompiler, lazy = true): ConjunctChecks {
  const { checked, cheap, costly } = checkedConjuncts(plan)
  const total = plan.conjuncts.length
  if (checked.length === 0) return noChecks(total)

  const call = plan.similarity?.call
  // a similarity() read back by the score must be one a costly conjunct computes
  const cell = lazy && call && costly.some((c) => contains(c.expr, call)) ? compiler.keep(call) : null
  const test = (c: Conjunct) => `${compiler.compile(c.expr).code} === true`
  const bit = new Map(checked.map((c, b) => [c.index, 2 ** Math.min(b, CONJUNCT_BITS)]))
  const mask = (list: Conjunct[]) => {
    if (list.length === 0) return null
    const own = list.filter((c) => bit.get(c.index)! < 2 ** CONJUNCT_BITS)
    const rest = list.filter((c) => bit.get(c.index)! === 2 ** CONJUNCT_BITS)
    const terms = own.map((c) => `(${test(c)} ? 0 : ${bit.get(c.index)})`)
    if (rest.length) terms.push(`(${rest.map(test).join(' && ')} ? 0 : ${2 ** CONJUNCT_BITS})`)
    return compiler.build<(i: number, j: number) => number>('i, j', terms.join(' | '))
  }
  const cheapMask = mask(cheap) ?? (() => 0)
  const byCost = [...cheap].sort((a, b) => a.cost - b.cost || a.index - b.index)
  return {
    cheapHolds: !lazy
      ? (i, j) => cheapMask(i, j) === 0
      : byCost.length
        ? compiler.build<(i: number, j: number) => boolean>('i, j', byCost.map(test).join(' && '))
        : () => true,
    cheap: cheapMask,
    costly: mask(costly),
    lazy,
    checked: checked.slice(0, CONJUNCT_BITS + 1).map((c) => c.index),
    total,
    costlyBits: costly.reduce((bits, c) => bits | bit.get(c.index)!, 0),
    costlyCount: costly.length,
    kept: cell ? () => cell.v ?? Number.NaN : null,
  }
}

/** Whether `node` is inside `e` (the very object, not an equal one). */
function contains(e: object, node: object): boolean {
  if (e === node) return true
  for (const v of Object.values(e)) {
    if (v && typeof v === 'object') {
      if (Array.isArray(v)) {
        if (v.some((x) => x && typeof x === 'object' && contains(x, node))) return true
      } else if (contains(v, node)) return true
    }
  }
  return false
}
