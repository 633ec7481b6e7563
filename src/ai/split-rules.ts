// 1:N rules: one a record paid by several b records. From confirmed groups (what the parts
// share, how their references extend the a id, how far their sum is from the a amount), or,
// with no group confirmed, from parts the sample shows extending an a id (INV-8-PART1/PART2).

import { amountOf, isCodeLike, isOneToken, type Link, type LinkSamples, textOf } from './links.js'
import { abs, type Equal, equalLinks, joinWords, scaleOf } from './observations.js'
import { decimalText, equalitySql, toleranceText } from './rules.js'
import { equalOnGroups, referenceExtensions } from './sample-evidence.js'
import type { RowT, RuleT } from './schemas.js'

/** One a row paid by several b rows: what the parts share, how they extend the reference, their sum. */
export function groupRules(links: Link[], groups: [RowT, RowT[]][], samples: LinkSamples): Omit<RuleT, 'confidence'>[] {
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

/**
 * No split confirmed, but the sample shows one: b references extending an a id, two or more per
 * id. A 1:N rule on the extension, the equalities the confirmed pairs and the parts share, and
 * the parts' sum within what the sample's splits show (at least a unit of the amounts' scale).
 */
export function splitRule(links: Link[], equals: Equal[], samples: LinkSamples): Omit<RuleT, 'confidence'> | undefined {
  const ext = referenceExtensions(samples.rowsA, samples.rowsB, links)
  const amount = links.find((l) => l.role === 'amount' && l.a.type !== 'float' && l.b.type !== 'float')
  if (!ext || !amount) return undefined
  const scale = scaleOf(amount, samples)
  let worst = 0n
  for (const [a, bs] of ext.groups) {
    const x = amountOf(a[amount.a.name])
    const sum = bs.reduce((s, b) => s + (amountOf(b[amount.b.name]) ?? 0n), 0n)
    // parts that do not add up to the a amount are not a split of it
    if (x === null || x === 0n || Number((abs(x - sum) * 100n) / abs(x)) >= 5) return undefined
    worst = abs(x - sum) > worst ? abs(x - sum) : worst
  }
  const shared = equalOnGroups(
    equals.filter((e) => e.link !== ext.link),
    ext.groups,
  )
  const { link, separator } = ext
  const tolerance = worst === 0n ? decimalText(1n, scale) : toleranceText(worst, scale)
  const largest = Math.max(...ext.groups.map(([, bs]) => bs.length))
  const words = [
    ...shared.map(
      (e) => `same ${e.link.a.name === e.link.b.name ? e.link.a.name : `${e.link.a.name}/${e.link.b.name}`}`,
    ),
    `${link.b.name} extends ${link.a.name} with '${separator}…'`,
  ]
  const n = ext.groups.length
  return {
    name: 'split_groups',
    sql: [
      ...shared.map((e) => equalitySql(e.link, e.exact)),
      `r.${link.b.name} LIKE l.${link.a.name} || '${separator}%'`,
    ].join(' AND '),
    description: `${joinWords(words)}; the parts' ${amount.b.name} sum to ${amount.a.name} within ${tolerance}: as in ${n} split${n === 1 ? '' : 's'} seen in the sample`,
    pattern: '1:N',
    aggregate: {
      sum: `r.${amount.b.name}`,
      equals: `l.${amount.a.name}`,
      tolerance,
      max_group: Math.min(12, largest + 2),
    },
  }
}
