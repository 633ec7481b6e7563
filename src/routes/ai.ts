// /api/ai: the reasoning tools as one stateless gateway.

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { plainSchema } from '../ai/llm.js'

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/api/ai',
    {
      schema: {
        tags: ['ai'],
        summary: 'Run a reasoning tool: { tool, input } → { result, engine }',
        body: Type.Object(
          {
            tool: Type.String({
              description: app.ai
                .tools()
                .map((t) => t.name)
                .join(', '),
            }),
            input: Type.Object({}, { additionalProperties: true, description: "the tool's input (GET /api/ai/tools)" }),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            result: Type.Unknown({ description: "the tool's output" }),
            engine: Type.Union([Type.Literal('deterministic'), Type.Literal('llm')]),
            fallback: Type.Optional(
              Type.Object(
                { error: Type.String(), message: Type.String() },
                { description: 'why the model did not answer' },
              ),
            ),
          }),
          400: Type.Ref('ErrorReply'),
          404: Type.Ref('ErrorReply'),
          422: Type.Ref('ErrorReply'),
          500: Type.Ref('ErrorReply'),
          502: Type.Ref('ErrorReply'),
        },
      },
    },
    async (request) => app.ai.run(request.body.tool, request.body.input),
  )

  app.get(
    '/api/ai/tools',
    {
      schema: {
        tags: ['ai'],
        summary: 'The reasoning tools with their input and output schemas',
        response: {
          200: Type.Object({
            tools: Type.Array(
              Type.Object({
                name: Type.String(),
                description: Type.String(),
                input_schema: Type.Unknown(),
                output_schema: Type.Unknown(),
              }),
            ),
          }),
        },
      },
    },
    async () => ({
      tools: app.ai.tools().map((t) => ({
        name: t.name,
        description: t.description,
        input_schema: plainSchema(t.input),
        output_schema: plainSchema(t.output),
      })),
    }),
  )
}

export default routes
