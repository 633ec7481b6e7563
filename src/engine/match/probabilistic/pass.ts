// A probabilistic pass, start to end: blocking rules find the candidate pairs among the free
// records, each comparison puts every candidate in a level, the model (given, or learned by
// model.ts) turns levels into match weights and probabilities, candidates at or above the
// threshold (and meeting `when`, if the pass has one) are assigned one to one like any 1:1 pass,
// and every match keeps its waterfall. Unmatched records keep their best candidate as nearest
// miss: one below the threshold failed "match probability >= t"; one above it lost the assignment.

import { parsePredicate } from '../../../language/predicate.js'
import type { RecipePass, RecipeModel } from '../../../recipes/schema.js'
import type { LookupSet } from '../../data/lookup.js'
import type { Table } from '../../data/table.js'
import { type MatchBuilder, recordKeyReader } from '../../explain/evidence.js'
import { ExprCompiler } from '../../plan/compile.js'
import { type Conjunct, planPass } from '../../plan/plan.js'
import { assignOneToOne } from '../assign.js'
import { pairOrder } from '../prefer.js'
import type { NearMisses } from '../hashpass.js'
import { nearMisses } from '../hashpass.js'
import { PairList } from '../join.js'
import type { ComparedColumns, PassEvidence } from '../pass.js'
import { scorer } from '../score.js'
import { blockedPairs, type BlockingReport } from './blocking.js'
import { type Comparison, prepareComparison } from './comparisons.js'
import {
  estimateU,
  initialModel,
  type Model,
  modelFrom,
  modelJson,
  pairLevels,
  matchProbabilities,
  pairEvidence,
  priorWeight,
  type Training,
  trainModel,
} from './model.js'

export const DEFAULT_THRESHOLD = 0.5

/** The level a waterfall's last entry carries: the one-to-one context, not a comparison. */
export const CONTEXT_LEVEL = 254

/** log2 of the odds of a probability, bounded so that 0 and 1 stay finite. */
const logit2 = (p: number) => Math.log2(Math.max(p, 1e-300) / Math.max(1 - p, 1e-300))
const DEFAULT_SAMPLE = 200_000
const DEFAULT_ITERATIONS = 25

/** What a probabilistic pass reports (in the run summary): the model it used is the one to reuse. */
export interface ProbabilisticReport {
  blocking: BlockingReport[]
  /** Candidate pairs weighed (all rules). */
  candidates: number
  /** Candidates at or above the threshold (and meeting `when`). */
  above_threshold: number
  threshold: number
  training: Training
  model: RecipeModel
}

export interface ProbabilisticPass {
  /** The pass's conjuncts as evidence shows them: `when`'s, then "match probability >= t". */
  conjuncts: string[]
  comparisons: Comparison[]
  prior: number
  threshold: number
  evidence: PassEvidence
  report: ProbabilisticReport
  /** Scale of amount deltas (as PreparedPass.amountScale). */
  amountScale: number
}

export function runProbabilisticPass(
  index: number,
  pass: RecipePass,
  tables: { l: Table; r: Table },
  keys: { left: string[]; right: string[] },
  compared: ComparedColumns,
  leftFree: Uint8Array,
  rightFree: Uint8Array,
  out: MatchBuilder,
  parallel: boolean,
  /** The run's lookup tables: lookup() works in comparisons, blocking rules and `when` too. */
  lookups?: LookupSet,
): ProbabilisticPass {
  const schemas = { l: tables.l.columns, r: tables.r.columns, ...(lookups ? { lookups: lookups.schemas } : {}) }
  const compiler = new ExprCompiler(schemas, tables, lookups)
  const comparisons = (pass.compare ?? []).map((spec) => prepareComparison(spec, compiler, tables))
  const threshold = pass.threshold ?? DEFAULT_THRESHOLD
  const condition = conditionChecks(pass, compiler, tables)
  const conjuncts = [...condition.conjuncts.map((c) => c.text), `match probability >= ${threshold}`]
  const probabilityBit = 2 ** condition.conjuncts.length

  const { pairs, reports } = blockedPairs(pass.block ?? [], tables, leftFree, rightFree, parallel, lookups)
  const anchors = confirmedPairs(pass, tables, keys, pairs)
  const levels = pairLevels(comparisons, pairs)
  const leftRows = freeRows(leftFree)
  const rightRows = freeRows(rightFree)
  let model: Model
  let training: Training
  if (pass.model) {
    model = modelFrom(pass.model, comparisons)
    training = { trained: false, iterations: 0, converged: true, u_pairs: 0, matches: 0 }
  } else {
    const sample = estimateU(
      comparisons,
      leftRows,
      rightRows,
      pass.train?.sample_pairs ?? DEFAULT_SAMPLE,
      pass.train?.seed ?? 1,
    )
    const free = {
      left: leftRows.length,
      right: rightRows.length,
      leftLength: tables.l.length,
      rightLength: tables.r.length,
    }
    const start = initialModel(comparisons, sample.u, free.left, free.right)
    const trained = trainModel(
      start,
      levels,
      pairs,
      comparisons,
      free,
      anchors,
      pass.train?.max_iterations ?? DEFAULT_ITERATIONS,
    )
    model = trained.model
    training = {
      trained: true,
      iterations: trained.iterations,
      converged: trained.converged,
      u_pairs: sample.pairs,
      matches: trained.matches,
    }
  }
  const weighed = pairEvidence(model, levels, pairs, comparisons, true)
  const evidence = weighed.evidence
  const free = {
    left: leftRows.length,
    right: rightRows.length,
    leftLength: tables.l.length,
    rightLength: tables.r.length,
  }
  const probabilities = matchProbabilities(weighed, levels, pairs, model.lambda, free)
  const prior = priorWeight(model.lambda)

  // candidates that qualify, by (left, right) row; every candidate is a near miss of its records
  const near = {
    left: nearMisses(tables.l.length, conjuncts.length),
    right: nearMisses(tables.r.length, conjuncts.length),
  }
  const best = {
    left: new Float64Array(tables.l.length).fill(-Infinity),
    right: new Float64Array(tables.r.length).fill(-Infinity),
  }
  const eligible = new PairList(Math.min(pairs.length, Math.max(leftRows.length, rightRows.length)))
  const eligibleIndex = new Map<number, number>()
  const width = tables.r.length
  for (let k = 0; k < pairs.length; k++) {
    const i = pairs.left[k]
    const j = pairs.right[k]
    if (leftFree[i] === 0 || rightFree[j] === 0) continue // a confirmed pair an earlier pass took
    const failed = condition.failed(i, j) | (probabilities[k] >= threshold ? 0 : probabilityBit)
    if (failed === 0) {
      eligible.push(i, j)
      eligibleIndex.set(i * width + j, k)
    }
    keepNearest(near.left, best.left, i, j, failed, evidence[k], condition.checks)
    keepNearest(near.right, best.right, j, i, failed, evidence[k], condition.checks)
  }

  const s = scorer(deltaPairs(comparisons, compared, tables), compiler)
  const at = (i: number, j: number) => eligibleIndex.get(i * width + j)!
  // the waterfall: each comparison's weight, then the context (what the one-to-one reading adds)
  const detail = (k: number, i: number) => {
    const lv = levels.levels.map((l) => l[k])
    const w = contributions(model, lv, comparisons, i)
    lv.push(CONTEXT_LEVEL)
    w.push(logit2(probabilities[k]) - prior - evidence[k])
    return out.waterfall(lv, w)
  }
  const score = (k: number) => Math.round(probabilities[k] * 1e6) / 1e6
  // assignment ranks by evidence: probabilities saturate near 1, the evidence keeps ordering them
  const scored = deltaPairs(comparisons, compared, tables)
  const prefer = pass.prefer
    ? pairOrder(pass.prefer, {
        scored,
        compiler,
        scorer: s,
        leftRows: null,
        rightRows: null,
        tables,
        keys: compared.keys ?? { l: [], r: [] },
      })
    : undefined
  const passedOver: NonNullable<PassEvidence['passedOver']> = []
  const assignment = assignOneToOne(
    eligible.left,
    eligible.right,
    eligible.length,
    (i, j) => evidence[at(i, j)],
    leftFree,
    rightFree,
    {
      pair: (i, j) => {
        const k = at(i, j)
        leftFree[i] = 0
        rightFree[j] = 0
        out.pair(index, i, j, score(k), false, s.pairAmountDelta(i, j), s.days(i, j), detail(k, i))
      },
      // a tie's score, deltas and waterfall are those of (i, j), a pair of an optimal assignment
      tie: (l, r, _, i, j) => {
        for (const x of l) leftFree[x] = 0
        for (const y of r) rightFree[y] = 0
        const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b)
        const k = at(i, j)
        out.group(index, sorted(l), sorted(r), score(k), true, s.pairAmountDelta(i, j), s.days(i, j), detail(k, i))
      },
      passedOver: (side, record, winner, partner) => passedOver.push({ side, record, winner, partner }),
    },
    { prefer },
  )

  const identity = (n: number) => Int32Array.from({ length: n }, (_, k) => k)
  return {
    conjuncts,
    comparisons,
    prior: priorWeight(model.lambda),
    threshold,
    amountScale: s.amountScale,
    evidence: {
      index,
      assignment,
      ...(passedOver.length ? { passedOver } : {}),
      near: {
        left: near.left,
        right: near.right,
        leftRows: identity(tables.l.length),
        rightRows: identity(tables.r.length),
        leftFree: Uint8Array.from(leftFree),
        rightFree: Uint8Array.from(rightFree),
      },
    },
    report: {
      blocking: reports,
      candidates: pairs.length,
      above_threshold: eligible.length,
      threshold,
      training,
      model: modelJson(model, comparisons),
    },
  }
}

/** Each comparison's weight for one pair (with the term-frequency adjustment), for its waterfall. */
function contributions(model: Model, levels: number[], comparisons: Comparison[], i: number): number[] {
  return levels.map((l, c) => {
    if (l === 255) return 0
    const share = comparisons[c].valueShare
    if (share && l === 0) return Math.log2(model.m[c][0] / share(i))
    return Math.log2(model.m[c][l] / model.u[c][l])
  })
}

/**
 * A record's nearest miss in this pass: the candidate failing the fewest conjuncts, the heavier
 * one among those failing as few.
 */
function keepNearest(
  near: NearMisses,
  best: Float64Array,
  own: number,
  other: number,
  failed: number,
  weight: number,
  checks: ConditionBits,
): void {
  let missed = 1
  for (let x = failed; x !== 0; x &= x - 1) missed++
  const current = near.missed[own]
  if (current !== 0 && (missed > current || (missed === current && weight <= best[own]))) return
  near.missed[own] = missed
  near.candidate[own] = other
  best[own] = weight
  if (failed !== 0) near.conjunct[own] = checks.checked[31 - Math.clz32(failed & -failed)]
}

/** `when`'s conjuncts, all checked on every candidate (a probabilistic pass joins on none of them). */
/** Which conjunct each bit of a failure mask stands for (checked[b] for bit b). */
interface ConditionBits {
  checked: number[]
}

function conditionChecks(
  pass: RecipePass,
  compiler: ExprCompiler,
  tables: { l: Table; r: Table },
): { conjuncts: Conjunct[]; checks: ConditionBits; failed: (i: number, j: number) => number } {
  const conjuncts = pass.when
    ? planPass(parsePredicate(pass.when), pass.when, (side, c) => tables[side].columns.find((x) => x.name === c)?.type)
        .conjuncts
    : []
  if (conjuncts.length > 30) throw new Error(`pass "${pass.name}": "when" has more than 30 conjuncts`)
  // bit b = conjunct b; the bit after them is the probability's
  const checks: ConditionBits = { checked: [...conjuncts.map((c) => c.index), conjuncts.length] }
  if (!conjuncts.length) return { conjuncts, checks, failed: () => 0 }
  const terms = conjuncts.map((c, b) => `(${compiler.compile(c.expr).code} === true ? 0 : ${2 ** b})`)
  const failed = compiler.build<(i: number, j: number) => number>('i, j', terms.join(' | '))
  return { conjuncts, checks, failed }
}

/** The amount and date pairs a match's deltas report: the recipe's, else the pass's comparisons'. */
function deltaPairs(comparisons: Comparison[], compared: ComparedColumns, tables: { l: Table; r: Table }) {
  const plain = (kinds: string[], types: string[]) => {
    for (const c of comparisons) {
      if (!kinds.includes(c.kind) || c.left.kind !== 'column' || c.right.kind !== 'column') continue
      const lt = tables.l.columns.find((x) => x.name === (c.left as { name: string }).name)?.type
      if (lt && types.includes(lt)) return { l: c.left.name, r: c.right.name }
    }
    return undefined
  }
  return {
    amount: compared.amount ?? plain(['relative', 'absolute'], ['decimal', 'integer', 'float']),
    date: compared.date ?? plain(['days'], ['date', 'timestamp']),
  }
}

function freeRows(free: Uint8Array): Int32Array {
  let n = 0
  for (let i = 0; i < free.length; i++) n += free[i]
  const out = new Int32Array(n)
  for (let i = 0, k = 0; i < free.length; i++) if (free[i]) out[k++] = i
  return out
}

/** Confirmed pairs (by record key) as candidate indices, adding those blocking did not find. */
function confirmedPairs(
  pass: RecipePass,
  tables: { l: Table; r: Table },
  keys: { left: string[]; right: string[] },
  pairs: PairList,
): number[] {
  const confirmed = pass.train?.confirmed ?? []
  if (!confirmed.length) return []
  const rowsByKey = (table: Table, key: string[]) => {
    const read = recordKeyReader(table, key)
    const out = new Map<string, number>()
    for (let r = 0; r < table.length; r++) out.set(read(r), r)
    return out
  }
  const lrows = rowsByKey(tables.l, keys.left)
  const rrows = rowsByKey(tables.r, keys.right)
  const index = new Map<number, number>()
  for (let k = 0; k < pairs.length; k++) index.set(pairs.left[k] * tables.r.length + pairs.right[k], k)
  const out: number[] = []
  for (const c of confirmed) {
    const i = lrows.get(c.left)
    const j = rrows.get(c.right)
    if (i === undefined || j === undefined)
      throw new Error(
        `pass "${pass.name}": confirmed pair ${c.left} / ${c.right} names a record that is not in the run`,
      )
    let k = index.get(i * tables.r.length + j)
    if (k === undefined) {
      k = pairs.length
      pairs.push(i, j)
    }
    out.push(k)
  }
  return out
}
