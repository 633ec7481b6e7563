// Wire schemas of webhooks, shared by routes, the OpenAPI document and the client SDK.

import { Type } from 'typebox'
import { Nullable } from '../wire.js'

export const WEBHOOK_EVENTS = ['run.completed', 'run.failed', 'exception.created', 'exception.resolved'] as const
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number]

export const WebhookEventSchema = Type.Union(
  WEBHOOK_EVENTS.map((e) => Type.Literal(e)),
  { $id: 'WebhookEvent' },
)

export const WebhookSchema = Type.Object(
  {
    id: Type.String(),
    url: Type.String(),
    events: Type.Array(Type.Ref('WebhookEvent')),
    active: Type.Boolean({ description: 'an inactive subscription gets no new events; its pending deliveries wait' }),
    created_at: Type.String(),
    updated_at: Type.String(),
  },
  { $id: 'Webhook' },
)

export const WebhookCreatedSchema = Type.Intersect(
  [
    Type.Ref('Webhook'),
    Type.Object({
      secret: Type.String({ description: 'the signing secret: shown in this reply only' }),
    }),
  ],
  { $id: 'WebhookCreated' },
)

export const WebhookListSchema = Type.Object({ webhooks: Type.Array(Type.Ref('Webhook')) }, { $id: 'WebhookList' })

export const DeliveryAttemptSchema = Type.Object(
  {
    attempt: Type.Integer(),
    status_code: Nullable(Type.Integer({ description: "the receiver's HTTP status; null when none came" })),
    error: Nullable(Type.String({ description: 'why the attempt failed; null when it succeeded' })),
    duration_ms: Type.Integer(),
    at: Type.String(),
  },
  { $id: 'DeliveryAttempt' },
)

export const DeliverySchema = Type.Object(
  {
    id: Type.String({ description: 'the delivery id (x-concord-delivery): receivers deduplicate by it' }),
    event: Type.Ref('WebhookEvent'),
    status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('dead')]),
    attempts: Type.Array(Type.Ref('DeliveryAttempt')),
    next_attempt_at: Nullable(Type.String({ description: 'when a pending delivery is tried next' })),
    created_at: Type.String(),
    finished_at: Nullable(Type.String()),
  },
  { $id: 'Delivery' },
)

export const DeliveryListSchema = Type.Object(
  {
    deliveries: Type.Array(Type.Ref('Delivery')),
    total: Type.Integer(),
    offset: Type.Integer(),
    limit: Type.Integer(),
  },
  { $id: 'DeliveryList' },
)

export const webhookWireSchemas = [
  WebhookEventSchema,
  WebhookSchema,
  WebhookCreatedSchema,
  WebhookListSchema,
  DeliveryAttemptSchema,
  DeliverySchema,
  DeliveryListSchema,
]
