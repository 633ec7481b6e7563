// Schema pieces shared by the reasoning tools. Sources are `a` and `b` in tool inputs; in recipes
// they are `l` (left, a) and `r` (right, b).

import { type Static, Type } from 'typebox'
import { COLUMN_TYPES, type ColumnType, FILTER_OPS, type FilterOp } from '../engine/data/types.js'
import { ComparisonSchema } from '../recipes/schema.js'

// Type.Union over a .map() of literals types as never; Unsafe keeps the same JSON schema and
// gives TypeScript the literal union.
const PATTERNS = ['1:1', '1:N', 'N:1', 'N:M'] as const
export type PatternT = (typeof PATTERNS)[number]
const literalUnion = <T extends string>(values: readonly T[]) =>
  Type.Unsafe<T>(Type.Union(values.map((v) => Type.Literal(v))))

export const Column = Type.Object(
  {
    name: Type.String(),
    type: literalUnion<ColumnType>(COLUMN_TYPES),
    nullable: Type.Optional(Type.Boolean()),
    scale: Type.Optional(Type.Integer()),
  },
  { description: 'a column as GET /api/sources/:alias describes it' },
)
export const TableSchema = Type.Array(Column, { description: 'the columns of a source' })

const Cell = Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()])
export const Row = Type.Record(Type.String(), Cell)
export const Sample = Type.Array(Row, { description: 'rows as previews return them (decimals as strings)' })

export const Side = Type.Union([Type.Literal('a'), Type.Literal('b')])

export const Mapping = Type.Object({
  field_a: Type.String(),
  field_b: Type.String(),
  confidence: Type.Number({ minimum: 0, maximum: 1 }),
  reason: Type.String(),
})

export const Filter = Type.Object({
  source: Side,
  column: Type.String(),
  op: literalUnion<FilterOp>(FILTER_OPS),
  value: Type.Union([
    Type.String(),
    Type.Number(),
    Type.Boolean(),
    Type.Array(Type.Union([Type.String(), Type.Number()])),
  ]),
})

/**
 * A workspace's business vocabulary, honoured before any guess: `terms` maps a word to a column
 * of a source ("gross" means gross_amount in b), `synonyms` adds words to the name matching.
 */
export const Glossary = Type.Object(
  {
    terms: Type.Optional(
      Type.Array(Type.Object({ term: Type.String(), source: Side, column: Type.String() }), {
        description: 'a word and the column it means',
      }),
    ),
    synonyms: Type.Optional(
      Type.Array(Type.Array(Type.String(), { minItems: 2 }), { description: 'groups of words that mean the same' }),
    ),
  },
  { description: 'business terms and column overrides, honoured before the tool guesses' },
)

/** A confirmed or proposed pair: row positions in sample_a / rows_a and sample_b / rows_b. */
export const PairRef = Type.Object({ left: Type.Integer({ minimum: 0 }), right: Type.Integer({ minimum: 0 }) })

/** A comparison of a probabilistic rule, as a recipe pass writes it (see RecipeComparison). */
const RuleComparison = Type.Object(ComparisonSchema.properties, { additionalProperties: false })

export const Rule = Type.Object({
  name: Type.String({ description: 'a pass name: letters, digits, _ or -' }),
  sql: Type.String({ description: 'a predicate over l. (a) and r. (b) columns, in the recipe language' }),
  description: Type.String(),
  confidence: Type.Number({ minimum: 0, maximum: 1 }),
  pattern: Type.Optional(literalUnion<PatternT>(PATTERNS)),
  aggregate: Type.Optional(
    Type.Object({
      sum: Type.String(),
      equals: Type.String(),
      tolerance: Type.Optional(Type.Union([Type.Number(), Type.String()])),
      max_group: Type.Optional(Type.Integer()),
    }),
  ),
  block: Type.Optional(
    Type.Array(Type.String(), {
      description: 'a probabilistic rule: its blocking rules (sql is then an extra condition, or empty)',
    }),
  ),
  compare: Type.Optional(Type.Array(RuleComparison, { description: 'a probabilistic rule: its comparisons' })),
  threshold: Type.Optional(Type.Number({ exclusiveMinimum: 0, exclusiveMaximum: 1 })),
  train: Type.Optional(
    Type.Object(
      { confirmed: Type.Array(Type.Object({ left: Type.String(), right: Type.String() })) },
      { description: 'the confirmed pairs (record keys) that anchor the learned weights' },
    ),
  ),
})

export const Pattern = literalUnion<PatternT>(PATTERNS)
export const PrimaryKeys = Type.Object({ left: Type.Array(Type.String()), right: Type.Array(Type.String()) })

export type ColumnT = Static<typeof Column>
export type RowT = Static<typeof Row>
export type MappingT = Static<typeof Mapping>
export type FilterT = Static<typeof Filter>
export type GlossaryT = Static<typeof Glossary>
export type RuleT = Static<typeof Rule>
