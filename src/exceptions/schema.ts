// Wire schemas of the exceptions API, shared by the routes, the OpenAPI document and the client SDK.

import { Type } from 'typebox'
import { Nullable, OneOf } from '../wire.js'
import { REASONS } from './classify.js'
const Decimal = Type.String({ pattern: '^-?\\d+(\\.\\d+)?$', description: 'an exact decimal, e.g. "12.50"' })

export const RESOLUTIONS = ['manual_match', 'written_off', 'accepted', 'matched_by_later_run', 'unmatched'] as const

export const ExceptionSchema = Type.Object(
  {
    id: Type.Integer(),
    run_id: Type.String({ description: 'the run that created it' }),
    last_run_id: Nullable(Type.String({ description: 'the latest later run that saw it still open' })),
    recipe_id: Nullable(Type.String()),
    recipe_version: Nullable(Type.Integer()),
    side: OneOf(['left', 'right', 'both'], { description: 'both: an ambiguous match (its records in `keys`)' }),
    record_key: Type.String(),
    keys: Nullable(Type.Object({ left: Type.Array(Type.String()), right: Type.Array(Type.String()) })),
    match_id: Nullable(Type.String({ description: 'the ambiguous or unmatched match it came from' })),
    candidate_key: Nullable(Type.String({ description: 'the closest record of the other side' })),
    amount: Nullable(Type.String({ description: "the record's amount, exact" })),
    amount_at_risk: Type.String({
      description:
        'the difference to the closest candidate for amount reasons, else the whole amount (0 without an amount)',
    }),
    difference: Nullable(Type.String({ description: "the record's amount minus its closest candidate's" })),
    record_date: Nullable(Type.String({ format: 'date' })),
    age_days: Type.Integer({ description: "days since the record's date (or since it was created, without one)" }),
    reason: OneOf(REASONS),
    carry: Type.Boolean({ description: 'whether later runs of the recipe with carry_open_items carry it' }),
    status: OneOf(['open', 'resolved']),
    resolution: Nullable(OneOf(RESOLUTIONS)),
    resolution_detail: Nullable(Type.Record(Type.String(), Type.Unknown())),
    resolved_by: Nullable(Type.String()),
    resolved_at: Nullable(Type.String({ format: 'date-time' })),
    assignee: Nullable(Type.String()),
    version: Type.Integer({ description: 'send it back with a change to refuse a stale one (409)' }),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'Exception' },
)

export const ExceptionPageSchema = Type.Object(
  {
    items: Type.Array(Type.Ref('Exception')),
    next_cursor: Nullable(Type.String({ description: 'pass as cursor= for the next page; null at the end' })),
    total: Type.Optional(Type.Integer({ description: 'with count=true: how many match the filters' })),
  },
  { $id: 'ExceptionPage' },
)

const HistoryEntry = Type.Object({
  id: Type.Integer(),
  actor: Type.String(),
  action: Type.String(),
  detail: Nullable(Type.Record(Type.String(), Type.Unknown())),
  created_at: Type.String({ format: 'date-time' }),
})

export const ExceptionDetailSchema = Type.Object(
  {
    exception: Type.Ref('Exception'),
    comments: Type.Array(HistoryEntry),
    history: Type.Array(HistoryEntry),
    evidence: Nullable(
      Type.Object(
        {
          reason: Type.String({ description: 'why the run left it unmatched, in words' }),
          closest_candidate: Nullable(Type.String()),
          failed: Nullable(Type.Object({ pass: Type.String(), conjunct: Type.String() })),
          tied_with: Nullable(Type.String()),
          record: Type.Record(Type.String(), Type.Unknown(), { description: "the record's columns, as stored" }),
        },
        { description: "from the run's stored results; null when they are gone or for a match" },
      ),
    ),
  },
  { $id: 'ExceptionDetail' },
)

export const ExceptionQuerySchema = Type.Object({
  run_id: Type.Optional(Type.String({ description: 'created by this run' })),
  recipe_id: Type.Optional(Type.String()),
  reason: Type.Optional(Type.String({ description: `one or more, comma-separated: ${REASONS.join(', ')}` })),
  status: Type.Optional(
    Type.Union([Type.Literal('open'), Type.Literal('resolved'), Type.Literal('all')], { default: 'open' }),
  ),
  side: Type.Optional(Type.Union([Type.Literal('left'), Type.Literal('right'), Type.Literal('both')])),
  assignee: Type.Optional(Type.String({ description: 'assigned to this name; "-" for unassigned' })),
  age_min: Type.Optional(Type.Integer({ minimum: 0, description: 'at least this many days old' })),
  age_max: Type.Optional(Type.Integer({ minimum: 0, description: 'at most this many days old' })),
  amount_min: Type.Optional({ ...Decimal, description: 'amount at risk at least this (exact)' }),
  amount_max: Type.Optional({ ...Decimal, description: 'amount at risk at most this (exact)' }),
  sort: Type.Optional(
    Type.Union([Type.Literal('amount'), Type.Literal('age'), Type.Literal('created')], {
      default: 'created',
      description: 'amount: amount at risk; age: oldest first (desc); created: newest first (desc)',
    }),
  ),
  order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')], { default: 'desc' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
  cursor: Type.Optional(Type.String({ description: 'next_cursor of the previous page' })),
  count: Type.Optional(Type.Boolean({ default: false, description: 'also count every match (slower)' })),
})

const Version = Type.Optional(
  Type.Integer({ minimum: 1, description: 'the version you saw: a 409 when it changed since' }),
)
const Reason = Type.String({ minLength: 1, maxLength: 2000 })

export const AssignBodySchema = Type.Object(
  { assignee: Nullable(Type.String({ minLength: 1, maxLength: 200 })), version: Version },
  { additionalProperties: false },
)
export const CommentBodySchema = Type.Object({ text: Reason }, { additionalProperties: false })
export const ResolveBodySchema = Type.Object({ reason: Reason, version: Version }, { additionalProperties: false })

export const MatchBodySchema = Type.Object(
  {
    exception_ids: Type.Array(Type.Integer(), {
      minItems: 2,
      maxItems: 1000,
      description: 'open exceptions of one recipe, at least one left and one right',
    }),
    adjustment: Type.Optional(
      Type.Object(
        { amount: Decimal, reason: Reason },
        {
          description:
            'books the difference: the left amounts minus the right amounts minus this must be within the recipe tolerance',
        },
      ),
    ),
    note: Type.Optional(Reason),
    versions: Type.Optional(
      Type.Record(Type.String(), Type.Integer({ minimum: 1 }), { description: 'exception id → the version you saw' }),
    ),
  },
  { $id: 'ManualMatchRequest', additionalProperties: false },
)

export const UnmatchBodySchema = Type.Object(
  { run_id: Type.String(), match_id: Type.String({ pattern: '^m\\d{7,}$' }), reason: Reason },
  { $id: 'UnmatchRequest', additionalProperties: false },
)

export const BulkBodySchema = Type.Object(
  {
    action: Type.Union([
      Type.Literal('assign'),
      Type.Literal('comment'),
      Type.Literal('accept'),
      Type.Literal('write_off'),
    ]),
    ids: Type.Array(Type.Integer(), { minItems: 1, maxItems: 1000 }),
    assignee: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 200 }))),
    reason: Type.Optional(Reason),
    text: Type.Optional(Reason),
  },
  { $id: 'BulkExceptionRequest', additionalProperties: false },
)

export const BulkResultSchema = Type.Object(
  { action: Type.String(), ids: Type.Array(Type.Integer()), count: Type.Integer() },
  { $id: 'BulkExceptionResult' },
)

export const MatchResultSchema = Type.Object(
  {
    match_group: Type.String({ description: 'the id of this manual match' }),
    exceptions: Type.Array(Type.Ref('Exception')),
    left_amount: Nullable(Type.String()),
    right_amount: Nullable(Type.String()),
    difference: Nullable(Type.String({ description: 'left minus right' })),
    adjustment: Nullable(Type.Object({ amount: Type.String(), reason: Type.String() })),
    accepted_by: Nullable(
      Type.Object(
        {
          pass: Nullable(Type.String()),
          checks: Type.Array(Type.String(), { description: "the recipe's amount checks the sums passed" }),
        },
        { description: 'null when the records have no stored amounts (nothing to check)' },
      ),
    ),
  },
  { $id: 'ManualMatchResult' },
)

export const UnmatchResultSchema = Type.Object(
  {
    run_id: Type.String(),
    match_id: Type.String(),
    exceptions: Type.Array(Type.Ref('Exception'), { description: "the match's records, open again" }),
  },
  { $id: 'UnmatchResult' },
)

export const AgingSchema = Type.Array(
  Type.Object({ bucket: Type.String(), count: Type.Integer(), amount: Type.String() }),
)

export const exceptionWireSchemas = [
  ExceptionSchema,
  ExceptionPageSchema,
  ExceptionDetailSchema,
  MatchBodySchema,
  UnmatchBodySchema,
  BulkBodySchema,
  BulkResultSchema,
  MatchResultSchema,
  UnmatchResultSchema,
]
