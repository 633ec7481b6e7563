// Group rules from confirmed groups, whichever side is left: one record settled by several on the
// other side (1:N: an invoice paid in parts) or several settled by one (N:1: a payout of captures).
// What every member pair shares becomes the condition, the members' dates a window, and the
// amounts an equation fitted across the groups: which column of the many side sums to which
// amount of the one side (net, not gross, when a payout pays net amounts), and how (equal, a fixed
// fee, a percentage: amount-fit.ts).

import { type AmountFit, betterFit, fittedSql, fitAmounts, fitWords } from './amount-fit.js'
import { amountOf, dayOf, isCodeLike, isOneToken, type Link, type LinkSamples, linkName, textOf } from './links.js'
import { dateWindows, equalLinks, joinWords, median, scaleOf } from './observations.js'
import { decimalText, equalitySql, toleranceText, windowSql, windowWords } from './rules.js'
import type { ColumnT, RowT, RuleT } from './schemas.js'

/** One record of the `one` side and the records of the other side it was confirmed with. */
export interface Group {
  one: RowT
  many: RowT[]
  /** N:M: every record of the `one` side in the group (`one` is the first), their amounts summed. */
  ones?: RowT[]
}

const isExactAmount = (c: ColumnT) => c.type === 'decimal' || c.type === 'integer'

export interface AmountChoice {
  many: ColumnT
  one: ColumnT
  fit: AmountFit
  scale: number
}

/**
 * The many side's column whose sums explain the one side's amount best, over every pair of exact
 * amount columns: the simplest fit first (equal, a fixed offset, a factor, close), then the
 * tightest, then the mapped link. Checking sums against the other side is what tells net from gross.
 */
export function chooseAmount(
  groups: Group[],
  manyCols: ColumnT[],
  oneCols: ColumnT[],
  links: Link[],
  s: LinkSamples,
): AmountChoice | undefined {
  let best: AmountChoice | undefined
  const linked = (m: ColumnT, o: ColumnT) => links.some((l) => (l.a === m && l.b === o) || (l.a === o && l.b === m))
  for (const m of manyCols.filter(isExactAmount))
    for (const o of oneCols.filter(isExactAmount)) {
      const points = groups.map((g) => {
        const x = sumOf(g.many, m)
        const y = sumOf(g.ones ?? [g.one], o)
        return x === null || y === null ? null : { x, y }
      })
      if (points.some((p) => p === null)) continue
      const scale = scaleOf({ a: m, b: o, role: 'amount' }, s)
      const fit = fitAmounts(points as { x: bigint; y: bigint }[], scale)
      const choice = { many: m, one: o, fit, scale }
      if (
        !best ||
        betterFit(fit, best.fit) ||
        (!betterFit(best.fit, fit) && linked(m, o) && !linked(best.many, best.one))
      )
        best = choice
    }
  return best
}

/** The exact sum of a column over rows, null when a row has no amount there. */
function sumOf(rows: RowT[], c: ColumnT): bigint | null {
  let sum = 0n
  for (const r of rows) {
    const v = amountOf(r[c.name])
    if (v === null) return null
    sum += v
  }
  return sum
}

/** Text links equal on every member pair whose values are one token each (ids, codes, currencies). */
function sharedCodes(links: Link[], pairs: [RowT, RowT][]) {
  return equalLinks(links, pairs).filter((e) => pairs.every(([a]) => isOneToken(textOf(a[e.link.a.name]) ?? '')))
}

/** A group's tolerance: the fit's, a quarter above, or one unit of the amounts' scale when exact (rounding). */
const groupTolerance = (fit: AmountFit, scale: number) =>
  fit.tolerance === 0n ? decimalText(1n, scale) : toleranceText(fit.tolerance, scale)

/** A member's reference extending the one record's id: `r.ref LIKE l.id || '-%'`. */
interface Extension {
  oneCol: ColumnT
  manyCol: ColumnT
  separator: string
}

function extensionOf(x: string | null, y: string | null): string | undefined {
  if (x === null || y === null || !isCodeLike(x) || !y.startsWith(x) || y.length < x.length + 2) return undefined
  return /[-_/.#]/.test(y[x.length]) ? y[x.length] : undefined
}

/**
 * The rule for confirmed groups. `many` says which side holds several records per group: 'b' is
 * 1:N (left one, right many), 'a' is N:1. `lone` are confirmed pairs as groups of one member: they
 * join the groups (a payout of one capture) when they share what the groups share, and are
 * returned as `absorbed`; the others stay pairs of their own (an invoice paid whole, its
 * reference equal rather than extended).
 */
export function groupRule(
  links: Link[],
  groups: Group[],
  many: 'a' | 'b',
  samples: LinkSamples,
  opts: { maxGroup?: number; lone?: Group[] } = {},
): { rule: Omit<RuleT, 'confidence'>; absorbed: Group[]; amount: AmountChoice } | undefined {
  if (!groups.length) return undefined
  // member pairs in recipe orientation: [a row, b row]
  const pairsOf = (gs: Group[]): [RowT, RowT][] =>
    gs.flatMap((g) => g.many.map((m) => (many === 'b' ? [g.one, m] : [m, g.one]) as [RowT, RowT]))
  const equal = sharedCodes(links, pairsOf(groups))
  const extensions: Extension[] = []
  for (const link of links) {
    if (link.role !== 'text' || equal.some((e) => e.link === link)) continue
    // every member's reference is the one record's id, a separator, then more: INV-8-PART1
    const [oneCol, manyCol] = many === 'b' ? [link.a, link.b] : [link.b, link.a]
    const separators = groups.flatMap((g) =>
      g.many.map((r) => extensionOf(textOf(g.one[oneCol.name]), textOf(r[manyCol.name]))),
    )
    if (separators.every((x) => x !== undefined) && new Set(separators).size === 1)
      extensions.push({ oneCol, manyCol, separator: separators[0] })
  }
  const absorbed = (opts.lone ?? []).filter(
    (g) =>
      equalLinks(
        equal.map((e) => e.link),
        pairsOf([g]),
      ).length === equal.length &&
      extensions.every(
        (x) => extensionOf(textOf(g.one[x.oneCol.name]), textOf(g.many[0][x.manyCol.name])) === x.separator,
      ),
  )
  groups = [...groups, ...absorbed]
  const flat = pairsOf(groups)
  const [m, o] = many === 'b' ? ['r', 'l'] : ['l', 'r']
  const parts: string[] = equal.map((e) => equalitySql(e.link, e.exact))
  const words: string[] = equal.map((e) => `same ${linkName(e.link)}`)
  for (const x of extensions) {
    parts.push(`${m}.${x.manyCol.name} LIKE ${o}.${x.oneCol.name} || '${x.separator}%'`)
    words.push(`${x.manyCol.name} extends ${x.oneCol.name} with '${x.separator}…'`)
  }
  if (!parts.length) return undefined
  // the members' dates: the narrowest window of a date link that holds every member pair
  const windows = dateWindows(links, flat)
  if (windows.length) {
    const { link } = windows[0]
    let window = windows[0].window
    if (opts.maxGroup !== undefined) {
      // groups of one show a member's lag, not how far a group's members spread: widen the far
      // end by (members − 1) × the usual gap between one key's records in the sample, at most
      // four weeks (a sparse sample spaces one key's records far apart; the sum's equation, not
      // the window, is what keeps such a rule precise)
      const gap = usualGap(samples, many, equal, many === 'a' ? link.a : link.b)
      const extra = Math.min(28, (opts.maxGroup - 1) * gap)
      window =
        Math.abs(window[1]) >= Math.abs(window[0]) ? [window[0], window[1] + extra] : [window[0] - extra, window[1]]
    }
    parts.push(windowSql(link, window))
    words.push(windowWords(window))
  }
  const [manyCols, oneCols] = many === 'b' ? [samples.schemaB, samples.schemaA] : [samples.schemaA, samples.schemaB]
  const amount = chooseAmount(groups, manyCols, oneCols, links, samples)
  if (!amount) return undefined
  const { fit, scale } = amount
  // exact fits are tried first all the same
  const tolerance = groupTolerance(fit, scale)
  const largest = Math.max(...groups.map((g) => g.many.length))
  const n = groups.length
  const rule: Omit<RuleT, 'confidence'> = {
    name: 'groups',
    sql: parts.join(' AND '),
    description: `${joinWords(words)}; the members' ${amount.many.name} summed, ${fitWords(fit, scale, tolerance)}, is the ${amount.one.name} (within ${tolerance}): as in ${n} confirmed group${n === 1 ? '' : 's'}`,
    pattern: many === 'b' ? '1:N' : 'N:1',
    aggregate: {
      sum: fittedSql(`SUM(${m}.${amount.many.name})`, fit, scale),
      equals: `${o}.${amount.one.name}`,
      tolerance,
      max_group: opts.maxGroup ?? Math.min(12, Math.max(2, largest + 2)),
    },
  }
  return { rule, absorbed, amount }
}

/**
 * The median number of days between consecutive records of one key (the shared columns' values)
 * on the many side of the sample: how often a seller captures. At least one day.
 */
function usualGap(samples: LinkSamples, many: 'a' | 'b', equal: { link: Link }[], date: ColumnT): number {
  const rows = many === 'a' ? samples.rowsA : samples.rowsB
  const keyOf = (r: RowT) => equal.map((e) => textOf(r[(many === 'a' ? e.link.a : e.link.b).name]) ?? '').join('\u0000')
  const days = new Map<string, number[]>()
  for (const r of rows) {
    const d = dayOf(r[date.name])
    if (d === null) continue
    const key = keyOf(r)
    const list = days.get(key)
    if (list) list.push(d)
    else days.set(key, [d])
  }
  const gaps: number[] = []
  for (const ds of days.values()) {
    ds.sort((x, y) => x - y)
    for (let k = 1; k < ds.length; k++) gaps.push(ds[k] - ds[k - 1])
  }
  return Math.max(1, median(gaps))
}

/** The median magnitude of a column's sample amounts (0 when none). */
function typical(rows: RowT[], c: ColumnT): number {
  return median(
    rows
      .map((r) => amountOf(r[c.name]))
      .filter((x) => x !== null)
      .map((x) => Math.abs(Number(x))),
  )
}

/**
 * Whether lone confirmed pairs may stand for groups: their amounts follow an equation, and one
 * side's amounts are typically half again as large as the other's (a payout sums captures, a
 * payment several invoices). The side that sums is the one side of the group rule; 'a' or 'b' is
 * then the many side.
 */
export function suspectedGroups(
  choice: AmountChoice,
  s: LinkSamples,
): { many: 'a' | 'b'; members: number } | undefined {
  if (choice.fit.kind === 'close') return undefined
  const a = typical(s.rowsA, choice.many)
  const b = typical(s.rowsB, choice.one)
  if (a === 0 || b === 0) return undefined
  // groups of about `ratio` members: allow twice that, since sizes vary
  const members = (ratio: number) => Math.min(12, Math.max(3, Math.ceil(2 * ratio) + 1))
  if (b >= 1.5 * a) return { many: 'a', members: members(b / a) }
  if (a >= 1.5 * b) return { many: 'b', members: members(a / b) }
  return undefined
}

/**
 * N:M: confirmed pairs whose connected components hold several records on both sides (invoices
 * settled by payments that each cover parts of several). What every confirmed pair shares, their
 * lags as a window, and the left sums' equation to the right sums, fitted over the components as
 * for groups. Components are given as [left rows, right rows, the confirmed pairs in them].
 */
export function componentRule(
  links: Link[],
  components: { a: RowT[]; b: RowT[]; pairs: [RowT, RowT][] }[],
  samples: LinkSamples,
): Omit<RuleT, 'confidence'> | undefined {
  const pairs = components.flatMap((c) => c.pairs)
  const equal = sharedCodes(links, pairs)
  if (!equal.length) return undefined
  const parts = equal.map((e) => equalitySql(e.link, e.exact))
  const words = equal.map((e) => `same ${linkName(e.link)}`)
  const windows = dateWindows(links, pairs)
  if (windows.length) {
    parts.push(windowSql(windows[0].link, windows[0].window))
    words.push(windowWords(windows[0].window))
  }
  const groups = components.map((c) => ({ one: c.b[0], ones: c.b, many: c.a }))
  const amount = chooseAmount(groups, samples.schemaA, samples.schemaB, links, samples)
  if (!amount) return undefined
  const { fit, scale } = amount
  const tolerance = groupTolerance(fit, scale)
  const largest = Math.max(...components.map((c) => Math.max(c.a.length, c.b.length)))
  const n = components.length
  return {
    name: 'many_to_many',
    sql: parts.join(' AND '),
    description: `${joinWords(words)}; the left records' ${amount.many.name} summed, ${fitWords(fit, scale, tolerance)}, is the right records' ${amount.one.name} summed (within ${tolerance}): as in ${n} confirmed group${n === 1 ? '' : 's'} with several records on both sides`,
    pattern: 'N:M',
    aggregate: {
      sum: fittedSql(`SUM(l.${amount.many.name})`, fit, scale),
      equals: `r.${amount.one.name}`,
      tolerance,
      max_group: Math.min(12, largest + 2),
    },
  }
}
