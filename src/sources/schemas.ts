// Wire schemas of the sources API, shared by routes, the OpenAPI document and the client SDK.

import { Type } from 'typebox'
import { COLUMN_TYPES, FILTER_OPS } from '../engine/data/types.js'

export const ErrorReply = Type.Object(
  {
    error: Type.String({ description: 'machine-readable code, e.g. unknown_column' }),
    message: Type.String(),
    suggestion: Type.Optional(Type.String()),
    issues: Type.Optional(Type.Array(Type.Ref('ValidationIssue'), { description: 'invalid_recipe: every issue' })),
  },
  { $id: 'ErrorReply' },
)

export const ColumnInfoSchema = Type.Object(
  {
    name: Type.String(),
    type: Type.Union(COLUMN_TYPES.map((t) => Type.Literal(t))),
    nullable: Type.Boolean(),
    scale: Type.Optional(Type.Integer({ description: 'digits after the point, for decimal columns' })),
  },
  { $id: 'ColumnInfo' },
)

const Scalar = Type.Union([Type.String(), Type.Number(), Type.Boolean()])

export const FilterConditionSchema = Type.Object(
  {
    column: Type.String(),
    op: Type.Union(FILTER_OPS.map((o) => Type.Literal(o))),
    value: Type.Union([Scalar, Type.Array(Scalar)], {
      description: 'between: [from, to] inclusive; in: a non-empty list; otherwise one value',
    }),
  },
  { $id: 'FilterCondition', additionalProperties: false },
)

export const Alias = Type.String({
  pattern: '^[A-Za-z][A-Za-z0-9_]{0,62}$',
  description: 'a name for the source: a letter, then letters, digits or _ (at most 63)',
})

export const SourceSchema = Type.Object(
  {
    alias: Type.String(),
    type: Type.String(),
    config: Type.Record(Type.String(), Type.Unknown(), { description: 'connector settings; never a password' }),
    columns: Type.Array(Type.Ref('ColumnInfo')),
    created_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'Source' },
)

export const SourceList = Type.Object({ sources: Type.Array(Type.Ref('Source')) }, { $id: 'SourceList' })

export const NativeQuerySchema = Type.Object(
  {
    language: Type.String({ description: 'postgresql, or engine for sources filtered in the engine' }),
    sql: Type.Optional(Type.String()),
    params: Type.Optional(Type.Array(Type.Unknown())),
    description: Type.Optional(Type.String()),
  },
  { $id: 'NativeQuery' },
)

const Row = Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]))

export const PreviewReply = Type.Object(
  {
    alias: Type.String(),
    columns: Type.Array(Type.Ref('ColumnInfo')),
    rows: Type.Array(Row, { description: 'decimals are exact strings, dates YYYY-MM-DD, timestamps ISO 8601' }),
    total_rows: Type.Integer(),
    preview_rows: Type.Integer(),
  },
  { $id: 'PreviewReply' },
)

/** A client's own set of scoped tables (load-scoped and sample runs name it); none: the workspace's. */
export const ScopeSet = Type.String({
  pattern: '^[A-Za-z0-9_.:-]{1,64}$',
  description:
    "a set of scoped tables of your own: loads and sample runs naming it share it, and no other client's load replaces its tables; without it, the workspace's shared set",
})

export const LoadScopedBody = Type.Object(
  {
    conditions: Type.Optional(
      Type.Array(Type.Ref('FilterCondition'), { description: 'all must hold (AND); none = every row' }),
    ),
    limit: Type.Optional(
      Type.Integer({ minimum: 1, description: 'load at most this many rows (all rows in scope are counted)' }),
    ),
    preview: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 1000, description: 'rows returned in the reply (default 20)' }),
    ),
    scope_set: Type.Optional(ScopeSet),
  },
  { $id: 'LoadScopedBody', additionalProperties: false },
)

export const FilterWarningSchema = Type.Object(
  {
    column: Type.String(),
    code: Type.Literal('date_bounds_timestamp'),
    message: Type.String(),
    suggestion: Type.String(),
  },
  { $id: 'FilterWarning' },
)

export const LoadScopedReply = Type.Object(
  {
    alias: Type.String(),
    columns: Type.Array(Type.Ref('ColumnInfo')),
    rows: Type.Array(Row),
    total_rows: Type.Integer({ description: 'every row in scope' }),
    loaded_rows: Type.Integer({ description: 'rows held in the scoped table (total_rows, or limit)' }),
    preview_rows: Type.Integer({ description: 'rows in this reply' }),
    native_query: Type.Ref('NativeQuery'),
    warnings: Type.Array(Type.Ref('FilterWarning'), {
      description: 'conditions that hold but may not say what was meant (a bare date bounding a timestamp)',
    }),
  },
  { $id: 'LoadScopedReply' },
)

export const sharedSchemas = [
  ErrorReply,
  ColumnInfoSchema,
  FilterConditionSchema,
  SourceSchema,
  SourceList,
  NativeQuerySchema,
  PreviewReply,
  LoadScopedBody,
  FilterWarningSchema,
  LoadScopedReply,
]
