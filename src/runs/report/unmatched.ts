// One side's unmatched records for the report, read a record batch at a time: counts and exact
// amounts by why each record is unmatched (the class of its nearest miss, and the pass and conjunct
// that rejected its closest candidate), and the records with the largest amounts.

import type { RecordBatch, Schema } from 'apache-arrow'
import { describeUnmatched, type PassInfo } from '../../engine/explain/evidence.js'
import { columnData, dictionaryCodes, eachBatch, flagsOf, isNull, numbersOf } from './batches.js'
import { formatAmount, UnitSum } from './units.js'

/**
 * Why a record is unmatched, as describeUnmatched words it: no counterpart shares its join in any
 * pass; its closest candidate failed a conjunct; the candidate satisfied the pass but another
 * record won it (1:1); no group summed to its amount (1:N, N:1, N:M); or `prefer` chose its twin.
 */
export const REASON_CLASSES = ['no_candidate', 'failed_conjunct', 'outscored', 'no_group', 'tied'] as const
export type ReasonClass = (typeof REASON_CLASSES)[number]

export interface ReasonRow {
  reason: ReasonClass
  /** The pass of the nearest miss; null when no pass found a candidate. */
  pass: string | null
  /** The conjunct the candidate failed (failed_conjunct only). */
  conjunct: string | null
  records: number
  /** Their amounts' exact sum; null without an amount column. */
  amount: string | null
  /** Of these records, those whose closest candidate was matched by something else. */
  candidate_taken: number
}

export interface TopRecord {
  record_key: string
  amount: string
  reason: ReasonClass
  pass: string | null
  /** The sentence the unmatched pages give. */
  why: string
}

export interface UnmatchedFigures {
  records: number
  /** Sum of the records' amounts; null without an amount column. */
  amount: string | null
  by_reason: ReasonRow[]
  /** The largest amounts (by absolute value) first; null without an amount column. */
  top: TopRecord[] | null
}

interface Group {
  reason: number
  pass: number
  conjunct: number
  records: number
  taken: number
  sum: UnitSum
}

interface Held {
  abs: number
  record: TopRecord
}

/**
 * Reads `unmatched-<side>.arrow` at `path`. `amount`: the side's amount field in the file (e.g.
 * `l.amount`) and its scale, or undefined when the side has none. `top`: how many records to keep.
 */
export async function unmatchedFigures(
  path: string,
  side: 'left' | 'right',
  amount: { field: string; scale: number } | undefined,
  top: number,
): Promise<UnmatchedFigures> {
  let passes: PassInfo[] = []
  let conjuncts: string[] = []
  const groups = new Map<number, Group>()
  const total = new UnitSum()
  const held: Held[] = []
  let records = 0

  const start = (schema: Schema) => {
    passes = JSON.parse(schema.metadata.get('concord.passes') ?? '[]') as PassInfo[]
    conjuncts = passes.flatMap((p) => p.conjuncts)
  }
  const passCode = (name: string) => passes.findIndex((p) => p.name === name)
  const conjunctCode = (text: string) => {
    const k = conjuncts.indexOf(text)
    return k >= 0 ? k : conjuncts.push(text) - 1
  }

  const each = (batch: RecordBatch) => {
    const n = batch.numRows
    records += n
    const noCandidate = isNull(columnData(batch, 'closest_candidate'))
    const pass = dictionaryCodes(columnData(batch, 'failed_pass')!, passCode)
    const conjunct = dictionaryCodes(columnData(batch, 'failed_conjunct')!, conjunctCode)
    const taken = flagsOf(columnData(batch, 'candidate_taken'))
    const untied = isNull(columnData(batch, 'tied_with'))
    const units = amount ? numbersOf(columnData(batch, amount.field)!) : null
    for (let i = 0; i < n; i++) {
      const p = noCandidate(i) ? -1 : pass(i)
      const c = p < 0 ? -1 : conjunct(i)
      const reason =
        p < 0
          ? 0
          : !untied(i)
            ? 4
            : c >= 0
              ? 1
              : passes[p].pattern === '1:1' // probabilistic passes are 1:1 too
                ? 2
                : 3
      // one number per (reason, pass, conjunct): a Map of numbers, no string per row
      const key = (reason * 65_536 + p + 1) * 1_048_576 + c + 1
      let group = groups.get(key)
      if (!group) {
        group = { reason, pass: p, conjunct: reason === 1 ? c : -1, records: 0, taken: 0, sum: new UnitSum() }
        groups.set(key, group)
      }
      group.records++
      if (taken(i)) group.taken++
      if (!units) continue
      const u = units(i)
      if (Number.isNaN(u)) continue
      group.sum.add(u)
      total.add(u)
      const abs = Math.abs(u)
      if (top > 0 && (held.length < top || abs > held[held.length - 1].abs)) hold(batch, i, abs, u, reason)
    }
  }

  const hold = (batch: RecordBatch, i: number, abs: number, units: number, reason: number) => {
    const text = (name: string) => (batch.getChild(name)?.get(i) as string | null | undefined) ?? null
    const pass = passes.find((p) => p.name === text('failed_pass')) ?? null
    const miss = {
      pass,
      conjunct: text('failed_conjunct'),
      candidate: text('closest_candidate'),
      taken: Boolean(batch.getChild('candidate_taken')?.get(i)),
      tiedWith: text('tied_with'),
    }
    const record: TopRecord = {
      record_key: String(text('record_key')),
      amount: formatAmount(units, amount!.scale),
      reason: REASON_CLASSES[reason],
      pass: reason === 0 ? null : (pass?.name ?? null),
      why: describeUnmatched(miss, side, passes).reason,
    }
    // a stable insertion: of equal amounts the record read first stays ahead
    let at = held.length
    while (at > 0 && held[at - 1].abs < abs) at--
    held.splice(at, 0, { abs, record })
    if (held.length > top) held.pop()
  }

  await eachBatch(path, each, start)

  const order = (g: Group) => [g.reason, g.pass, g.conjunct]
  const by_reason = [...groups.values()]
    .sort((a, b) => b.records - a.records || compare(order(a), order(b)))
    .map((g) => ({
      reason: REASON_CLASSES[g.reason],
      pass: g.pass < 0 ? null : passes[g.pass].name,
      conjunct: g.conjunct < 0 ? null : conjuncts[g.conjunct],
      records: g.records,
      amount: amount ? g.sum.format(amount.scale) : null,
      candidate_taken: g.taken,
    }))
  return {
    records,
    amount: amount ? total.format(amount.scale) : null,
    by_reason,
    top: amount ? held.map((h) => h.record) : null,
  }
}

function compare(a: number[], b: number[]): number {
  for (let k = 0; k < a.length; k++) if (a[k] !== b[k]) return a[k] - b[k]
  return 0
}
