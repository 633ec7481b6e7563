// What the samples show beyond the confirmed pairs. Three confirmed pairs with equal amounts say
// nothing about the records that differ; the rest of the sample may: pairs that agree on every
// identifier but whose amounts are a little apart (a rounding, a fee), and references on one side
// that extend the other side's ids (INV-8-PART1, INV-8-PART2: a split payment). Each finding
// becomes a rule only with the evidence written into its description.

import { type Link, amountOf, isCodeLike, normalized, textAgreement, textOf } from './links.js'
import { abs, type Equal } from './observations.js'
import { toleranceText } from './rules.js'
import type { RowT } from './schemas.js'
import { unitsText } from './pairs.js'

/** Amounts further apart than this share of the a amount are not "near": a different record. */
const NEAR_LIMIT = 0.05
/**
 * Differences at least this many times larger than all smaller ones, both in money and as a
 * share of the amount, are of another kind: 0.03 (a rounding, 0.07% at most) and 7.25 (a
 * mismatch, 0.5% and up) on the same order are not one tolerance. A flat fee (same money) or a
 * percentage (same share) stays one kind however the other measure spreads. The smaller kind is
 * matched; the larger is left for review and named in the rule's description.
 */
const KIND_FACTOR = 4n

/** An amount difference: in units at AMOUNT_SCALE, and as a share of the a amount (×1e9, rounded up). */
export interface AmountDiff {
  diff: bigint
  rel: bigint
}

export function amountDiff(x: bigint, y: bigint): AmountDiff {
  const diff = abs(x - y)
  return { diff, rel: x === 0n ? 0n : (diff * 10n ** 9n + abs(x) - 1n) / abs(x) }
}

/**
 * How many of the differences, sorted by money, are of the first kind: the rest begins where
 * every larger difference is KIND_FACTOR times every smaller one in money and as a share.
 */
export function firstKind(sorted: AmountDiff[]): number {
  const restMinRel: bigint[] = []
  for (let i = sorted.length - 1; i >= 0; i--)
    restMinRel[i] =
      i === sorted.length - 1 ? sorted[i].rel : sorted[i].rel < restMinRel[i + 1] ? sorted[i].rel : restMinRel[i + 1]
  let keptMaxRel = 0n
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i - 1].rel > keptMaxRel) keptMaxRel = sorted[i - 1].rel
    const keptMax = sorted[i - 1].diff
    if (
      sorted[i].diff > keptMax &&
      sorted[i].diff >= KIND_FACTOR * keptMax &&
      restMinRel[i] >= KIND_FACTOR * keptMaxRel
    )
      return i
  }
  return sorted.length
}

export const byDiff = (p: AmountDiff, q: AmountDiff) => (p.diff < q.diff ? -1 : p.diff > q.diff ? 1 : 0)

/** The rows of one side keyed by the values of the equalities, as the rule compares them. */
function keyOf(row: RowT, eqs: Equal[], side: 'a' | 'b'): string | undefined {
  const parts: string[] = []
  for (const e of eqs) {
    const v = textOf(row[side === 'a' ? e.link.a.name : e.link.b.name])
    if (v === null) return undefined
    parts.push(e.exact ? v : normalized(v))
  }
  return JSON.stringify(parts)
}

export interface NearAmounts {
  /** `ABS(l.a - r.b) <= …`, absolute when the differences are of one size, else relative to l.a. */
  sql: string
  words: string
  /** How many sample pairs support it, and what was left out. */
  evidence: string
}

/**
 * The tolerance the sample's near pairs justify: sample pairs equal on `eqs`, amounts apart by
 * more than `strictMax` (what the confirmed pairs already allow) but less than NEAR_LIMIT, same
 * sign. Their differences, smallest first, up to the first jump of GAP times.
 */
export function nearAmounts(
  rowsA: RowT[],
  rowsB: RowT[],
  eqs: Equal[],
  amount: Link,
  strictMax: bigint,
  scale: number,
): NearAmounts | undefined {
  if (!eqs.length) return undefined
  const byKey = new Map<string, RowT[]>()
  for (const b of rowsB) {
    const k = keyOf(b, eqs, 'b')
    if (k !== undefined) byKey.set(k, [...(byKey.get(k) ?? []), b])
  }
  const near: AmountDiff[] = []
  for (const a of rowsA) {
    const k = keyOf(a, eqs, 'a')
    const x = amountOf(a[amount.a.name])
    if (k === undefined || x === null || x === 0n) continue
    for (const b of byKey.get(k) ?? []) {
      const y = amountOf(b[amount.b.name])
      if (y === null || x < 0n !== y < 0n) continue
      const d = amountDiff(x, y)
      if (d.diff > strictMax && Number(d.rel) < NEAR_LIMIT * 1e9) near.push(d)
    }
  }
  if (!near.length) return undefined
  near.sort(byDiff)
  const end = firstKind(near)
  const kept = near.slice(0, end)
  const left = near.slice(end)
  const smallest = kept[0].diff
  const largest = kept[kept.length - 1].diff
  const col = (side: 'l' | 'r') => `${side}.${side === 'l' ? amount.a.name : amount.b.name}`
  const diffSql = `ABS(${col('l')} - ${col('r')})`
  let sql: string
  let words: string
  if (largest <= 2n * smallest) {
    // differences of one size (a rounding, a flat fee): an absolute tolerance
    const t = toleranceText(largest, scale)
    sql = `${diffSql} <= ${t}`
    words = `amounts within ${t}`
  } else {
    // differences that grow with the amount: a share of it
    const maxRel = kept.reduce((m, p) => (p.rel > m ? p.rel : m), 0n)
    const share = toleranceText(maxRel, 9).replace(/0+$/, '')
    sql = `${diffSql} <= ${share} * ABS(${col('l')})`
    words = `amounts within ${share} of ${amount.a.name}`
  }
  const n = kept.length
  let evidence = `${n} sample pair${n === 1 ? '' : 's'} agreeing on the rest had amounts ${unitsText(smallest)}${largest === smallest ? '' : ` to ${unitsText(largest)}`} apart`
  if (left.length)
    evidence += `; ${left.length} ${left.length === 1 ? 'pair' : 'pairs'} ${unitsText(left[0].diff)} or more apart, a difference of another size, ${left.length === 1 ? 'is' : 'are'} left for review`
  return { sql, words, evidence }
}

export interface Extension {
  link: Link
  separator: string
  /** Sample a rows with the b rows whose reference extends theirs, two or more each. */
  groups: [RowT, RowT[]][]
}

const SEPARATORS = /[-_/.#]/

/**
 * References on side b that are an a id, a separator and more (INV-8-PART1), with at least one
 * a id extended twice or more in the sample: the parts of a split. One separator per link.
 */
export function referenceExtensions(rowsA: RowT[], rowsB: RowT[], links: Link[]): Extension | undefined {
  for (const link of links) {
    if (link.role !== 'text') continue
    const byId = new Map<string, RowT>()
    for (const a of rowsA) {
      const x = textOf(a[link.a.name])
      if (x !== null && isCodeLike(x)) byId.set(x, a)
    }
    if (!byId.size) continue
    const parts = new Map<string, Map<RowT, RowT[]>>()
    for (const b of rowsB) {
      const y = textOf(b[link.b.name])
      if (y === null) continue
      for (let k = 1; k < y.length - 1; k++) {
        if (!SEPARATORS.test(y[k])) continue
        const a = byId.get(y.slice(0, k))
        if (!a) continue
        const bySep = parts.get(y[k]) ?? new Map<RowT, RowT[]>()
        bySep.set(a, [...(bySep.get(a) ?? []), b])
        parts.set(y[k], bySep)
        break
      }
    }
    for (const [separator, byA] of parts) {
      const groups = [...byA].filter(([, bs]) => bs.length >= 2)
      if (groups.length) return { link, separator, groups }
    }
  }
  return undefined
}

/** The equalities that hold between each split's a row and every one of its parts. */
export function equalOnGroups(eqs: Equal[], groups: [RowT, RowT[]][]): Equal[] {
  return eqs.filter((e) =>
    groups.every(([a, bs]) =>
      bs.every((b) => {
        const g = textAgreement(textOf(a[e.link.a.name]), textOf(b[e.link.b.name]))
        return g === 'exact' || (!e.exact && g === 'normalized')
      }),
    ),
  )
}
