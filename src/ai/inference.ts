// Inference: the rules that explain confirmed pairs. Observes, over the confirmed 1:1 pairs,
// which linked columns are equal (exactly or after TRIM/UPPER), the largest amount difference and
// the range of date lags; over confirmed groups (one a row with several b rows), what the group
// shares and how its parts extend the reference. Rules come out strictest first, each validated.

import { type GlossaryRoles, glossaryRoles, withGlossary } from './glossary-roles.js'
import {
  amountOf,
  amountScale,
  chooseLinks,
  dayOf,
  isCodeLike,
  isOneToken,
  type Link,
  type LinkSamples,
  normalized,
  textAgreement,
  textOf,
} from './links.js'
import { chooseGreedily, scorePairs } from './pairs.js'
import { recordKey } from './record-keys.js'
import {
  amountSql,
  dateWindow,
  decimalText,
  equalitySql,
  ruleIssues,
  toleranceText,
  windowSql,
  windowWords,
} from './rules.js'
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

interface Equal {
  link: Link
  exact: boolean
}

const abs = (x: bigint) => (x < 0n ? -x : x)

/** Nearly every value distinct: a chargeback may repeat a sale's order_id, a currency repeats everywhere. */
function mostlyUnique(rows: RowT[], column: string): boolean {
  const values = rows.map((r) => textOf(r[column])).filter((v) => v !== null)
  return new Set(values.map(normalized)).size >= 0.8 * values.length
}

/** Text links equal on every pair, exactly or only after normalising. */
function equalLinks(links: Link[], pairs: [RowT, RowT][]): Equal[] {
  const out: Equal[] = []
  for (const link of links) {
    if (link.role !== 'text' || pairs.length === 0) continue
    const agreements = pairs.map(([a, b]) => textAgreement(textOf(a[link.a.name]), textOf(b[link.b.name])))
    if (agreements.every((g) => g === 'exact')) out.push({ link, exact: true })
    else if (agreements.every((g) => g === 'exact' || g === 'normalized')) out.push({ link, exact: false })
  }
  return out
}

function scaleOf(link: Link, s: LinkSamples): number {
  const declared = Math.max(link.a.scale ?? 0, link.b.scale ?? 0)
  const seen = [...s.rowsA.map((r) => amountScale(r[link.a.name])), ...s.rowsB.map((r) => amountScale(r[link.b.name]))]
  return Math.max(declared, ...seen, 0)
}

const joinWords = (words: string[]) =>
  words.length <= 1 ? words.join('') : `${words.slice(0, -1).join(', ')} and ${words[words.length - 1]}`

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
    ? chooseGreedily(scorePairs(samples, links), 100).filter((p) => p.confidence >= PROPOSAL_FLOOR)
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
    const closeness = [amountPart, datePart].filter((p) => p !== undefined)
    const rule = (name: string, eqs: Equal[], withCloseness: boolean, why: string) => {
      const parts = [...eqSql(eqs), ...(withCloseness ? closeness.map((p) => p.sql) : [])]
      if (!parts.length) return
      const words = [
        ...(eqs.length ? [`same ${joinWords(eqWords(eqs))}`] : []),
        ...(withCloseness ? closeness.map((p) => p.words) : []),
      ]
      push({ name, sql: parts.join(' AND '), description: `${joinWords(words)}: ${why}`, pattern: '1:1' })
    }
    const n = singles.length
    const seen = `${n} ${fromProposals ? 'proposed' : 'confirmed'} pair${n === 1 ? '' : 's'}`
    if (identifiers.length > 1) {
      rule('identifiers', [...identifiers, ...attributes], false, `every identifier agreed on the ${seen}`)
      rule('reference_amount_date', [identifiers[0], ...attributes], true, `as on the ${seen}`)
    } else if (identifiers.length === 1) {
      rule('reference_amount_date', [identifiers[0], ...attributes], true, `as on the ${seen}`)
      rule('reference', [identifiers[0]], false, `the reference agreed on the ${seen}`)
    } else if (closeness.length) {
      rule('amount_date', [...attributes, ...names], true, `no shared identifier; as on the ${seen}`)
    }
  }

  for (const group of groupRules(links, multi, samples)) {
    push(group)
  }
  return { pattern: rules.some((r) => r.pattern === '1:N') ? '1:N' : '1:1', primary_keys, rules }
}

/** One a row paid by several b rows: what the parts share, how they extend the reference, their sum. */
function groupRules(links: Link[], groups: [RowT, RowT[]][], samples: LinkSamples): Omit<RuleT, 'confidence'>[] {
  if (!groups.length) return []
  const flat: [RowT, RowT][] = groups.flatMap(([a, bs]) => bs.map((b) => [a, b] as [RowT, RowT]))
  const equal = equalLinks(links, flat).filter((e) => flat.every(([a]) => isOneToken(textOf(a[e.link.a.name]) ?? '')))
  const parts: string[] = equal.map((e) => equalitySql(e.link, e.exact))
  const words: string[] = equal.map(
    (e) => `same ${e.link.a.name === e.link.b.name ? e.link.a.name : `${e.link.a.name}/${e.link.b.name}`}`,
  )
  for (const link of links) {
    if (link.role !== 'text' || equal.some((e) => e.link === link)) continue
    // every part's reference is the a row's id, a separator, then more: INV-8-PART1
    const separators = new Set<string>()
    const extends_ = flat.every(([a, b]) => {
      const x = textOf(a[link.a.name])
      const y = textOf(b[link.b.name])
      if (x === null || y === null || !isCodeLike(x) || !y.startsWith(x) || y.length < x.length + 2) return false
      separators.add(y[x.length])
      return /[-_/.#]/.test(y[x.length])
    })
    if (extends_ && separators.size === 1) {
      const sep = [...separators][0]
      parts.push(`r.${link.b.name} LIKE l.${link.a.name} || '${sep}%'`)
      words.push(`${link.b.name} extends ${link.a.name} with '${sep}…'`)
    }
  }
  const amount = links.find((l) => l.role === 'amount' && l.a.type !== 'float' && l.b.type !== 'float')
  if (!amount || !parts.length) return []
  const scale = scaleOf(amount, samples)
  let worst = 0n
  for (const [a, bs] of groups) {
    const x = amountOf(a[amount.a.name]) ?? 0n
    const sum = bs.reduce((s, b) => s + (amountOf(b[amount.b.name]) ?? 0n), 0n)
    worst = abs(x - sum) > worst ? abs(x - sum) : worst
  }
  const tolerance = worst === 0n ? decimalText(1n, scale) : toleranceText(worst, scale)
  const largest = Math.max(...groups.map(([, bs]) => bs.length))
  return [
    {
      name: 'split_groups',
      sql: parts.join(' AND '),
      description: `${joinWords(words)}; the parts' ${amount.b.name} sum to ${amount.a.name} within ${tolerance}: as in ${groups.length} confirmed group${groups.length === 1 ? '' : 's'}`,
      pattern: '1:N',
      aggregate: {
        sum: `r.${amount.b.name}`,
        equals: `l.${amount.a.name}`,
        tolerance,
        max_group: Math.min(12, Math.max(2, largest + 2)),
      },
    },
  ]
}
