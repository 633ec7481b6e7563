// /api/webhooks: subscriptions (admin: a subscription sends the workspace's events to a URL of
// the caller's choosing) and each one's delivery log.

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { attributionOf } from '../audit/service.js'
import type { WebhookInput } from '../webhooks/service.js'

const errors = { 400: Type.Ref('ErrorReply'), 403: Type.Ref('ErrorReply'), 404: Type.Ref('ErrorReply') }
const IdParams = Type.Object({ id: Type.String() })
const Events = Type.Array(Type.Ref('WebhookEvent'), { minItems: 1, maxItems: 16 })
const Url = Type.String({ minLength: 1, maxLength: 2048, description: 'http(s) URL of the receiver' })

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/api/webhooks',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'Subscribe a URL to events; the signing secret is in this reply only',
        body: Type.Object(
          { url: Url, events: Events, active: Type.Optional(Type.Boolean({ default: true })) },
          { additionalProperties: false },
        ),
        response: { 201: Type.Ref('WebhookCreated'), ...errors },
      },
      config: { role: 'admin' },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(
          await app.webhooks.create(request.principal.workspace, request.body as WebhookInput, attributionOf(request)),
        ),
  )

  app.get(
    '/api/webhooks',
    {
      schema: {
        tags: ['webhooks'],
        summary: "The workspace's subscriptions (never their secrets)",
        response: { 200: Type.Ref('WebhookList'), ...errors },
      },
      config: { role: 'admin' },
    },
    async (request) => ({ webhooks: await app.webhooks.list(request.principal.workspace) }),
  )

  app.get(
    '/api/webhooks/:id',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'A subscription',
        params: IdParams,
        response: { 200: Type.Ref('Webhook'), ...errors },
      },
      config: { role: 'admin' },
    },
    async (request) => app.webhooks.get(request.principal.workspace, request.params.id),
  )

  app.patch(
    '/api/webhooks/:id',
    {
      schema: {
        tags: ['webhooks'],
        summary: "Change a subscription's URL, events or active flag",
        params: IdParams,
        body: Type.Object(
          { url: Type.Optional(Url), events: Type.Optional(Events), active: Type.Optional(Type.Boolean()) },
          { additionalProperties: false, minProperties: 1 },
        ),
        response: { 200: Type.Ref('Webhook'), ...errors },
      },
      config: { role: 'admin' },
    },
    async (request) =>
      app.webhooks.update(
        request.principal.workspace,
        request.params.id,
        request.body as Partial<WebhookInput>,
        attributionOf(request),
      ),
  )

  app.delete(
    '/api/webhooks/:id',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'Delete a subscription and its deliveries (pending ones are dropped)',
        params: IdParams,
        response: { 204: Type.Null(), ...errors },
      },
      config: { role: 'admin' },
    },
    async (request, reply) => {
      await app.webhooks.remove(request.principal.workspace, request.params.id, attributionOf(request))
      return reply.code(204).send(null)
    },
  )

  app.get(
    '/api/webhooks/:id/deliveries',
    {
      schema: {
        tags: ['webhooks'],
        summary:
          "A subscription's deliveries, newest first, each with its attempts (status code, error, duration, time)",
        params: IdParams,
        querystring: Type.Object({
          status: Type.Optional(Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('dead')])),
          offset: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
        }),
        response: { 200: Type.Ref('DeliveryList'), ...errors },
      },
      config: { role: 'admin' },
    },
    async (request) => {
      const { status, offset = 0, limit = 20 } = request.query
      return app.webhooks.deliveries(request.principal.workspace, request.params.id, { status, offset, limit })
    },
  )
}

export default routes
