// /api/exceptions: thin routes over the exceptions service. Reads need a viewer, changes an operator.

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import type { Actor } from '../exceptions/changes.js'
import type { ExceptionQuery } from '../exceptions/queries.js'
import {
  AgingSchema,
  AssignBodySchema,
  CommentBodySchema,
  ExceptionQuerySchema,
  ResolveBodySchema,
} from '../exceptions/schema.js'

const errors = {
  400: Type.Ref('ErrorReply'),
  404: Type.Ref('ErrorReply'),
  409: Type.Ref('ErrorReply'),
}
const IdParams = Type.Object({ id: Type.Integer({ minimum: 1 }) })

/** Who makes a request's change: its API key, or the bootstrap key / open mode. */
export function actorOf(request: FastifyRequest): Actor {
  const p = request.principal
  return { actor: p.keyId ? `key:${p.keyId}` : 'bootstrap', request_id: request.id }
}

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/api/exceptions',
    {
      schema: {
        tags: ['exceptions'],
        summary: 'Exceptions, filtered and sorted, a page at a time (open ones unless status says otherwise)',
        querystring: ExceptionQuerySchema,
        response: { 200: Type.Ref('ExceptionPage'), 400: Type.Ref('ErrorReply') },
      },
    },
    async (request) => app.exceptions.list(request.principal.workspace, request.query as ExceptionQuery),
  )

  app.get(
    '/api/exceptions/:id',
    {
      schema: {
        tags: ['exceptions'],
        summary: 'An exception with its comments, history and the evidence the run kept for its record',
        params: IdParams,
        response: { 200: Type.Ref('ExceptionDetail'), ...errors },
      },
    },
    async (request) => app.exceptions.get(request.principal.workspace, request.params.id),
  )

  app.get(
    '/api/runs/:id/exceptions/aging',
    {
      schema: {
        tags: ['exceptions'],
        summary: "A run's open exceptions by age (days since the record's date), with their amount at risk",
        params: Type.Object({ id: Type.String() }),
        response: { 200: AgingSchema, ...errors },
      },
    },
    async (request) => {
      await app.runs.get(request.principal.workspace, request.params.id)
      return app.exceptions.agingForRun(request.principal.workspace, request.params.id)
    },
  )

  app.post(
    '/api/exceptions/:id/assign',
    {
      schema: {
        tags: ['exceptions'],
        summary: 'Assign an open exception (assignee null: unassign)',
        params: IdParams,
        body: AssignBodySchema,
        response: { 200: Type.Ref('Exception'), ...errors },
      },
    },
    async (request) =>
      app.exceptions.assign(request.principal.workspace, request.params.id, request.body, actorOf(request)),
  )

  app.post(
    '/api/exceptions/:id/comments',
    {
      schema: {
        tags: ['exceptions'],
        summary: 'Comment on an exception',
        params: IdParams,
        body: CommentBodySchema,
        response: {
          201: Type.Object({
            id: Type.Integer(),
            actor: Type.String(),
            action: Type.String(),
            detail: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
            created_at: Type.String({ format: 'date-time' }),
          }),
          ...errors,
        },
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(
          await app.exceptions.comment(
            request.principal.workspace,
            request.params.id,
            request.body.text,
            actorOf(request),
          ),
        ),
  )

  for (const [path, resolution, summary] of [
    ['accept', 'accepted', 'Accept an open exception as it is (with a reason)'],
    ['write-off', 'written_off', 'Write an open exception off (with a reason)'],
  ] as const) {
    app.post(
      `/api/exceptions/:id/${path}`,
      {
        schema: {
          tags: ['exceptions'],
          summary,
          params: IdParams,
          body: ResolveBodySchema,
          response: { 200: Type.Ref('Exception'), ...errors },
        },
      },
      async (request) =>
        app.exceptions.resolve(
          request.principal.workspace,
          request.params.id,
          resolution,
          request.body,
          actorOf(request),
        ),
    )
  }

  app.post(
    '/api/exceptions/match',
    {
      schema: {
        tags: ['exceptions'],
        summary:
          "Match chosen records by hand: their amounts must pass the recipe's amount checks, or an adjustment books the difference",
        body: Type.Ref('ManualMatchRequest'),
        response: { 200: Type.Ref('ManualMatchResult'), ...errors },
      },
    },
    async (request) =>
      app.exceptions.match(
        request.principal.workspace,
        request.body as Parameters<typeof app.exceptions.match>[1],
        actorOf(request),
      ),
  )

  app.post(
    '/api/exceptions/unmatch',
    {
      schema: {
        tags: ['exceptions'],
        summary: 'Undo an automatic match of a run: its records become open exceptions (once per match)',
        body: Type.Ref('UnmatchRequest'),
        response: { 200: Type.Ref('UnmatchResult'), ...errors },
      },
    },
    async (request) =>
      app.exceptions.unmatch(
        request.principal.workspace,
        request.body as { run_id: string; match_id: string; reason: string },
        actorOf(request),
      ),
  )

  app.post(
    '/api/exceptions/bulk',
    {
      schema: {
        tags: ['exceptions'],
        summary: 'One action on many exceptions, all or nothing (a missing or resolved one refuses the lot)',
        body: Type.Ref('BulkExceptionRequest'),
        response: { 200: Type.Ref('BulkExceptionResult'), ...errors },
      },
    },
    async (request) =>
      app.exceptions.bulk(
        request.principal.workspace,
        request.body as Parameters<typeof app.exceptions.bulk>[1],
        actorOf(request),
      ),
  )
}

export default routes
