// The recipe (DESIGN §2): which two sources, their keys and scopes, and the passes that match them.

import { type Static, Type } from 'typebox'
import { Nullable } from '../wire.js'

export const PATTERNS = ['1:1', '1:N', 'N:1', 'N:M'] as const
export type Pattern = (typeof PATTERNS)[number]
/** How a 1:1 pass resolves ties instead of holding them as ambiguous (src/engine/match/prefer.ts). */
export const PREFERENCES = ['earliest', 'first_key', 'closest_amount'] as const
export type Preference = (typeof PREFERENCES)[number]

const ToleranceAmount = Type.Union([Type.Number({ minimum: 0 }), Type.String({ pattern: '^\\d+(\\.\\d+)?$' })])

export const AggregateSchema = Type.Object(
  {
    sum: Type.String({
      description:
        "what the group adds up to: SUM(<an expression of the summed side's record>) combined with numbers by + - *, " +
        'e.g. SUM(l.net_amount) - 0.49 (a fee taken once per group), SUM(r.gross_amount - r.fee_amount), ' +
        'SUM(r.amount) * 0.98. The summed side is r for 1:N and l for N:1. A bare column such as r.amount means SUM(r.amount)',
    }),
    equals: Type.String({
      description:
        "what the sum must equal: an expression of the other side's record, e.g. l.amount or r.gross_amount * 0.971 - 0.30 " +
        '(N:M: summed over that side of the group)',
    }),
    tolerance: Type.Optional(
      Type.Union(
        [
          ToleranceAmount,
          Type.Object(
            {
              below: Type.Optional(ToleranceAmount),
              above: Type.Optional(ToleranceAmount),
            },
            { additionalProperties: false, minProperties: 1 },
          ),
        ],
        {
          default: 0,
          description:
            'how far the sum may be from equals: a number (either way), or { below, above } (each 0 when left out): ' +
            '{ "below": 0, "above": 0.50 } lets the sum be up to 0.50 above equals and never below it. ' +
            'Among groups that fit, one that fits exactly is taken first',
        },
      ),
    ),
    max_group: Type.Optional(Type.Integer({ minimum: 2, maximum: 12, default: 5 })),
  },
  { $id: 'RecipeAggregate', additionalProperties: false },
)

const ColumnPair = (what: string) =>
  Type.Tuple([Type.String(), Type.String()], {
    description: `${what}: an expression of each side, left first, e.g. ["l.memo", "r.memo"]`,
  })

export const COMPARISON_KINDS = ['text', 'exact', 'relative', 'absolute', 'days'] as const
export type ComparisonKind = (typeof COMPARISON_KINDS)[number]

export const ComparisonSchema = Type.Object(
  {
    name: Type.String({ pattern: '^[A-Za-z][A-Za-z0-9_\\-]{0,62}$' }),
    text: Type.Optional(ColumnPair('free text compared by similarity levels')),
    exact: Type.Optional(ColumnPair('values compared for equality (categories, codes)')),
    relative: Type.Optional(ColumnPair('numbers compared by relative difference |a - b| / max(|a|, |b|)')),
    absolute: Type.Optional(ColumnPair('numbers compared by absolute difference |a - b|, exactly')),
    days: Type.Optional(ColumnPair('dates or timestamps compared by the lag right minus left, in days')),
    levels: Type.Optional(
      Type.Array(Type.Union([Type.String(), Type.Number(), Type.Tuple([Type.Number(), Type.Number()])]), {
        minItems: 1,
        maxItems: 10,
        description:
          'best first. text: "jaro_winkler >= 0.92", "token_set >= 0.8", "exact", …; relative/absolute: the largest difference of each level (0 = equal); days: a largest |lag| or a [from, to] range of lags. Anything else is the last level, "else".',
      }),
    ),
    tf: Type.Optional(
      Type.Boolean({
        description:
          'term-frequency adjustment: token measures weigh tokens by rarity, an exact agreement on a rare value weighs more than on a common one (default: true for text, false for exact)',
      }),
    ),
  },
  { $id: 'RecipeComparison', additionalProperties: false },
)

const Probability = Type.Number({ minimum: 0, maximum: 1 })

const ModelComparisons = Type.Array(
  Type.Object(
    {
      name: Type.String(),
      levels: Type.Optional(Type.Array(Type.String(), { description: 'the level labels, "else" last (informative)' })),
      m: Type.Array(Probability, { description: 'per level: how often matches fall in it' }),
      u: Type.Array(Probability, { description: 'per level: how often non-matches fall in it' }),
      weights: Type.Optional(Type.Array(Type.Number(), { description: 'log2(m / u) per level (informative)' })),
    },
    { additionalProperties: false },
  ),
)

export const ModelSchema = Type.Object(
  {
    lambda: Type.Number({
      exclusiveMinimum: 0,
      exclusiveMaximum: 1,
      description: 'the probability that two records taken at random match',
    }),
    comparisons: ModelComparisons,
  },
  {
    $id: 'RecipeModel',
    additionalProperties: false,
    description: 'a trained model (as a run reports it): given, the pass uses it instead of learning one',
  },
)

export const TrainSchema = Type.Object(
  {
    seed: Type.Optional(
      Type.Integer({ minimum: 0, description: 'seed of the random pairs that estimate u (default 1)' }),
    ),
    max_iterations: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 100, description: 'expectation–maximisation steps at most (default 25)' }),
    ),
    sample_pairs: Type.Optional(
      Type.Integer({
        minimum: 1000,
        maximum: 10_000_000,
        description: 'random pairs that estimate u (default 200,000)',
      }),
    ),
    confirmed: Type.Optional(
      Type.Array(Type.Object({ left: Type.String(), right: Type.String() }, { additionalProperties: false }), {
        description: 'pairs a person confirmed (record keys): they anchor the estimate',
      }),
    ),
  },
  { $id: 'RecipeTrain', additionalProperties: false },
)

export const PassSchema = Type.Object(
  {
    name: Type.String({ pattern: '^[A-Za-z][A-Za-z0-9_\\-]{0,62}$' }),
    pattern: Type.Union(PATTERNS.map((p) => Type.Literal(p))),
    when: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'a boolean predicate over l. and r. columns (PostgreSQL syntax subset); required unless the pass is probabilistic (compare), where it is an extra condition every match meets',
      }),
    ),
    block: Type.Optional(
      Type.Array(Type.String({ minLength: 1 }), {
        minItems: 1,
        maxItems: 8,
        description:
          'probabilistic passes: blocking rules, each a predicate with an equality, a range or shares_token(l.x, r.y[, cap]); the candidates are the pairs any rule holds for',
      }),
    ),
    compare: Type.Optional(
      Type.Array(Type.Ref('RecipeComparison'), {
        minItems: 1,
        maxItems: 12,
        description: 'makes the pass probabilistic (Fellegi–Sunter): the comparisons whose levels weigh each candidate',
      }),
    ),
    threshold: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        exclusiveMaximum: 1,
        description: 'probabilistic passes: the least match probability a match needs (default 0.5)',
      }),
    ),
    model: Type.Optional(Type.Ref('RecipeModel')),
    train: Type.Optional(Type.Ref('RecipeTrain')),
    after: Type.Optional(
      Type.Array(Type.String(), { description: 'passes that must run first (default: the pass written before)' }),
    ),
    aggregate: Type.Optional(Type.Ref('RecipeAggregate')),
    prefer: Type.Optional(
      Type.Union(
        PREFERENCES.map((p) => Type.Literal(p)),
        {
          description:
            'a 1:1 pass: resolve ties by preferring the earliest records (the dates the pass compares), the first record keys, or the closest amounts, instead of holding them as ambiguous; a record left over is unmatched, tied with the one preferred',
        },
      ),
    ),
  },
  { $id: 'RecipePass', additionalProperties: false },
)

export const SideSchema = Type.Object(
  {
    source: Type.String({ description: 'a registered source alias' }),
    key: Type.Array(Type.String(), { minItems: 1, description: 'columns identifying a record in the evidence' }),
    scope: Type.Optional(Type.Array(Type.Ref('FilterCondition'), { default: [] })),
  },
  { $id: 'RecipeSide', additionalProperties: false },
)

export const LOOKUP_NAME = '^[A-Za-z][A-Za-z0-9_]{0,62}$'

export const LookupSchema = Type.Object(
  {
    source: Type.String({ description: 'a registered source alias; loaded whole when the recipe runs' }),
    key: Type.Array(Type.String(), {
      minItems: 1,
      description: "the columns a lookup() call gives values for, in order: lookup('fx', 'rate', l.currency, …)",
    }),
    as_of: Type.Optional(
      Type.String({
        description:
          'a date or timestamp column: lookup() takes one more value, and the row is the latest whose as_of is on or before it (an FX rate by date)',
      }),
    ),
  },
  {
    $id: 'RecipeLookup',
    additionalProperties: false,
    description:
      "Another registered source used as a lookup table inside predicates: lookup('name', 'column', key values…) is that column of the row whose key equals the values, or NULL",
  },
)

export const PARAM_TYPES = ['date', 'timestamp', 'string', 'integer', 'decimal', 'boolean'] as const
export type ParamType = (typeof PARAM_TYPES)[number]
export const PARAM_OPS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'like'] as const

const ParamTarget = Type.Object(
  {
    column: Type.String(),
    op: Type.Union(
      PARAM_OPS.map((o) => Type.Literal(o)),
      { description: 'how the column compares with the value' },
    ),
  },
  { additionalProperties: false },
)

export const ParamSchema = Type.Object(
  {
    name: Type.String({ pattern: '^[a-z][a-z0-9_]{0,62}$' }),
    type: Type.Union(PARAM_TYPES.map((t) => Type.Literal(t))),
    description: Type.Optional(Type.String()),
    left: Type.Optional(ParamTarget),
    right: Type.Optional(ParamTarget),
    required: Type.Optional(
      Type.Boolean({ default: true, description: 'false: the condition is left out when no value is given' }),
    ),
  },
  {
    $id: 'RecipeParam',
    additionalProperties: false,
    description: 'A value given when the recipe runs, added to the scope of the sides it names (left and/or right)',
  },
)

export const RecipeSchema = Type.Object(
  {
    version: Type.Optional(
      Type.Integer({ minimum: 1, description: 'the saved version; set by the service when the recipe is saved' }),
    ),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    description: Type.Optional(Type.String()),
    left: Type.Ref('RecipeSide'),
    right: Type.Ref('RecipeSide'),
    passes: Type.Array(Type.Ref('RecipePass'), { minItems: 1 }),
    params: Type.Optional(Type.Array(Type.Ref('RecipeParam'), { description: 'runtime parameters, e.g. a period' })),
    lookups: Type.Optional(
      Type.Record(Type.String({ pattern: LOOKUP_NAME }), Type.Ref('RecipeLookup'), {
        additionalProperties: false,
        description: 'lookup tables by name (a fee schedule, FX rates, per-currency tolerances), read with lookup()',
      }),
    ),
  },
  { $id: 'Recipe', additionalProperties: false },
)

export interface RecipeAggregate {
  sum: string
  equals: string
  tolerance?: number | string | { below?: number | string; above?: number | string }
  max_group?: number
}
export interface RecipeComparison {
  name: string
  text?: [string, string]
  exact?: [string, string]
  relative?: [string, string]
  absolute?: [string, string]
  days?: [string, string]
  levels?: (string | number | [number, number])[]
  tf?: boolean
}
export interface RecipeModel {
  lambda: number
  comparisons: { name: string; levels?: string[]; m: number[]; u: number[]; weights?: number[] }[]
}
export interface RecipeTrain {
  seed?: number
  max_iterations?: number
  sample_pairs?: number
  confirmed?: { left: string; right: string }[]
}
export interface RecipePass {
  name: string
  pattern: Pattern
  /** Required unless the pass is probabilistic (`compare`). */
  when?: string
  after?: string[]
  aggregate?: RecipeAggregate
  prefer?: Preference
  block?: string[]
  compare?: RecipeComparison[]
  threshold?: number
  model?: RecipeModel
  train?: RecipeTrain
}

/** A pass with comparisons is probabilistic: blocking rules find candidates, a model weighs them. */
export const isProbabilistic = (pass: RecipePass): boolean => pass.compare !== undefined

/** A deterministic pass's predicate (validation sees that every such pass has one). */
export function conditionOf(pass: RecipePass): string {
  if (pass.when === undefined) throw new Error(`pass "${pass.name}" has no "when" (and no "compare")`)
  return pass.when
}
export interface RecipeSide {
  source: string
  key: string[]
  scope?: import('../engine/data/types.js').FilterCondition[]
}
export interface RecipeParam {
  name: string
  type: ParamType
  description?: string
  left?: { column: string; op: (typeof PARAM_OPS)[number] }
  right?: { column: string; op: (typeof PARAM_OPS)[number] }
  required?: boolean
}
export interface RecipeLookup {
  source: string
  key: string[]
  as_of?: string
}
export interface Recipe {
  version?: number
  name: string
  description?: string
  left: RecipeSide
  right: RecipeSide
  passes: RecipePass[]
  params?: RecipeParam[]
  lookups?: Record<string, RecipeLookup>
}

export const recipeSchemas = [
  AggregateSchema,
  ComparisonSchema,
  ModelSchema,
  TrainSchema,
  PassSchema,
  SideSchema,
  ParamSchema,
  LookupSchema,
  RecipeSchema,
]
export type RecipeStatic = Static<typeof RecipeSchema>

// ---- wire schemas of the recipes API --------------------------------------------------------

const Position = Type.Object(
  { start: Type.Integer(), end: Type.Integer() },
  { description: 'character offsets into the pass\'s "when", or into the text `field` names' },
)

export const ValidationIssueSchema = Type.Object(
  {
    pass: Type.Union([Type.String(), Type.Null()], { description: 'the pass, or null for the recipe as a whole' }),
    code: Type.String({
      description:
        'unknown_column, unknown_source, unknown_lookup, type_mismatch, unknown_function, syntax_error, no_usable_join, pass_cycle, ' +
        'aggregate_sum_missing, aggregate_sum_twice, aggregate_wrong_side, invalid_aggregate, missing_blocking, invalid_comparison, invalid_model, …',
    }),
    message: Type.String(),
    field: Type.Optional(
      Type.Union(
        [Type.Literal('aggregate.sum'), Type.Literal('aggregate.equals'), Type.Literal('aggregate.tolerance')],
        {
          description: 'the text the issue is about, when it is not the pass\'s "when"',
        },
      ),
    ),
    position: Type.Optional(Position),
    suggestion: Type.Optional(Type.String()),
  },
  { $id: 'ValidationIssue' },
)

export const ValidationReportSchema = Type.Object(
  {
    valid: Type.Boolean(),
    issues: Type.Array(Type.Ref('ValidationIssue')),
    suggestions: Type.Array(Type.String()),
    warnings: Type.Array(
      Type.Object({
        side: Type.Union([Type.Literal('left'), Type.Literal('right')]),
        column: Type.String(),
        code: Type.Literal('date_bounds_timestamp'),
        message: Type.String(),
        suggestion: Type.String(),
      }),
      {
        description:
          'what holds but may not be meant (a bare date bounding a timestamp in a scope); never changes valid',
      },
    ),
  },
  { $id: 'ValidationReport' },
)

export const RecipeViewSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    version: Type.Integer({ description: 'the version shown' }),
    latest_version: Type.Integer(),
    recipe: Type.Ref('Recipe'),
    created_at: Type.String({ format: 'date-time', description: 'when this version was saved' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'RecipeView' },
)

export const RecipeListSchema = Type.Object(
  {
    recipes: Type.Array(
      Type.Object({
        id: Type.String(),
        name: Type.String(),
        latest_version: Type.Integer(),
        created_at: Type.String({ format: 'date-time' }),
        updated_at: Type.String({ format: 'date-time' }),
      }),
    ),
  },
  { $id: 'RecipeList' },
)

const BandExplain = Type.Object({
  column: Type.String({ description: 'the column sorted and searched, as side.column' }),
  lower: Nullable(Type.String()),
  upper: Nullable(Type.String()),
  lower_inclusive: Type.Boolean(),
  upper_inclusive: Type.Boolean(),
  from: Type.Array(Type.String(), { description: 'the conjuncts the band comes from' }),
})

export const ExplainReplySchema = Type.Object(
  {
    passes: Type.Array(
      Type.Object({
        name: Type.String(),
        pattern: Type.String(),
        phase: Type.Integer({ description: 'depth in the pass DAG, from 1' }),
        after: Type.Array(Type.String()),
        join: Type.Union([Type.Literal('hash'), Type.Literal('band'), Type.Literal('probabilistic')]),
        hash_keys: Type.Array(Type.Object({ left: Type.String(), right: Type.String() })),
        band: Type.Union([BandExplain, Type.Null()], {
          description: 'the first band option with both bounds (the one used when there is one option)',
        }),
        bands: Type.Array(BandExplain, {
          description:
            'every band option of a pass without keys; with several, the run joins on the one with the fewest estimated pairs, chosen on the data',
        }),
        residuals: Type.Array(Type.String()),
        checks: Type.Array(Type.String(), {
          description: 'the conjuncts checked on each pair of the join, in the order they run (cheap first)',
        }),
        aggregate: Type.Union([
          Type.Object({
            sum: Type.String({ description: 'the group sum with SUM written out, e.g. SUM(l.net_amount) - 0.49' }),
            equals: Type.String(),
            tolerance: Type.String({ description: 'one number when symmetric, else "below …, above …"' }),
            below: Type.String({ description: 'how far the sum may fall below equals' }),
            above: Type.String({ description: 'how far the sum may rise above equals' }),
            max_group: Type.Integer(),
          }),
          Type.Null(),
        ]),
        scoring: Type.Object({
          amount: Nullable(Type.String()),
          date: Nullable(Type.String()),
          similarity: Nullable(Type.String()),
        }),
        lookups: Type.Array(
          Type.Object({
            name: Type.String(),
            source: Type.String(),
            key: Type.Array(Type.String()),
            as_of: Nullable(Type.String()),
          }),
          { description: "the recipe's lookup tables the pass reads, each indexed once per run" },
        ),
        probabilistic: Type.Optional(
          Type.Object({
            blocking: Type.Array(
              Type.Object({
                rule: Type.String(),
                join: Type.Union([Type.Literal('hash'), Type.Literal('band'), Type.Literal('token')]),
              }),
            ),
            comparisons: Type.Array(
              Type.Object({
                name: Type.String(),
                kind: Type.String(),
                left: Type.String(),
                right: Type.String(),
                levels: Type.Array(Type.String()),
                tf: Type.Boolean(),
              }),
            ),
            threshold: Type.Number(),
            model: Type.Union([
              Type.Object({
                source: Type.Union([Type.Literal('recipe'), Type.Literal('run')]),
                lambda: Type.Number(),
                comparisons: ModelComparisons,
              }),
              Type.Null(),
            ]),
          }),
        ),
        prefer: Type.Union(
          [
            Type.Object({
              value: Type.String(),
              by: Type.String({ description: 'what the preference compares, in order' }),
            }),
            Type.Null(),
          ],
          { description: '1:1 passes: how ties are resolved (null: held as ambiguous)' },
        ),
      }),
    ),
    text: Type.String({ description: 'the plan as readable text' }),
  },
  { $id: 'ExplainReply' },
)

export const recipeWireSchemas = [
  ...recipeSchemas,
  ValidationIssueSchema,
  ValidationReportSchema,
  RecipeViewSchema,
  RecipeListSchema,
  ExplainReplySchema,
]
