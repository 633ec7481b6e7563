// Wire schemas of the schedules API, shared by the routes, the OpenAPI document and the client SDK.

import { Type } from 'typebox'
import { Nullable } from '../wire.js'
import { ROLLING_TOKENS } from './rolling.js'

const Binding = Type.Union([
  Type.String(),
  Type.Number(),
  Type.Boolean(),
  Type.Object(
    { rolling: Type.String({ description: `one of: ${ROLLING_TOKENS.join(', ')}` }) },
    { additionalProperties: false, description: 'resolved when the schedule fires, in its time zone' },
  ),
])

const fields = {
  name: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
  cron: Type.String({
    description: 'minute hour day-of-month month day-of-week, e.g. "0 6 * * *"; or @daily, @hourly, @weekly, @monthly',
  }),
  timezone: Type.Optional(
    Type.String({ default: 'UTC', description: 'an IANA zone: when the cron fires and what "today" is' }),
  ),
  params: Type.Optional(
    Type.Record(Type.String(), Binding, {
      description: 'values of the recipe parameters: fixed, or { "rolling": "yesterday" }',
    }),
  ),
  carry_open_items: Type.Optional(
    Type.Boolean({ default: true, description: "carry the recipe's open exceptions into each run" }),
  ),
  active: Type.Optional(Type.Boolean({ default: true })),
}

export const ScheduleRequestSchema = Type.Object(
  { recipe_id: Type.String(), ...fields },
  { $id: 'ScheduleRequest', additionalProperties: false },
)

export const SchedulePatchSchema = Type.Object(
  {
    name: fields.name,
    cron: Type.Optional(fields.cron),
    timezone: Type.Optional(Type.String()),
    params: fields.params,
    carry_open_items: Type.Optional(Type.Boolean()),
    active: Type.Optional(Type.Boolean()),
    version: Type.Optional(Type.Integer({ minimum: 1, description: 'the version you read: a 409 when it changed' })),
  },
  { $id: 'SchedulePatch', additionalProperties: false },
)

export const ScheduleSchema = Type.Object(
  {
    id: Type.String(),
    recipe_id: Type.String(),
    name: Nullable(Type.String()),
    cron: Type.String(),
    timezone: Type.String(),
    params: Type.Record(Type.String(), Binding),
    carry_open_items: Type.Boolean(),
    active: Type.Boolean(),
    next_run_at: Nullable(
      Type.String({ format: 'date-time', description: 'the next occurrence; null while inactive' }),
    ),
    last_fired_at: Nullable(Type.String({ format: 'date-time' })),
    last_run_id: Nullable(Type.String()),
    last_error: Nullable(Type.Object({ error: Type.String(), message: Type.String() })),
    version: Type.Integer(),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'Schedule' },
)

export const scheduleWireSchemas = [ScheduleRequestSchema, SchedulePatchSchema, ScheduleSchema]
