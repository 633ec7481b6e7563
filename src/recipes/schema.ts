// The recipe (DESIGN §2): which two sources, their keys and scopes, and the passes that match them.

import { type Static, Type } from 'typebox'

export const PATTERNS = ['1:1', '1:N', 'N:1', 'N:M'] as const
export type Pattern = (typeof PATTERNS)[number]

export const AggregateSchema = Type.Object(
  {
    sum: Type.String({ description: 'the column summed over the group, e.g. r.total_amount (1:N) or l.amount (N:1)' }),
    equals: Type.String({ description: "what the sum must equal: the other side's amount column, e.g. l.amount" }),
    tolerance: Type.Optional(
      Type.Union([Type.Number({ minimum: 0 }), Type.String({ pattern: '^\\d+(\\.\\d+)?$' })], { default: 0 }),
    ),
    max_group: Type.Optional(Type.Integer({ minimum: 2, maximum: 12, default: 5 })),
  },
  { $id: 'RecipeAggregate', additionalProperties: false },
)

export const PassSchema = Type.Object(
  {
    name: Type.String({ pattern: '^[A-Za-z][A-Za-z0-9_\\-]{0,62}$' }),
    pattern: Type.Union(PATTERNS.map((p) => Type.Literal(p))),
    when: Type.String({
      minLength: 1,
      description: 'a boolean predicate over l. and r. columns (PostgreSQL syntax subset)',
    }),
    after: Type.Optional(
      Type.Array(Type.String(), { description: 'passes that must run first (default: the pass written before)' }),
    ),
    aggregate: Type.Optional(Type.Ref('RecipeAggregate')),
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
  },
  { $id: 'Recipe', additionalProperties: false },
)

export interface RecipeAggregate {
  sum: string
  equals: string
  tolerance?: number | string
  max_group?: number
}
export interface RecipePass {
  name: string
  pattern: Pattern
  when: string
  after?: string[]
  aggregate?: RecipeAggregate
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
export interface Recipe {
  version?: number
  name: string
  description?: string
  left: RecipeSide
  right: RecipeSide
  passes: RecipePass[]
  params?: RecipeParam[]
}

export const recipeSchemas = [AggregateSchema, PassSchema, SideSchema, ParamSchema, RecipeSchema]
export type RecipeStatic = Static<typeof RecipeSchema>

// ---- wire schemas of the recipes API --------------------------------------------------------

const Position = Type.Object(
  { start: Type.Integer(), end: Type.Integer() },
  { description: 'character offsets into the pass\'s "when"' },
)

export const ValidationIssueSchema = Type.Object(
  {
    pass: Type.Union([Type.String(), Type.Null()], { description: 'the pass, or null for the recipe as a whole' }),
    code: Type.String({
      description:
        'unknown_column, unknown_source, type_mismatch, unknown_function, syntax_error, no_usable_join, pass_cycle, …',
    }),
    message: Type.String(),
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

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()])

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
        join: Type.Union([Type.Literal('hash'), Type.Literal('band')]),
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
            sum: Type.String(),
            equals: Type.String(),
            tolerance: Type.String(),
            max_group: Type.Integer(),
          }),
          Type.Null(),
        ]),
        scoring: Type.Object({
          amount: Nullable(Type.String()),
          date: Nullable(Type.String()),
          similarity: Nullable(Type.String()),
        }),
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
