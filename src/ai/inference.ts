// Inference: the rules that explain confirmed pairs. Observes, over the confirmed 1:1 pairs,
// which linked columns are equal (exactly or after TRIM/UPPER), the largest amount difference and
// the range of date lags; the amounts stay a condition of every rule. Then what the rest of the
// sample shows (near amounts, split references: sample-evidence.ts) and confirmed groups
// (split-rules.ts). Rules come out strictest first, each validated.

import { type GlossaryRoles, glossaryRoles, withGlossary } from './glossary-roles.js'
import {
  amountOf,
  chooseLinks,
  dayOf,
  isCodeLike,
  isOneToken,
  type Link,
  type LinkSamples,
  normalized,
  textOf,
} from './links.js'
import { chooseGreedily, scorePairs } from './pairs.js'
import { recordKey } from './record-keys.js'
import { amountSql, dateWindow, equalitySql, ruleIssues, toleranceText, windowSql, windowWords } from './rules.js'
import { abs, type Equal, equalLinks, joinWords, scaleOf } from './observations.js'
import { amountDiff, byDiff, firstKind, nearAmounts } from './sample-evidence.js'
import { groupRules, splitRule } from './split-rules.js'
import type { ColumnT, GlossaryT, MappingT, RowT, RuleT } from './schemas.js'

export interface InferenceInput {
  schema_a: ColumnT[]
  schema_b: ColumnT[]
  sample_a: RowT[]
  sample_b: RowT[]
  mappings: MappingT[]
  confirmed_pairs?: { left: number; right: number }[]
  glossary?: GlossaryT
}

export interface Inference {
  pattern: '1:1' | '1:N'
  primary_keys: { left: string[]; right: string[] }
  rules: RuleT[]
}

/** Proposals at least this sure stand in for confirmations when there are none. */
const PROPOSAL_FLOOR = 0.6

/** Nearly every value distinct: a chargeback may repeat a sale's order_id, a currency repeats everywhere. */
function mostlyUnique(rows: RowT[], column: string): boolean {
  const values = rows.map((r) => textOf(r[column])).filter((v) => v !== null)
  return new Set(values.map(normalized)).size >= 0.8 * values.length
}

/**
 * A person's confirmed pairs are all true, whatever their amounts; proposals are guesses, and a
 * proposal 7.25 off among exact ones is more likely a mismatch than a tolerance to learn. Only
 * the proposals whose amount difference is of the smallest kind stand in for confirmations (the
 * sample's near pairs get their own rule).
 */
function closestKind<P extends { left: number; right: number }>(
  proposals: P[],
  amount: Link | undefined,
  s: LinkSamples,
): P[] {
  if (!amount) return proposals
  const diffOf = (p: P) => {
    const x = amountOf(s.rowsA[p.left][amount.a.name])
    const y = amountOf(s.rowsB[p.right][amount.b.name])
    return x === null || y === null ? null : amountDiff(x, y)
  }
  const diffs = proposals
    .map(diffOf)
    .filter((d) => d !== null)
    .sort(byDiff)
  if (!diffs.length) return proposals
  const limit = diffs[firstKind(diffs) - 1].diff
  return proposals.filter((p) => {
    const d = diffOf(p)
    return d === null || d.diff <= limit
  })
}

export function infer(input: InferenceInput): Inference {
  const samples: LinkSamples = {
    schemaA: input.schema_a,
    schemaB: input.schema_b,
    rowsA: input.sample_a,
    rowsB: input.sample_b,
  }
  const glossary: GlossaryRoles = glossaryRoles(input.glossary, input.schema_a, input.schema_b)
  const mappings = withGlossary(input.mappings, glossary)
  const links = chooseLinks(samples, mappings.length ? mappings : undefined)

  // confirmed pairs, or the surest proposals at a lower confidence
  const confirmed = (input.confirmed_pairs ?? []).filter(
    (p) => p.left < input.sample_a.length && p.right < input.sample_b.length,
  )
  const fromProposals = confirmed.length === 0
  const pairRefs = fromProposals
    ? closestKind(
        chooseGreedily(scorePairs(samples, links), 100).filter((p) => p.confidence >= PROPOSAL_FLOOR),
        links.find(
          (l) => l.role === 'amount' && (l.a.name === glossary.roles.a.amount || l.b.name === glossary.roles.b.amount),
        ) ?? links.find((l) => l.role === 'amount'),
        samples,
      )
    : confirmed
  const base = fromProposals ? 0.75 : 0.95

  const groups = new Map<number, number[]>()
  for (const p of pairRefs) groups.set(p.left, [...(groups.get(p.left) ?? []), p.right])
  const singles: [RowT, RowT][] = []
  const multi: [RowT, RowT[]][] = []
  for (const [left, rights] of groups) {
    const a = input.sample_a[left]
    if (rights.length === 1) singles.push([a, input.sample_b[rights[0]]])
    else multi.push([a, rights.map((r) => input.sample_b[r])])
  }

  const shared = {
    a: new Set(links.map((l) => l.a.name)),
    b: new Set(links.map((l) => l.b.name)),
  }
  const primary_keys = {
    left: recordKey(input.schema_a, input.sample_a, shared.a, glossary.roles.a.key),
    right: recordKey(input.schema_b, input.sample_b, shared.b, glossary.roles.b.key),
  }

  const rules: RuleT[] = []
  const confidence = () => Math.max(0.3, Math.round((base - 0.05 * rules.length) * 100) / 100)
  const push = (rule: Omit<RuleT, 'confidence'>) => {
    if (rules.some((r) => r.sql === rule.sql)) return
    const full = { ...rule, confidence: confidence() } as RuleT
    if (ruleIssues(full, input.schema_a, input.schema_b).length === 0) rules.push(full)
  }

  // the equalities the confirmed 1:1 pairs showed, for a split rule found in the sample
  let singleEquals: Equal[] = []
  if (singles.length) {
    const equal = equalLinks(links, singles)
    const isReference = (e: Equal) =>
      glossary.roles.a.reference === e.link.a.name || glossary.roles.b.reference === e.link.b.name
    const values = (e: Equal) => singles.map(([a]) => textOf(a[e.link.a.name]) ?? '')
    const identifiers = equal
      .filter(
        (e) =>
          isReference(e) ||
          (values(e).every(isCodeLike) &&
            mostlyUnique(input.sample_a, e.link.a.name) &&
            mostlyUnique(input.sample_b, e.link.b.name)),
      )
      .sort(
        (x, y) =>
          Number(isReference(y)) - Number(isReference(x)) ||
          input.schema_a.indexOf(x.link.a) - input.schema_a.indexOf(y.link.a),
      )
    const attributes = equal.filter((e) => !identifiers.includes(e) && values(e).every(isOneToken))
    const names = identifiers.length ? [] : equal.filter((e) => !attributes.includes(e))

    const amountLinks = links.filter((l) => l.role === 'amount')
    const fixedAmount = amountLinks.find(
      (l) => l.a.name === glossary.roles.a.amount || l.b.name === glossary.roles.b.amount,
    )
    const amounts = amountLinks
      .map((link) => {
        const diffs = singles.map(([a, b]) => {
          const x = amountOf(a[link.a.name])
          const y = amountOf(b[link.b.name])
          return x === null || y === null ? null : abs(x - y)
        })
        if (diffs.some((d) => d === null)) return undefined
        return { link, max: diffs.reduce((m, d) => (d! > m! ? d : m), 0n)! }
      })
      .filter((x) => x !== undefined)
      .sort((x, y) =>
        x.link === fixedAmount ? -1 : y.link === fixedAmount ? 1 : x.max < y.max ? -1 : x.max > y.max ? 1 : 0,
      )
    const amount = amounts[0]

    const dateLinks = links.filter((l) => l.role === 'date')
    const fixedDate = dateLinks.find((l) => l.a.name === glossary.roles.a.date || l.b.name === glossary.roles.b.date)
    const windows = dateLinks
      .map((link) => {
        const lags = singles.map(([a, b]) => {
          const x = dayOf(a[link.a.name])
          const y = dayOf(b[link.b.name])
          return x === null || y === null ? null : y - x
        })
        if (lags.some((d) => d === null)) return undefined
        const window = dateWindow(lags as number[])
        return { link, window, spread: window[1] - window[0] }
      })
      .filter((x) => x !== undefined)
      .sort((x, y) => (x.link === fixedDate ? -1 : y.link === fixedDate ? 1 : x.spread - y.spread))
    const date = windows[0]

    const eqSql = (list: Equal[]) => list.map((e) => equalitySql(e.link, e.exact))
    const eqWords = (list: Equal[]) =>
      list.map((e) => (e.link.a.name === e.link.b.name ? e.link.a.name : `${e.link.a.name}/${e.link.b.name}`))
    const amountPart = amount
      ? {
          sql: amountSql(amount.link, amount.max, scaleOf(amount.link, samples)),
          words:
            amount.max === 0n
              ? 'equal amounts'
              : `amounts within ${toleranceText(amount.max, scaleOf(amount.link, samples))}`,
        }
      : undefined
    const datePart = date ? { sql: windowSql(date.link, date.window), words: windowWords(date.window) } : undefined
    type Part = { sql: string; words: string }
    const both = [amountPart, datePart].filter((p) => p !== undefined)
    const amountOnly = amountPart ? [amountPart] : []
    const rule = (name: string, eqs: Equal[], closeness: Part[], why: string) => {
      const parts = [...eqSql(eqs), ...closeness.map((p) => p.sql)]
      if (!parts.length) return
      const words = [...(eqs.length ? [`same ${joinWords(eqWords(eqs))}`] : []), ...closeness.map((p) => p.words)]
      push({ name, sql: parts.join(' AND '), description: `${joinWords(words)}: ${why}`, pattern: '1:1' })
    }
    const n = singles.length
    const seen = `${n} ${fromProposals ? 'proposed' : 'confirmed'} pair${n === 1 ? '' : 's'}`
    // amounts stay in every rule the confirmed amounts agreed on: shared identifiers do not make a
    // settlement 7.25 off the same sale
    const amountWhy = amount && amount.max === 0n ? ' with equal amounts' : ''
    let strictest: Equal[] = []
    if (identifiers.length > 1) {
      strictest = [...identifiers, ...attributes]
      rule('identifiers', strictest, amountOnly, `every identifier agreed on the ${seen}${amountWhy}`)
      rule('reference_amount_date', [identifiers[0], ...attributes], both, `as on the ${seen}`)
    } else if (identifiers.length === 1) {
      strictest = [identifiers[0], ...attributes]
      rule('reference_amount_date', strictest, both, `as on the ${seen}`)
      rule('reference_amount', strictest, amountOnly, `the reference agreed on the ${seen}${amountWhy}`)
    } else if (both.length) {
      rule('amount_date', [...attributes, ...names], both, `no shared identifier; as on the ${seen}`)
    }
    // then what the rest of the sample shows: amounts a little apart on records that agree on everything else
    const near =
      amount && strictest.length
        ? nearAmounts(input.sample_a, input.sample_b, strictest, amount.link, amount.max, scaleOf(amount.link, samples))
        : undefined
    if (near) rule('near_amounts', strictest, [near], `the ${seen} and ${near.evidence}`)
    singleEquals = strictest
  }

  if (multi.length) for (const group of groupRules(links, multi, samples)) push(group)
  else {
    const split = splitRule(links, singleEquals, samples)
    if (split) push(split)
  }
  return { pattern: rules.some((r) => r.pattern === '1:N') ? '1:N' : '1:1', primary_keys, rules }
}
