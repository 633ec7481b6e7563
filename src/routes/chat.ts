// /api/chat and /api/sessions: a thin pass-through to the chat agent, its sessions and events.

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { ChatRequest } from '../orchestrator/service.js'
import { IdempotencyHeaders } from '../idempotency.js'

const errors = {
  400: Type.Ref('ErrorReply'),
  404: Type.Ref('ErrorReply'),
  409: Type.Ref('ErrorReply'),
  502: Type.Ref('ErrorReply'),
  503: Type.Ref('ErrorReply'),
}
const IdParams = Type.Object({ id: Type.String() })
const Session = Type.Object(
  {},
  { additionalProperties: true, description: 'the session: phase, status and every field' },
)

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/api/chat',
    {
      config: { idempotent: true },
      schema: {
        tags: ['chat'],
        summary: 'One turn of the chat agent (a new session without session_id)',
        headers: IdempotencyHeaders,
        body: Type.Object(
          {
            session_id: Type.Optional(Type.String()),
            message: Type.Optional(Type.String({ maxLength: 20_000 })),
            card_response: Type.Optional(
              Type.Object(
                {
                  type: Type.Union([
                    Type.Literal('confirm_match'),
                    Type.Literal('reject_match'),
                    Type.Literal('approve_validation'),
                  ]),
                  proposal_id: Type.Optional(Type.String()),
                },
                { additionalProperties: false },
              ),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            session_id: Type.String(),
            phase: Type.String(),
            status: Type.String(),
            message: Type.String({ description: 'the assistant text of the turn' }),
            segments: Type.Array(Type.Unknown(), { description: 'text and cards, in order' }),
            recipe_draft: Type.Unknown(),
          }),
          ...errors,
        },
      },
    },
    async (request) => app.chat.chat(request.principal.workspace, request.body as ChatRequest),
  )

  app.get(
    '/api/sessions/:id',
    {
      schema: {
        tags: ['chat'],
        summary: 'A session and its fields',
        params: IdParams,
        response: { 200: Session, ...errors },
      },
    },
    async (request) => app.chat.session(request.principal.workspace, request.params.id),
  )

  for (const action of ['undo', 'redo'] as const) {
    app.post(
      `/api/sessions/:id/${action}`,
      {
        schema: {
          tags: ['chat'],
          summary: `${action === 'undo' ? 'Undo' : 'Redo'} the last turn: phase and fields as they were`,
          params: IdParams,
          response: { 200: Session, ...errors },
        },
      },
      async (request) => app.chat[action](request.principal.workspace, request.params.id),
    )
  }

  app.get(
    '/api/sessions/:id/prompt',
    {
      schema: {
        tags: ['chat'],
        summary: 'The exact system prompt and tool list the next model call of the session would get',
        params: IdParams,
        response: {
          200: Type.Object({ phase: Type.String(), system: Type.String(), tools: Type.Array(Type.Unknown()) }),
          ...errors,
        },
      },
    },
    async (request) => app.chat.prompt(request.principal.workspace, request.params.id),
  )

  app.get(
    '/api/sessions/:id/events',
    {
      schema: {
        tags: ['chat'],
        summary: 'Events with reason codes; with Accept: text/event-stream, a live stream (Server-Sent Events)',
        params: IdParams,
        querystring: Type.Object({ after: Type.Optional(Type.Integer({ minimum: -1 })) }),
        response: { 200: Type.Object({ events: Type.Array(Type.Unknown()) }), ...errors },
      },
    },
    async (request, reply) => {
      const id = request.params.id
      // a reconnecting EventSource says where it stopped
      const resumed = Number(request.headers['last-event-id'])
      let after = Number.isInteger(resumed) && resumed >= -1 ? resumed : (request.query.after ?? -1)
      const ws = request.principal.workspace
      const initial = await app.chat.events(ws, id, after)
      if (!request.headers.accept?.includes('text/event-stream')) return { events: initial }
      reply.hijack()
      const out = reply.raw
      out.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })
      const send = (events: { seq: number }[]) => {
        for (const e of events) {
          if (e.seq <= after) continue
          out.write(`id: ${e.seq}\nevent: session_event\ndata: ${JSON.stringify(e)}\n\n`)
          after = e.seq
        }
      }
      send(initial)
      // One read at a time, each from the last event sent: in order and each once. A turn on this
      // instance wakes the stream at once; one on another instance sharing the database is found
      // by reading the event table every CHAT_EVENTS_POLL_MS.
      let reading = false
      let again = false
      let closed = false
      const pump = async (): Promise<void> => {
        if (reading) {
          again = true
          return
        }
        reading = true
        try {
          do {
            again = false
            send(await app.chat.events(ws, id, after))
          } while (again && !closed)
        } catch {
          // the database hiccuped: the next wake-up or poll reads again
        } finally {
          reading = false
        }
      }
      const onEvents = () => void pump()
      const poll = setInterval(onEvents, app.config.chatEventsPollMs)
      app.chat.feed.on(`events:${id}`, onEvents)
      request.raw.on('close', () => {
        closed = true
        clearInterval(poll)
        app.chat.feed.off(`events:${id}`, onEvents)
      })
    },
  )

  app.get(
    '/api/phases',
    {
      schema: {
        tags: ['chat'],
        summary: "The agent's phases: tools, instructions, prerequisites, context and transitions",
        response: { 200: Type.Object({ phases: Type.Array(Type.Unknown()) }) },
      },
    },
    async () => ({ phases: app.chat.phaseList() }),
  )
}

export default routes
