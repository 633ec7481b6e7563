// /api/chat and /api/sessions: a thin pass-through to the chat agent, its sessions and events.

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { Nullable } from '../wire.js'
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

// Typed where a client reads them; the work in progress (samples, proposals, rules, artifacts)
// is passed through as the agent keeps it (additionalProperties). A draft recipe or a report is
// described as an open object, not by the saved-recipe schema: a draft need not be complete, and
// the serializer would refuse (500) what that schema requires and the draft lacks.
const Draft = Nullable(
  Type.Object(
    {},
    { additionalProperties: true, description: 'the recipe as drafted so far (POST /api/recipes/validate checks it)' },
  ),
)

const Session = Type.Object(
  {
    id: Type.String(),
    phase: Type.String({ description: 'one of GET /api/phases' }),
    status: Type.Union([Type.Literal('active'), Type.Literal('completed')]),
    left_alias: Nullable(Type.String()),
    right_alias: Nullable(Type.String()),
    scope_left: Nullable(Type.Array(Type.Ref('FilterCondition'))),
    scope_right: Nullable(Type.Array(Type.Ref('FilterCondition'))),
    confirmed_pairs: Type.Array(Type.Unknown(), { description: 'the example pairs the user confirmed' }),
    recipe_draft: Draft,
    validation: Nullable(
      Type.Object(
        { valid: Type.Boolean(), issues: Type.Array(Type.Unknown()), suggestions: Type.Array(Type.String()) },
        { additionalProperties: true, description: 'the last validation of the draft (ValidationReport)' },
      ),
    ),
    validation_approved: Type.Boolean(),
    last_run: Nullable(
      Type.Object({ id: Type.String(), mode: Type.String(), summary: Type.Unknown() }, { additionalProperties: true }),
    ),
  },
  { additionalProperties: true, description: 'the session: phase, status and every field' },
)

const CARD_TYPES = [
  'source_preview',
  'sample',
  'match_proposals',
  'rules',
  'recipe',
  'validation',
  'run_summary',
  'exceptions',
]

const Segment = Type.Union([
  Type.Object({ type: Type.Literal('text'), text: Type.String() }),
  Type.Object({
    type: Type.Literal('card'),
    card: Type.Object({
      type: Type.Union(CARD_TYPES.map((c) => Type.Literal(c))),
      data: Type.Unknown({ description: "the card's content: rows, proposals, rules, a recipe, a report, a summary" }),
    }),
  }),
])

const Event = Type.Object(
  {
    seq: Type.Integer(),
    turn: Type.Integer(),
    type: Type.String(),
    reason: Type.String({ description: 'why, as a code (counted in /metrics)' }),
    phase: Type.String(),
    tool: Type.Optional(Type.String()),
    detail: Type.Optional(Type.Unknown()),
    created_at: Type.String(),
  },
  { additionalProperties: true },
)

const Phase = Type.Object({
  name: Type.String(),
  tools: Type.Array(Type.String()),
  instructions: Type.String(),
  prerequisites: Type.Object({ sessionFields: Type.Array(Type.String()) }),
  context: Type.Array(Type.String()),
  transitions: Type.Object({ next: Nullable(Type.String()), back: Type.Array(Type.String()) }),
  owns: Type.Array(Type.String()),
  clears_on_return: Type.Array(Type.String()),
  error_policy: Type.Object({
    maxRetriesPerTool: Type.Integer(),
    onExhausted: Type.Union([Type.Literal('remove_tool'), Type.Literal('end_turn')]),
  }),
})

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
            segments: Type.Array(Segment, { description: 'text and cards, in order' }),
            recipe_draft: Draft,
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
          200: Type.Object({
            phase: Type.String(),
            system: Type.String(),
            tools: Type.Array(
              Type.Object({
                name: Type.String(),
                description: Type.String(),
                input_schema: Type.Unknown({ description: "the tool's input, as JSON Schema" }),
              }),
            ),
          }),
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
        response: { 200: Type.Object({ events: Type.Array(Event) }), ...errors },
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
        response: { 200: Type.Object({ phases: Type.Array(Phase) }) },
      },
    },
    async () => ({ phases: app.chat.phaseList() }),
  )
}

export default routes
