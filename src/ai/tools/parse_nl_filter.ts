// parse_nl_filter: a request in words ("only January 2026 sales") as filter conditions per source.

import { type Static, Type } from 'typebox'
import { resolveConditions } from '../../engine/load/filter.js'
import { ConcordError } from '../../errors.js'
import { ColumnFinder, type SourceSide } from '../columns.js'
import { addDays, describePeriod, monthIndex, monthPeriod, type Period, periodFilters, todayIso } from '../periods.js'
import { Filter, type FilterT, Glossary, Mapping, TableSchema } from '../schemas.js'
import type { AiTool } from '../types.js'
import { isCurrencyCode, numberValue, type Token, tokens } from '../words.js'

const input = Type.Object(
  {
    text: Type.String({ minLength: 1 }),
    schema_a: TableSchema,
    schema_b: TableSchema,
    current_mappings: Type.Optional(Type.Array(Mapping)),
    today: Type.Optional(Type.String({ description: 'YYYY-MM-DD, for "last month" and the like (default: today)' })),
    glossary: Type.Optional(Glossary),
  },
  { additionalProperties: false },
)

const output = Type.Object({
  filters: Type.Array(Filter, { description: 'conditions load-scoped takes, per source' }),
  explanation: Type.String(),
  unparsed: Type.Optional(Type.Array(Type.String(), { description: 'words the tool could not turn into a filter' })),
})

type Input = Static<typeof input>
type FilterOp = FilterT['op']

/** Words that carry no condition of their own ("show me only the amounts in …"). */
const FILLER = new Set(
  'only in the for of all and with amount amounts transaction transactions record records row rows entries entry show me from during where is are that those please on a an just any give list find keep'.split(
    ' ',
  ),
)

/** Comparison phrases, longest first so "more than" wins over a lone "more". */
const COMPARISONS: [string[], FilterOp][] = [
  [['more', 'than'], 'gt'],
  [['greater', 'than'], 'gt'],
  [['larger', 'than'], 'gt'],
  [['higher', 'than'], 'gt'],
  [['less', 'than'], 'lt'],
  [['lower', 'than'], 'lt'],
  [['smaller', 'than'], 'lt'],
  [['at', 'least'], 'gte'],
  [['at', 'most'], 'lte'],
  [['up', 'to'], 'lte'],
  [['equal', 'to'], 'eq'],
  [['above'], 'gt'],
  [['over'], 'gt'],
  [['exceeding'], 'gt'],
  [['below'], 'lt'],
  [['under'], 'lt'],
  [['exactly'], 'eq'],
]

const SIGNS: Record<string, 'gt' | 'lt'> = { sales: 'gt', sale: 'gt', refunds: 'lt', refund: 'lt', credits: 'lt' }

class Reader {
  readonly filters: FilterT[] = []
  readonly said: string[] = []
  readonly unparsed: string[] = []
  private readonly finder: ColumnFinder
  private readonly today: string
  private readonly toks: Token[]
  private signs: ('gt' | 'lt')[] = []
  private i = 0

  constructor(private readonly input: Input) {
    this.finder = new ColumnFinder({ ...input, mappings: input.current_mappings })
    this.today = input.today ?? todayIso()
    this.toks = tokens(input.text)
  }

  private at(k: number): Token | undefined {
    return this.toks[this.i + k]
  }

  private words(list: string[]): boolean {
    return list.every((w, k) => this.at(k)?.word === w)
  }

  read(): void {
    while (this.i < this.toks.length) {
      const before = this.i
      if (!this.step()) {
        const t = this.toks[this.i++]
        if (!FILLER.has(t.word)) this.unparsed.push(t.text)
      }
      if (this.i === before) this.i++
    }
    for (const sign of this.signs) this.sign(sign)
  }

  /** Reads one phrase at the cursor; false when none starts here. */
  private step(): boolean {
    const t = this.toks[this.i]
    if (this.comparisonAt(1)) {
      const qualified = this.finder.named(t.word, ['number'])
      if (qualified.length) {
        this.i++
        return this.comparison(qualified)
      }
    }
    if (this.comparisonAt(0)) return this.comparison()
    // "date between 2024-01-05 and 2024-01-20", "settlement_date in January 2026"
    const dated = t.kind === 'word' ? this.finder.named(t.word, ['time']) : []
    if (dated.length) {
      const at = this.i++
      while (['in', 'during', 'on', 'is'].includes(this.at(0)?.word ?? '')) this.i++
      if (this.i < this.toks.length && this.period(dated)) return true
      this.i = at
    }
    if (SIGNS[t.word]) {
      this.signs.push(SIGNS[t.word])
      this.i++
      return true
    }
    if (isCurrencyCode(t)) return this.currency(t)
    return this.period()
  }

  private comparisonAt(k: number): [number, FilterOp] | undefined {
    if (this.at(k)?.word === 'between' && this.at(k + 1)?.kind === 'number') return [1, 'between']
    for (const [phrase, op] of COMPARISONS) {
      const matches = phrase.every((w, j) => this.at(k + j)?.word === w)
      if (matches && this.at(k + phrase.length)?.kind === 'number') return [phrase.length, op]
    }
    return undefined
  }

  private comparison(only?: { side: SourceSide; col: { name: string } }[]): boolean {
    const found = this.comparisonAt(0)
    if (!found) return false
    const [length, op] = found
    this.i += length
    const n = this.toks[this.i++].text
    let value: FilterT['value'] = numberValue(n)
    let words = `${op} ${n}`
    if (op === 'between') {
      const hi = this.at(0)?.word === 'and' && this.at(1)?.kind === 'number' ? this.at(1) : undefined
      if (!hi) {
        this.unparsed.push(`between ${n}`)
        return true
      }
      this.i += 2
      value = [numberValue(n), numberValue(hi.text)]
      words = `between ${n} and ${hi.text}`
    }
    const targets =
      only ??
      (['a', 'b'] as const).flatMap((side) => {
        const col = this.finder.amountColumn(side)
        return col ? [{ side, col }] : []
      })
    for (const { side, col } of targets) this.filters.push({ source: side, column: col.name, op, value })
    this.said.push(`${targets.map((x) => `${x.side}.${x.col.name}`).join(' and ')} ${words}`)
    return true
  }

  private currency(t: Token): boolean {
    const code = t.text.toUpperCase()
    const cols = (['a', 'b'] as const).flatMap((side) => {
      const col = this.finder.find(side, 'currency', ['string'])
      return col ? [{ side, col }] : []
    })
    if (!cols.length) return false
    for (const { side, col } of cols) this.filters.push({ source: side, column: col.name, op: 'eq', value: code })
    this.said.push(`currency ${code}`)
    this.i++
    return true
  }

  /** "sales" keeps positive amounts, "refunds" negative ones, unless an amount filter already decides. */
  private sign(op: 'gt' | 'lt'): void {
    const sides: string[] = []
    for (const side of ['a', 'b'] as const) {
      const col = this.finder.amountColumn(side)
      if (!col || this.filters.some((f) => f.source === side && f.column === col.name)) continue
      this.filters.push({ source: side, column: col.name, op, value: 0 })
      sides.push(`${side}.${col.name}`)
    }
    if (sides.length) this.said.push(`${op === 'gt' ? 'sales' : 'refunds'}: ${sides.join(' and ')} ${op} 0`)
  }

  /** Calendar phrases; each puts the period on every source's date column, or on the ones named. */
  private period(on?: { side: SourceSide; col: { name: string; type: string } }[]): boolean {
    const t = this.toks[this.i]
    const year = (k: number) => {
      const y = this.at(k)
      return y?.kind === 'number' && /^(19|20)\d\d$/.test(y.text) ? Number(y.text) : undefined
    }
    const [ty, tm] = this.today.split('-').map(Number)
    // "may" is a month only with its year: "may 2024", not "may include"
    const month = t.word === 'may' && year(1) === undefined ? undefined : monthIndex(t.word)
    if (month !== undefined) {
      const y = year(1)
      this.i += y === undefined ? 1 : 2
      // a month without a year is the latest one that has begun
      const p = monthPeriod(y ?? (month + 1 > tm ? ty - 1 : ty), month)
      return this.apply(on, p, `${t.text} ${p.first.slice(0, 4)}`)
    }
    if ((t.word === 'last' || t.word === 'previous' || t.word === 'this') && this.at(1)?.word === 'month') {
      this.i += 2
      return this.apply(on, monthPeriod(ty, tm - 1 - (t.word === 'this' ? 0 : 1)), `${t.word} month`)
    }
    if (
      (t.word === 'last' || t.word === 'past') &&
      this.at(1)?.kind === 'number' &&
      /^days?$/.test(this.at(2)?.word ?? '')
    ) {
      const n = Number(this.at(1)?.text)
      this.i += 3
      // "last 7 days" is today and the six days before it
      return this.apply(on, { first: addDays(this.today, 1 - n), last: this.today }, `last ${n} days`)
    }
    if (t.word === 'yesterday' || t.word === 'today') {
      const day = t.word === 'today' ? this.today : addDays(this.today, -1)
      this.i++
      return this.apply(on, { first: day, last: day }, t.word)
    }
    if ((t.word === 'between' || t.word === 'from') && this.at(1)?.kind === 'day' && this.at(3)?.kind === 'day') {
      const first = this.at(1)?.text ?? ''
      const last = this.at(3)?.text ?? ''
      this.i += 4
      return this.apply(on, { first, last }, `${first} to ${last}`)
    }
    if (t.kind === 'day') {
      this.i++
      return this.apply(on, { first: t.text, last: t.text }, t.text)
    }
    const y = year(0)
    if (y !== undefined) {
      this.i++
      return this.apply(on, { first: `${y}-01-01`, last: `${y}-12-31` }, String(y))
    }
    return false
  }

  private apply(
    named: { side: SourceSide; col: { name: string; type: string } }[] | undefined,
    p: Period,
    words: string,
  ): boolean {
    const targets =
      named ??
      (['a', 'b'] as const).flatMap((side) => {
        const col = this.finder.dateColumn(side)
        return col ? [{ side, col }] : []
      })
    for (const { side, col } of targets) this.filters.push(...periodFilters(side, col, p))
    const on = targets.map(({ side, col }) => `${side}.${col.name}`)
    this.said.push(`${words}: ${describePeriod(p)} on ${on.join(' and ') || 'no date column'}`)
    return true
  }
}

export function readFilter(input: Input): Static<typeof output> {
  const reader = new Reader(input)
  reader.read()
  const parts = [reader.said.length ? `Understood: ${reader.said.join('; ')}.` : 'No condition understood.']
  if (reader.unparsed.length) parts.push(`Not understood: "${reader.unparsed.join(' ')}".`)
  return { filters: reader.filters, explanation: parts.join(' '), unparsed: reader.unparsed }
}

/** The filters as load-scoped will resolve them: columns that exist, values of their types. */
export function filterProblems(filters: FilterT[], input: Input): string[] {
  const problems: string[] = []
  for (const side of ['a', 'b'] as const) {
    const schema = (side === 'a' ? input.schema_a : input.schema_b).map((c) => ({ ...c, nullable: c.nullable ?? true }))
    for (const f of filters.filter((x) => x.source === side)) {
      try {
        resolveConditions(schema, [{ column: f.column, op: f.op, value: f.value }])
      } catch (err) {
        if (!(err instanceof ConcordError)) throw err
        problems.push(`source ${side}: ${err.message}${err.suggestion ? ` (${err.suggestion})` : ''}`)
      }
    }
  }
  return problems
}

export const parseNlFilter: AiTool<typeof input, typeof output> = {
  name: 'parse_nl_filter',
  description:
    'Turns a scope request in words ("only January 2026 sales", "amounts above 500", "last month") into filter conditions for each source, saying plainly what it could not parse.',
  input,
  output,
  prompt:
    'You turn a request in words into filter conditions on two sources. Each filter names its source (a or b), one of its columns, an operator (eq, neq, gt, gte, lt, lte, between, in, like) and a value: dates as YYYY-MM-DD, between as [from, to] inclusive. Apply a period to the date column of each source. Put words you cannot turn into a condition in "unparsed".',
  deterministic: readFilter,
  check: (out, input) => filterProblems(out.filters, input),
}
