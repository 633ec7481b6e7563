// A 1:N rule with no group confirmed: parts the sample shows extending an a id (INV-8-PART1/PART2).
// Confirmed groups, either way round, are group-rules.ts's.

import { amountOf, type Link, type LinkSamples } from './links.js'
import { abs, type Equal, joinWords, scaleOf } from './observations.js'
import { decimalText, equalitySql, toleranceText } from './rules.js'
import { equalOnGroups, referenceExtensions } from './sample-evidence.js'
import type { RuleT } from './schemas.js'

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
