// Inference: the rules that explain confirmed pairs. The shape first: pairs sharing a record are
// groups (1:N, N:1, N:M: group-rules.ts). Over the 1:1 pairs, which linked columns are equal
// (exactly or after TRIM/UPPER: keys, fallback keys, attributes), how amounts relate (an equation,
// amount-fit.ts, or the largest difference) and the range of date lags; the amounts stay a
// condition of every rule; with no key, free text that carries the link makes a probabilistic
// pass (text-evidence.ts, probabilistic-rules.ts). Then what the rest of the sample shows (near
// amounts: sample-evidence.ts; splits: split-rules.ts). Rules come out strictest first, each
// validated, with the questions the evidence leaves and the observations it rests on.

import { type GlossaryRoles, glossaryRoles, withGlossary } from './glossary-roles.js'
import {
  amountOf,
  chooseLinks,
  isCodeLike,
  isOneToken,
  type Link,
  type LinkSamples,
  linkName,
  normalized,
  textOf,
} from './links.js'
import { chooseGreedily, scorePairs } from './pairs.js'
import { recordKey } from './record-keys.js'
import { amountSql, decimalText, equalitySql, ruleIssues, toleranceText, windowSql, windowWords } from './rules.js'
import { abs, dateWindows, type Equal, equalLinks, joinWords, lagsOf, median, scaleOf } from './observations.js'
import { amountDiff, byDiff, firstKind, nearAmounts } from './sample-evidence.js'
import { digitsAt, fittedSql, fitWords, unitAt } from './amount-fit.js'
import {
  type AmountChoice,
  chooseAmount,
  componentRule,
  type Group,
  groupRule,
  suspectedGroups,
} from './group-rules.js'
import { confirmedGroups } from './confirmed-groups.js'
import { splitRule } from './split-rules.js'
import { probabilisticRule } from './probabilistic-rules.js'
import { carriesLink, freeTextEvidence } from './text-evidence.js'
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
  pattern: '1:1' | '1:N' | 'N:1' | 'N:M'
  primary_keys: { left: string[]; right: string[] }
  rules: RuleT[]
  /** What the evidence left unsure, and the confirmed pair (or group) that would settle it. */
  questions: Question[]
}

export interface Question {
  /** The kind of pair asked for: `group` (one record with several on the other side), `more_pairs`, `differing_amounts`. */
  ask: 'group' | 'more_pairs' | 'differing_amounts'
  message: string
}

/**
 * What inference observed, in numbers: the same evidence the deterministic rules rest on, given to
 * the model with the tool's input so both implementations reason from it.
 */
export interface Observations {
  shape: { pattern: Inference['pattern']; groups_one_to_many: number; groups_many_to_one: number; lone_pairs: number }
  links: { a: string; b: string; role: string }[]
  /** Per text link not equal on every pair: how alike the confirmed pairs are (token_set). */
  free_text: {
    a: string
    b: string
    confirmed: number[]
    partner_best: number
    typical: number
    carries_link: boolean
  }[]
  /**
   * The amount equation the confirmed pairs or groups follow, when one was fitted: explains ≈
   * factor × explained_by (summed over a group when `sums`) + offset, within tolerance.
   */
  amounts?: {
    explained_by: string
    explains: string
    kind: string
    factor: string
    offset: string
    tolerance: string
    sums: boolean
  }
  /** Per date link: each confirmed pair's lag, b's day minus a's. */
  lags: { a: string; b: string; lags: (number | null)[] }[]
  keys: { identifiers: string[]; sparse: string[] }
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

/** A 1:1 amount condition from a fitted equation: `r.amount = l.net_amount - 0.49`, within a tolerance if it needs one. */
function equationPart(choice: AmountChoice): { sql: string; words: string } {
  const { fit, scale } = choice
  const x = `l.${choice.many.name}`
  const y = `r.${choice.one.name}`
  const tolerance = toleranceText(fit.tolerance, scale)
  const words = `${choice.one.name} is ${choice.many.name} ${fitWords(fit, scale, tolerance)}`
  if (fit.kind === 'equal') return { sql: `${x} = ${y}`, words: 'equal amounts' }
  const expr = fittedSql(x, fit, scale)
  return fit.tolerance === 0n
    ? { sql: `${y} = ${expr}`, words }
    : { sql: `ABS(${expr} - ${y}) <= ${tolerance}`, words: `${words}, within ${tolerance}` }
}

/**
 * The text links free text may carry the link on: the mapped ones not equal on the pairs, then
 * every other pairing of string columns no equality uses (a memo mapped to nothing, or to the
 * wrong column, because its values never repeat on the other side).
 */
function textCandidates(links: Link[], equal: Equal[], s: LinkSamples): Link[] {
  const usedA = new Set(equal.map((e) => e.link.a.name))
  const usedB = new Set(equal.map((e) => e.link.b.name))
  // words, not codes: most of the sample's values hold a space (an unmapped id is no memo)
  const wordy = (rows: RowT[], c: ColumnT) => {
    const values = rows.map((r) => textOf(r[c.name])).filter((v) => v !== null)
    return values.length > 0 && values.filter((v) => !isOneToken(v)).length * 2 >= values.length
  }
  const out = links.filter((l) => l.role === 'text' && !equal.some((e) => e.link === l))
  for (const a of s.schemaA.filter((c) => c.type === 'string' && !usedA.has(c.name) && wordy(s.rowsA, c)))
    for (const b of s.schemaB.filter((c) => c.type === 'string' && !usedB.has(c.name) && wordy(s.rowsB, c)))
      if (!out.some((l) => l.a === a && l.b === b)) out.push({ a, b, role: 'text' })
  return out
}

/** `(l.x IS NULL OR r.y IS NULL)`: a key one of the records lacks. */
const blankSql = (e: Equal) => `(l.${e.link.a.name} IS NULL OR r.${e.link.b.name} IS NULL)`

/**
 * Text links blank on some pairs and equal (exactly or after TRIM/UPPER) on every pair where both
 * records have a value, on two pairs at least, each value one code-like token: keys some records
 * lack. Links equal on every pair are `equal`'s.
 */
function sparseIdentifiers(links: Link[], pairs: [RowT, RowT][], equal: Equal[]): Equal[] {
  const out: Equal[] = []
  for (const link of links) {
    if (link.role !== 'text' || equal.some((e) => e.link === link)) continue
    const present = pairs.filter(([a, b]) => textOf(a[link.a.name]) !== null && textOf(b[link.b.name]) !== null)
    if (present.length < 2 || present.length === pairs.length) continue
    if (!present.every(([a]) => isCodeLike(textOf(a[link.a.name])!))) continue
    const found = equalLinks([link], present)
    if (found.length) out.push(found[0])
  }
  return out
}

/** The confirmed pairs as record keys, when each side is keyed by one column and every pair has both. */
function anchorsOf(
  pairs: { left: number; right: number }[],
  input: InferenceInput,
  keys: { left: string[]; right: string[] },
): { left: string; right: string }[] {
  if (keys.left.length !== 1 || keys.right.length !== 1) return []
  const out = pairs.map((p) => ({
    left: textOf(input.sample_a[p.left][keys.left[0]]),
    right: textOf(input.sample_b[p.right][keys.right[0]]),
  }))
  return out.every((p) => p.left !== null && p.right !== null) ? (out as { left: string; right: string }[]) : []
}

export function infer(input: InferenceInput): Inference {
  return observeAndInfer(input).inference
}

/** The rules and the observations they rest on. */
export function observeAndInfer(input: InferenceInput): { inference: Inference; observations: Observations } {
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
  const observations: {
    freeText: Observations['free_text']
    amounts?: Observations['amounts']
    keys: Observations['keys']
    suspected?: 'a' | 'b'
  } = { freeText: [], keys: { identifiers: [], sparse: [] } }
  // many: the side whose amounts are summed (a for 1:1 pairs, whose a amount explains b's)
  const noteFit = (choice: AmountChoice, many: 'a' | 'b', sums: boolean) => {
    const digits = digitsAt(choice.scale)
    const unit = unitAt(choice.scale)
    observations.amounts = {
      explained_by: `${many === 'a' ? 'l' : 'r'}.${choice.many.name}`,
      explains: `${many === 'a' ? 'r' : 'l'}.${choice.one.name}`,
      kind: choice.fit.kind,
      factor: choice.fit.factor,
      offset: decimalText(choice.fit.offset / unit, digits),
      tolerance: decimalText(choice.fit.tolerance / unit, digits),
      sums,
    }
  }

  // the shape: confirmed pairs sharing a left record are 1:N groups, sharing a right record N:1,
  // whichever side the user put left; the other pairs are 1:1
  const byLeft = new Map<number, number[]>()
  const byRight = new Map<number, number[]>()
  for (const p of pairRefs) {
    byLeft.set(p.left, [...(byLeft.get(p.left) ?? []), p.right])
    byRight.set(p.right, [...(byRight.get(p.right) ?? []), p.left])
  }
  const singles: [RowT, RowT][] = []
  const singlePairs: { left: number; right: number }[] = []
  // N:M: a component of confirmed pairs with several records on both sides makes every component
  // a group of an N:M rule (1:1, 1:N and N:1 components are groups of it too)
  const components = confirmedGroups(pairRefs)
  const nmRule = components.some((c) => c.shape === 'N:M')
    ? componentRule(
        links,
        components.map((c) => ({
          a: c.lefts.map((i) => input.sample_a[i]),
          b: c.rights.map((j) => input.sample_b[j]),
          pairs: c.pairs.map((p) => [input.sample_a[p.left], input.sample_b[p.right]] as [RowT, RowT]),
        })),
        samples,
      )
    : undefined
  const oneToMany: Group[] = []
  const manyToOne: Group[] = []
  if (!nmRule) {
    for (const [left, rights] of byLeft)
      if (rights.length > 1) oneToMany.push({ one: input.sample_a[left], many: rights.map((r) => input.sample_b[r]) })
    for (const [right, lefts] of byRight)
      if (lefts.length > 1) manyToOne.push({ one: input.sample_b[right], many: lefts.map((l) => input.sample_a[l]) })
  }
  const lone = nmRule
    ? []
    : pairRefs.filter((p) => byLeft.get(p.left)!.length === 1 && byRight.get(p.right)!.length === 1)
  // the group rules, the side with more groups first (both at once is N:M: each kind its own pass);
  // with groups of one shape only, a lone pair sharing what the groups share is a group of one (a
  // payout of one capture), the others stay 1:1 pairs (an invoice paid whole)
  const shapes: ['a' | 'b', Group[]][] = (
    [
      ['b', oneToMany],
      ['a', manyToOne],
    ] as ['a' | 'b', Group[]][]
  )
    .filter(([, gs]) => gs.length)
    .sort((x, y) => y[1].length - x[1].length)
  const absorbed = new Set<{ left: number; right: number }>()
  const groupRules = shapes.flatMap(([many, gs]) => {
    const asGroups = new Map(
      lone.map((p) => [
        p,
        many === 'a'
          ? { one: input.sample_b[p.right], many: [input.sample_a[p.left]] }
          : { one: input.sample_a[p.left], many: [input.sample_b[p.right]] },
      ]),
    )
    const made = groupRule(links, gs, many, samples, { lone: shapes.length === 1 ? [...asGroups.values()] : [] })
    if (!made) return []
    noteFit(made.amount, many, true)
    for (const [p, g] of asGroups) if (made.absorbed.includes(g)) absorbed.add(p)
    return [made.rule]
  })
  for (const p of lone)
    if (!absorbed.has(p)) {
      singles.push([input.sample_a[p.left], input.sample_b[p.right]])
      singlePairs.push(p)
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
    // identifiers blank on some confirmed pairs and equal wherever both sides have one: fallback
    // keys for the records a stricter key cannot reach (an end-to-end id, then the reference)
    const sparse = sparseIdentifiers(links, singles, equal).filter(
      (e) => mostlyUnique(input.sample_a, e.link.a.name) && mostlyUnique(input.sample_b, e.link.b.name),
    )
    const attributes = equal.filter((e) => !identifiers.includes(e) && values(e).every(isOneToken))
    observations.keys = {
      identifiers: identifiers.map((e) => linkName(e.link)),
      sparse: sparse.map((e) => linkName(e.link)),
    }
    const names = identifiers.length ? [] : equal.filter((e) => !attributes.includes(e))
    // with no identifier, free text that tells each partner apart (memos naming the payer) makes
    // a probabilistic pass instead of a band on amount and date alone
    const textEvidence = identifiers.length
      ? []
      : textCandidates(links, equal, samples).map((link) => {
          const e = freeTextEvidence(link, input.sample_a, input.sample_b, singlePairs)
          return { ...e, carries: carriesLink(e) }
        })
    observations.freeText = textEvidence.map((e) => ({
      a: e.link.a.name,
      b: e.link.b.name,
      confirmed: e.confirmed.map((x) => Math.round(x * 1000) / 1000),
      partner_best: e.partnerBest,
      typical: Math.round(e.typical * 1000) / 1000,
      carries_link: e.carries,
    }))
    const freeTexts = textEvidence
      .filter((e) => e.carries)
      // each column in one text link: the one that tells partners apart best
      .sort((x, y) => y.partnerBest - x.partnerBest || median(y.confirmed) - median(x.confirmed))
      .filter((e, k, all) => all.findIndex((o) => o.link.a === e.link.a || o.link.b === e.link.b) === k)

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
    const windows = dateWindows(dateLinks, singles, fixedDate)
    const date = windows[0]

    const eqSql = (list: Equal[]) => list.map((e) => equalitySql(e.link, e.exact))
    const eqWords = (list: Equal[]) =>
      list.map((e) => (e.link.a.name === e.link.b.name ? e.link.a.name : `${e.link.a.name}/${e.link.b.name}`))
    // which columns' amounts follow an equation (net less a fee, a percentage) over the pairs: three
    // pairs at least, or two pairs a fee apart would make every equal-amount pair a miss
    const equation =
      singles.length >= 3
        ? chooseAmount(
            singles.map(([a, b]) => ({ one: b, many: [a] })),
            input.schema_a,
            input.schema_b,
            links,
            samples,
          )
        : undefined
    const fitted = equation && equation.fit.kind !== 'close' ? equation : undefined
    if (equation) noteFit(equation, 'a', false)
    const amountPart = fitted
      ? equationPart(fitted)
      : amount
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
    const rule = (name: string, eqs: Equal[], closeness: Part[], why: string, blank: Equal[] = []) => {
      const parts = [...eqSql(eqs), ...closeness.map((p) => p.sql), ...blank.map(blankSql)]
      if (!parts.length) return
      const words = [
        ...(eqs.length ? [`same ${joinWords(eqWords(eqs))}`] : []),
        ...closeness.map((p) => p.words),
        ...(blank.length ? [`${joinWords(eqWords(blank))} blank on either side`] : []),
      ]
      push({ name, sql: parts.join(' AND '), description: `${joinWords(words)}: ${why}`, pattern: '1:1' })
    }
    const blankInSamples = (e: Equal) =>
      input.sample_a.some((r) => textOf(r[e.link.a.name]) === null) ||
      input.sample_b.some((r) => textOf(r[e.link.b.name]) === null)
    // each further key its own pass, in order, for the records every key before it left blank
    const fallbacks = (keys: Equal[], before: Equal[]) => {
      const blank = [...before]
      for (const key of keys) {
        rule(`${key.link.a.name}_amount_date`, [key, ...attributes], both, `a fallback key, as on the ${seen}`, blank)
        blank.push(key)
      }
      return blank
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
      rule(`${identifiers[0].link.a.name}_amount_date`, [identifiers[0], ...attributes], both, `as on the ${seen}`)
      // the other identifiers back the first up only where the samples show it blank
      fallbacks([...(blankInSamples(identifiers[0]) ? identifiers.slice(1) : []), ...sparse], [identifiers[0]])
    } else if (identifiers.length === 1) {
      strictest = [identifiers[0], ...attributes]
      // named for the key they use: a rule keyed on end_to_end_id is not "reference_…"
      rule(`${identifiers[0].link.a.name}_amount_date`, strictest, both, `as on the ${seen}`)
      rule(`${identifiers[0].link.a.name}_amount`, strictest, amountOnly, `the key agreed on the ${seen}${amountWhy}`)
      fallbacks(sparse, [identifiers[0]])
    } else if (sparse.length) {
      strictest = [sparse[0], ...attributes]
      rule(`${sparse[0].link.a.name}_amount_date`, strictest, both, `as on the ${seen} that carry it`)
      const blank = fallbacks(sparse.slice(1), [sparse[0]])
      rule('amount_date', [...attributes, ...names], both, `no key on either side; as on the ${seen}`, blank)
    } else if (freeTexts.length) {
      push(
        probabilisticRule({
          texts: freeTexts,
          amount: amount?.link,
          date: date?.link,
          attributes: [...attributes, ...names],
          pairs: singles.map(([a, b]) => ({ a, b })),
          anchors: fromProposals ? [] : anchorsOf(singlePairs, input, primary_keys),
          seen,
        }),
      )
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
    // lone pairs whose amounts follow an equation, on sides whose amounts differ in size: the
    // larger side may sum the other (payouts of one capture confirmed; most pay several)
    const suspected = fitted && !oneToMany.length && !manyToOne.length ? suspectedGroups(fitted, samples) : undefined
    if (suspected) {
      const { many, members } = suspected
      observations.suspected = many
      const groups = singles.map(([a, b]) => (many === 'a' ? { one: b, many: [a] } : { one: a, many: [b] }))
      const group = groupRule(links, groups, many, samples, { maxGroup: members })?.rule
      if (group)
        push({
          ...group,
          description: `${group.description}; taken as groups of one because ${many === 'a' ? "b's" : "a's"} amounts are typically half again as large: confirm a group to be sure`,
        })
    }
  }

  if (nmRule) push(nmRule)
  else if (shapes.length) for (const rule of groupRules) push(rule)
  else {
    const split = splitRule(links, singleEquals, samples)
    if (split) push(split)
  }
  const pattern = rules.find((r) => r.pattern && r.pattern !== '1:1')?.pattern ?? '1:1'
  const questions: Question[] = []
  const groupCount = nmRule ? components.length : oneToMany.length + manyToOne.length
  if (observations.suspected)
    questions.push({
      ask: 'group',
      message: `the confirmed pairs are one to one, but ${observations.suspected === 'a' ? "b's" : "a's"} amounts are typically half again as large as the other side's: confirm one ${observations.suspected === 'a' ? 'b' : 'a'} record with all the records it settles, to learn the groups' shape and dates`,
    })
  else if (groupCount === 1)
    questions.push({
      ask: 'group',
      message: 'one confirmed group shows the members and the sum, not how groups vary: confirm one more group',
    })
  if (!groupCount && singles.length < 3)
    questions.push({
      ask: 'more_pairs',
      message: `${singles.length} confirmed pair${singles.length === 1 ? '' : 's'} cannot tell a fee from a drift or a lag from a window: confirm three or more`,
    })
  if (observations.amounts?.kind === 'equal' && observations.freeText.some((f) => f.carries_link))
    questions.push({
      ask: 'differing_amounts',
      message:
        'every confirmed pair has equal amounts: confirm one whose amounts differ (a fee, a conversion) if such pairs exist, so the amount levels are learned from both',
    })
  const out = {
    inference: { pattern, primary_keys, rules, questions },
    observations: {
      shape: {
        pattern,
        groups_one_to_many: oneToMany.length,
        groups_many_to_one: manyToOne.length,
        lone_pairs: lone.length,
      },
      links: links.map((l) => ({ a: l.a.name, b: l.b.name, role: l.role })),
      free_text: observations.freeText,
      ...(observations.amounts ? { amounts: observations.amounts } : {}),
      lags: links
        .filter((l) => l.role === 'date')
        .map((l) => ({
          a: l.a.name,
          b: l.b.name,
          lags: lagsOf(
            l,
            pairRefs.map((p) => [input.sample_a[p.left], input.sample_b[p.right]]),
          ),
        })),
      keys: observations.keys,
    },
  }
  return out
}
