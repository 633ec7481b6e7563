// GET /api/runs/:id/report: a completed run's report as one self-contained HTML page (print it
// for a PDF). Refusals are the result pages' JSON errors: 404 for no such run, 409 until it completed.

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { FiguresThread } from '../runs/report/figures-thread.js'
import { renderReport } from '../runs/report/html.js'
import { type ExceptionAging, runReport } from '../runs/report/report.js'

export interface ReportRoutesOptions {
  /** Exception aging for the report's "Exceptions by age" section (the exceptions service's). */
  exceptionAging?: ExceptionAging
}

/**
 * The page fetches nothing and runs nothing: styles and SVG are inline, and this policy holds it
 * to that, so even a value that slipped past escaping could neither run script nor call out.
 */
const POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

/** Bins of each delta histogram, about. */
const BINS = 24

const routes: FastifyPluginAsyncTypebox<ReportRoutesOptions> = async (app, opts) => {
  const thread = new FiguresThread()
  app.addHook('onClose', () => thread.close())
  app.get(
    '/api/runs/:id/report',
    {
      schema: {
        tags: ['runs'],
        summary:
          "A completed run's report as an HTML page: match rate and amounts per side and pass, unmatched by reason, delta histograms, the largest unmatched records, exceptions by age; print it for a PDF",
        params: Type.Object({ id: Type.String() }),
        querystring: Type.Object({
          top: Type.Optional(
            Type.Integer({ minimum: 1, maximum: 100, default: 10, description: 'unmatched records listed per side' }),
          ),
        }),
        response: {
          200: {
            description: 'the report page (self-contained: inline styles and SVG, no script)',
            content: { 'text/html': { schema: Type.String() } },
          },
          400: Type.Ref('ErrorReply'),
          404: Type.Ref('ErrorReply'),
          409: Type.Ref('ErrorReply'),
        },
      },
    },
    async (request, reply) => {
      const report = await runReport(
        {
          db: app.db,
          runs: app.runs,
          log: request.log,
          figures: (...args) => thread.figures(...args),
          exceptionAging: opts.exceptionAging,
        },
        request.principal.workspace,
        request.params.id,
        { top: request.query.top ?? 10, bins: BINS },
      )
      return reply
        .type('text/html; charset=utf-8')
        .header('content-security-policy', POLICY)
        .header('x-content-type-options', 'nosniff')
        .header('cache-control', 'no-store')
        .send(renderReport(report))
    },
  )
}

export default routes
