// Which column a word means on each source. The order is DESIGN §4's: the workspace glossary
// first, then the mappings the caller confirmed (or detect_field_mappings proposed), then the
// column names themselves.

import type { ColumnT, GlossaryT, MappingT } from './schemas.js'
import { type TypeFamily, typeFamily, Vocabulary } from './language.js'

export type SourceSide = 'a' | 'b'

export interface ColumnContext {
  schema_a: ColumnT[]
  schema_b: ColumnT[]
  mappings?: MappingT[]
  glossary?: GlossaryT
}

/** A name below this score is not taken as what a word means. */
const NAME_THRESHOLD = 0.35

export class ColumnFinder {
  readonly vocabulary: Vocabulary

  constructor(private readonly ctx: ColumnContext) {
    this.vocabulary = new Vocabulary(ctx.glossary)
  }

  schema(side: SourceSide): ColumnT[] {
    return side === 'a' ? this.ctx.schema_a : this.ctx.schema_b
  }

  column(side: SourceSide, name: string): ColumnT | undefined {
    return this.schema(side).find((c) => c.name === name)
  }

  /** The glossary's column for a term on one side ("gross" → b.gross_amount). */
  glossaryColumn(side: SourceSide, term: string): ColumnT | undefined {
    const t = term.toLowerCase()
    const entry = this.ctx.glossary?.terms?.find((g) => g.source === side && g.term.toLowerCase() === t)
    return entry ? this.column(side, entry.column) : undefined
  }

  /** Glossary terms in the order given, for the phrase readers. */
  glossaryTerms(): string[] {
    return (this.ctx.glossary?.terms ?? []).map((g) => g.term.toLowerCase())
  }

  /**
   * The column of one side that `word` means, among columns of the wanted type families:
   * glossary, then the best mapping that mentions the word, then the best-named column.
   */
  find(side: SourceSide, word: string, families?: TypeFamily[]): ColumnT | undefined {
    const fits = (c: ColumnT | undefined) => c && (!families || families.includes(typeFamily(c.type)))
    const glossary = this.glossaryColumn(side, word)
    if (fits(glossary)) return glossary
    const v = this.vocabulary
    let best: { col: ColumnT; score: number } | undefined
    for (const m of this.ctx.mappings ?? []) {
      const col = this.column(side, side === 'a' ? m.field_a : m.field_b)
      if (!fits(col) || !col) continue
      const score = Math.max(v.nameScore(word, m.field_a), v.nameScore(word, m.field_b))
      if (score >= NAME_THRESHOLD && (!best || score > best.score)) best = { col, score }
    }
    if (best) return best.col
    for (const col of this.schema(side)) {
      if (!fits(col)) continue
      const score = v.nameScore(word, col.name)
      if (score >= NAME_THRESHOLD && (!best || score > best.score)) best = { col, score }
    }
    return best?.col
  }

  /** The column a period applies to: the date the word "date" means, else the first temporal column. */
  dateColumn(side: SourceSide): ColumnT | undefined {
    return this.find(side, 'date', ['time']) ?? this.schema(side).find((c) => typeFamily(c.type) === 'time')
  }

  amountColumn(side: SourceSide): ColumnT | undefined {
    return this.find(side, 'amount', ['number']) ?? this.schema(side).find((c) => c.type === 'decimal')
  }

  /**
   * The columns a word in the text names, on either side. A column's own name or a glossary term
   * names that column, and through the mappings its partner on the other side: with amount mapped
   * to gross_amount, "amount above 500" is about both sources' amounts. A word that names no
   * column but a synonym group ("total", "date") means that kind of column on both sides.
   */
  named(word: string, families?: TypeFamily[]): { side: SourceSide; col: ColumnT }[] {
    const fits = (c: ColumnT | undefined): c is ColumnT => !!c && (!families || families.includes(typeFamily(c.type)))
    const own = (side: SourceSide) => {
      const col =
        this.glossaryColumn(side, word) ?? this.schema(side).find((c) => c.name.toLowerCase() === word.toLowerCase())
      return fits(col) ? col : undefined
    }
    const found = { a: own('a'), b: own('b') }
    if (found.a || found.b) {
      for (const [side, other] of [
        ['a', 'b'],
        ['b', 'a'],
      ] as const) {
        const known = found[other]
        if (found[side] || !known) continue
        const m = this.ctx.mappings?.find((x) => (other === 'a' ? x.field_a : x.field_b) === known.name)
        const partner = m && this.column(side, side === 'a' ? m.field_a : m.field_b)
        if (fits(partner)) found[side] = partner
      }
    } else if (this.vocabulary.groupOfName(word) !== undefined) {
      found.a = this.find('a', word, families)
      found.b = this.find('b', word, families)
    }
    return (['a', 'b'] as const).flatMap((side) => {
      const col = found[side]
      return col ? [{ side, col }] : []
    })
  }
}
