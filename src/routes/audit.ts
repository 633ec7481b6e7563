// /api/audit: the workspace's audit trail and its verification. Admin only: the trail says who
// did what with which key, and holds key administration, which only admins see elsewhere.

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { ENTITY_TYPES } from '../audit/service.js'

const errors = { 400: Type.Ref('ErrorReply'), 403: Type.Ref('ErrorReply') }

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/api/audit',
    {
      schema: {
        tags: ['audit'],
        summary: "The workspace's audit trail: who changed what, when, before and after; newest first by default",
        querystring: Type.Object({
          entity_type: Type.Optional(Type.Union(ENTITY_TYPES.map((t) => Type.Literal(t)))),
          entity_id: Type.Optional(Type.String()),
          action: Type.Optional(Type.String({ description: 'e.g. recipe.updated' })),
          actor: Type.Optional(Type.String({ description: 'e.g. key:<key id>, bootstrap, system' })),
          from: Type.Optional(Type.String({ description: 'ISO 8601 time, inclusive' })),
          to: Type.Optional(Type.String({ description: 'ISO 8601 time, exclusive' })),
          order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')], { default: 'desc' })),
          cursor: Type.Optional(
            Type.Integer({ minimum: 0, description: "the previous page's next_cursor: continue after that seq" }),
          ),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
        }),
        response: { 200: Type.Ref('AuditPage'), ...errors },
      },
      config: { role: 'admin' },
    },
    async (request) => app.audit.list(request.principal.workspace, request.query),
  )

  app.get(
    '/api/audit/verify',
    {
      schema: {
        tags: ['audit'],
        summary:
          "Walk the workspace's hash chain and recompute every hash: ok, or the first row that is missing or was changed",
        response: { 200: Type.Ref('AuditVerify'), ...errors },
      },
      config: { role: 'admin' },
    },
    async (request) => app.audit.verify(request.principal.workspace),
  )
}

export default routes
