// /api/runs: thin routes over the runs service and the result files.

import type { OutgoingHttpHeaders } from 'node:http'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { arrowExport } from '../runs/pages.js'
import { RESULT_SETS, type ResultSet } from '../runs/results.js'
import type { StartRun } from '../runs/service.js'
import { IdempotencyHeaders } from '../idempotency.js'
import { attributionOf } from '../audit/service.js'

const errors = { 400: Type.Ref('ErrorReply'), 404: Type.Ref('ErrorReply'), 409: Type.Ref('ErrorReply') }
const IdParams = Type.Object({ id: Type.String() })
const PAGE = { offset: 0, limit: 100 }

// optional in the document (a client may leave them out), filled with their defaults by validation
const Paging = {
  offset: Type.Optional(Type.Integer({ minimum: 0, default: PAGE.offset })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: PAGE.limit })),
}

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/api/runs',
    {
      config: { idempotent: true },
      schema: {
        tags: ['runs'],
        summary: 'Start a run: 202 with the run, which then executes in the background',
        headers: IdempotencyHeaders,
        body: Type.Ref('RunRequest'),
        response: { 202: Type.Ref('RunView'), ...errors },
      },
    },
    async (request, reply) =>
      reply
        .code(202)
        .send(
          await app.runs.start(
            request.principal.workspace,
            request.body as StartRun,
            null,
            request.log,
            '',
            attributionOf(request),
          ),
        ),
  )

  app.get(
    '/api/runs',
    {
      schema: {
        tags: ['runs'],
        summary: 'Runs, newest first',
        querystring: Type.Object(Paging),
        response: { 200: Type.Ref('RunList') },
      },
    },
    async (request) =>
      app.runs.list(
        request.principal.workspace,
        request.query.limit ?? PAGE.limit,
        request.query.offset ?? PAGE.offset,
      ),
  )

  app.get(
    '/api/runs/:id',
    {
      schema: {
        tags: ['runs'],
        summary: 'A run: status, progress, summary',
        params: IdParams,
        response: { 200: Type.Ref('RunView'), ...errors },
      },
    },
    async (request) => app.runs.get(request.principal.workspace, request.params.id),
  )

  app.get(
    '/api/runs/:id/matches',
    {
      schema: {
        tags: ['runs'],
        summary: 'A page of matches: clean and ambiguous in match order, or one of them with `ambiguous`',
        params: IdParams,
        querystring: Type.Object({
          ...Paging,
          pass: Type.Optional(Type.String({ description: 'only this pass' })),
          ambiguous: Type.Optional(Type.Boolean({ description: 'only ambiguous (true) or clean (false) matches' })),
          key: Type.Optional(Type.String({ description: 'only the matches holding this record key (either side)' })),
        }),
        response: { 200: Type.Ref('MatchesPage'), ...errors },
      },
    },
    async (request) => {
      const { offset = PAGE.offset, limit = PAGE.limit, pass, ambiguous, key } = request.query
      return app.runs.pages.matchesPage(
        await app.runs.completedDir(request.principal.workspace, request.params.id),
        offset,
        limit,
        { pass, ambiguous, key },
      )
    },
  )

  for (const side of ['left', 'right'] as const) {
    app.get(
      `/api/runs/:id/unmatched/${side}`,
      {
        schema: {
          tags: ['runs'],
          summary: `A page of unmatched ${side} records, each with its closest candidate and why it failed`,
          params: IdParams,
          querystring: Type.Object({
            ...Paging,
            failed_pass: Type.Optional(Type.String({ description: 'only records whose nearest miss is in this pass' })),
            key: Type.Optional(Type.String({ description: 'only the record with this key' })),
          }),
          response: { 200: Type.Ref('UnmatchedPage'), ...errors },
        },
      },
      async (request) => {
        const { offset = PAGE.offset, limit = PAGE.limit, failed_pass, key } = request.query
        const dir = await app.runs.completedDir(request.principal.workspace, request.params.id)
        return app.runs.pages.unmatchedPage(dir, side, offset, limit, { failedPass: failed_pass, recordKey: key })
      },
    )
  }

  app.get(
    '/api/runs/:id/export',
    {
      schema: {
        tags: ['runs'],
        summary:
          'Download a result set, streamed: CSV, or the Arrow IPC file. matches: the clean matches; ambiguous: the matches held for review',
        params: IdParams,
        querystring: Type.Object({
          format: Type.Optional(Type.Union([Type.Literal('csv'), Type.Literal('arrow')], { default: 'csv' })),
          set: Type.Optional(
            Type.Union(
              RESULT_SETS.map((s) => Type.Literal(s)),
              { default: 'matches' },
            ),
          ),
        }),
        response: { 200: Type.String({ description: 'the file' }), ...errors },
      },
    },
    async (request, reply) => {
      const { format = 'csv', set = 'matches' } = request.query as { format?: 'csv' | 'arrow'; set?: ResultSet }
      const dir = await app.runs.completedDir(request.principal.workspace, request.params.id)
      const name = `run-${request.params.id}-${set}.${format}`
      reply.header('content-disposition', `attachment; filename="${name}"`)
      if (format === 'arrow') return reply.type('application/vnd.apache.arrow.file').send(arrowExport(dir, set))
      // opened first: a set that cannot be read is still answered as an error, before any byte
      const csv = await app.runs.exporter.open(dir, set)
      // written here rather than piped by Fastify: the export's shared buffers are reused as soon as
      // each write's callback says the socket has taken them (exporter.ts), which a pipe does not tell
      reply.type('text/csv; charset=utf-8').hijack()
      reply.raw.writeHead(200, reply.getHeaders() as OutgoingHttpHeaders)
      const whole = await csv.pipeTo(reply.raw).catch((err: Error) => {
        request.log.warn({ err, set }, 'CSV export failed after its first bytes: the response was cut short')
        return true
      })
      if (!whole) request.log.info({ set }, 'CSV export stopped: the client closed the connection')
    },
  )

  app.post(
    '/api/runs/:id/cancel',
    {
      schema: {
        tags: ['runs'],
        summary: 'Cancel a queued or running run; its resources are freed and nothing of it is kept',
        params: IdParams,
        response: { 200: Type.Ref('RunView'), ...errors },
      },
    },
    async (request) => app.runs.cancel(request.principal.workspace, request.params.id, attributionOf(request)),
  )

  app.post(
    '/api/runs/:id/retry',
    {
      schema: {
        tags: ['runs'],
        summary: 'Start a new run with what a finished run ran (recipe, parameters, mode, engine)',
        params: IdParams,
        response: { 202: Type.Ref('RunView'), ...errors },
      },
    },
    async (request, reply) =>
      reply
        .code(202)
        .send(await app.runs.retry(request.principal.workspace, request.params.id, attributionOf(request))),
  )

  app.delete(
    '/api/runs/:id',
    {
      schema: {
        tags: ['runs'],
        summary: 'Delete a run and its stored results (a running run is cancelled first)',
        params: IdParams,
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await app.runs.remove(request.principal.workspace, request.params.id, attributionOf(request))
      return reply.code(204).send(null)
    },
  )
}

export default routes
