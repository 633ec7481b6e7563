// detect_field_mappings: which column of source a corresponds to which column of source b.

import { type Static, Type } from 'typebox'
import { typeCompatibility, typeFamily, Vocabulary } from '../language.js'
import { describePeriod, monthOf, monthsPeriod, periodFilters } from '../periods.js'
import { type ColumnT, Glossary, Mapping, type MappingT, type RowT, Sample, TableSchema } from '../schemas.js'
import type { AiTool } from '../types.js'

const input = Type.Object(
  {
    schema_a: TableSchema,
    schema_b: TableSchema,
    sample_a: Type.Optional(Sample),
    sample_b: Type.Optional(Sample),
    glossary: Type.Optional(Glossary),
  },
  { additionalProperties: false },
)

const SuggestedFilter = Type.Object({
  source: Type.Union([Type.Literal('a'), Type.Literal('b')]),
  column: Type.String(),
  op: Type.String(),
  value: Type.Unknown(),
  reason: Type.String(),
})

const output = Type.Object({
  mappings: Type.Array(Mapping, { description: 'best first; each column of a and of b in at most one mapping' }),
  suggested_filters: Type.Array(SuggestedFilter),
})

type Input = Static<typeof input>
type Suggested = Static<typeof SuggestedFilter>

// Names carry most of the evidence; equal sample values confirm it. Equal dates are weaker
// evidence than equal references or amounts (two unrelated records often share a day), and
// dates legitimately differ between sources (settlement lag), so none shared is no evidence against.
const W_NAME = 0.45
const W_TYPE = 0.15
const W_VALUES = 0.4
const W_DATES = 0.2
/** Text columns whose samples share nothing are probably not the same thing (scenario vs scenario). */
const DISJOINT_TEXT = 0.5
const MIN_CONFIDENCE = 0.3

/** A sample value as the text two sources would agree on: trimmed, upper case; decimals exact. */
function normalized(value: unknown, col: ColumnT): string | undefined {
  if (value === null || value === undefined || value === '') return undefined
  const family = typeFamily(col.type)
  if (family === 'time') return monthOf(value) ? String(value).slice(0, 10) : undefined
  if (family === 'number') {
    const text = String(value).trim()
    if (!/^[-+]?\d+(\.\d+)?$/.test(text)) return text
    // 3637.7 and 3637.70 are the same amount; compare digits, never floats
    const [int, frac = ''] = text.replace(/^\+/, '').split('.')
    const f = frac.replace(/0+$/, '')
    const i = int.replace(/^(-?)0+(?=\d)/, '$1')
    return f ? `${i}.${f}` : i === '-0' ? '0' : i
  }
  return String(value).trim().toUpperCase()
}

function valueSet(rows: RowT[] | undefined, col: ColumnT): Set<string> {
  const out = new Set<string>()
  for (const row of rows ?? []) {
    const v = normalized(row[col.name], col)
    if (v !== undefined) out.add(v)
  }
  return out
}

/** Share of the smaller side's distinct values that the other side has too. */
function overlap(a: Set<string>, b: Set<string>): number {
  if (!a.size || !b.size) return 0
  const [small, large] = a.size <= b.size ? [a, b] : [b, a]
  let shared = 0
  for (const v of small) if (large.has(v)) shared++
  return shared / small.size
}

interface Candidate extends MappingT {
  glossary?: boolean
}

function score(i: Input, vocab: Vocabulary, a: ColumnT, b: ColumnT): Candidate | undefined {
  const type = typeCompatibility(a.type, b.type)
  if (type === null) return undefined
  const name = vocab.nameScore(a.name, b.name)
  const sampled = (i.sample_a?.length ?? 0) > 0 && (i.sample_b?.length ?? 0) > 0
  const reasons = [name === 1 ? 'same name' : name >= 0.9 ? 'synonymous names' : name > 0 ? 'similar names' : '']
  reasons.push(type === 1 ? `compatible types (${a.type}, ${b.type})` : `types ${a.type} and ${b.type}`)
  let confidence: number
  if (!sampled) confidence = 0.75 * name + 0.25 * type
  else {
    const dates = typeFamily(a.type) === 'time'
    const shared = overlap(valueSet(i.sample_a, a), valueSet(i.sample_b, b))
    confidence = W_NAME * name + W_TYPE * type + (dates ? W_DATES : W_VALUES) * shared
    if (shared > 0) reasons.push(`${Math.round(shared * 100)}% of sample ${dates ? 'dates' : 'values'} shared`)
    else if (typeFamily(a.type) === 'string') {
      confidence *= DISJOINT_TEXT
      reasons.push('no sample value in common')
    }
  }
  if (confidence < MIN_CONFIDENCE) return undefined
  return {
    field_a: a.name,
    field_b: b.name,
    confidence: Math.min(1, Math.round(confidence * 1000) / 1000),
    reason: reasons.filter(Boolean).join('; '),
  }
}

/** Glossary terms that name a column on both sides are mappings by decree. */
function glossaryMappings(i: Input): Candidate[] {
  const terms = i.glossary?.terms ?? []
  const out: Candidate[] = []
  for (const ta of terms.filter((t) => t.source === 'a')) {
    const tb = terms.find((t) => t.source === 'b' && t.term.toLowerCase() === ta.term.toLowerCase())
    if (!tb || !i.schema_a.some((c) => c.name === ta.column) || !i.schema_b.some((c) => c.name === tb.column)) continue
    out.push({
      field_a: ta.column,
      field_b: tb.column,
      confidence: 1,
      reason: `glossary: "${ta.term}" means both`,
      glossary: true,
    })
  }
  return out
}

/** One-to-one, best first: glossary mappings, then the highest-scored pair left, and so on. */
export function detectMappings(i: Input): MappingT[] {
  const vocab = new Vocabulary(i.glossary)
  const candidates: Candidate[] = glossaryMappings(i)
  for (const a of i.schema_a) for (const b of i.schema_b) candidates.push(...[score(i, vocab, a, b)].filter((c) => !!c))
  candidates.sort((x, y) => Number(!!y.glossary) - Number(!!x.glossary) || y.confidence - x.confidence)
  const usedA = new Set<string>()
  const usedB = new Set<string>()
  const out: MappingT[] = []
  for (const c of candidates) {
    if (usedA.has(c.field_a) || usedB.has(c.field_b)) continue
    usedA.add(c.field_a)
    usedB.add(c.field_b)
    out.push({ field_a: c.field_a, field_b: c.field_b, confidence: c.confidence, reason: c.reason })
  }
  return out
}

/**
 * When both samples cover the same whole months on the best-mapped date columns, those months
 * are a natural first scope; otherwise a guess would hide records, so none is suggested.
 */
function suggestFilters(i: Input, mappings: MappingT[]): Suggested[] {
  const col = (schema: ColumnT[], name: string) => schema.find((c) => c.name === name)
  const dates = mappings.find((m) => typeFamily(col(i.schema_a, m.field_a)?.type ?? 'string') === 'time')
  if (!dates || !i.sample_a?.length || !i.sample_b?.length) return []
  const months = (rows: RowT[], name: string) =>
    new Set(rows.map((r) => monthOf(r[name])).filter((m): m is string => !!m))
  const ma = months(i.sample_a, dates.field_a)
  const mb = months(i.sample_b, dates.field_b)
  const same = ma.size > 0 && ma.size === mb.size && [...ma].every((m) => mb.has(m))
  if (!same) return []
  const period = monthsPeriod([...ma])
  const sorted = [...ma].sort()
  const reason = `both samples cover the same ${sorted.length === 1 ? 'month' : `${sorted.length} months`}`
  const ca = col(i.schema_a, dates.field_a)
  const cb = col(i.schema_b, dates.field_b)
  if (!ca || !cb) return []
  return [...periodFilters('a', ca, period), ...periodFilters('b', cb, period)].map((f) => ({
    ...f,
    reason: `${reason}: ${describePeriod(period)}`,
  }))
}

export const detectFieldMappings: AiTool<typeof input, typeof output> = {
  name: 'detect_field_mappings',
  description:
    'Which columns of source a correspond to which columns of source b (ids, references, amounts, dates, names), with a confidence and a reason each, and filters worth suggesting for a first scope.',
  input,
  output,
  prompt:
    'You map the columns of two financial record sources onto each other. Use column names, types and the sample values. A column maps to at most one column of the other side. Give a confidence in 0..1 and a short reason per mapping, best first. Suggest filters only when the samples show an obvious first scope.',
  deterministic(i) {
    const mappings = detectMappings(i)
    return { mappings, suggested_filters: suggestFilters(i, mappings) }
  },
}
