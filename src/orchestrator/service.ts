// The chat agent's service: one turn per request, exclusive per session. The turn runs on a copy
// of the session and its conversation; only a finished turn is saved (state, messages, events, a
// snapshot, in one transaction), so a model failure mid-turn changes nothing and the same
// message can be sent again.

import { EventEmitter } from 'node:events'
import type Anthropic from '@anthropic-ai/sdk'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { plainSchema, modelClient, modelError } from '../ai/llm.js'
import { aiSettings } from '../ai/service.js'
import { ConcordError } from '../errors.js'
import {
  type Block,
  checkPrerequisites,
  InvalidState,
  offeredTools,
  runTurn,
  type Segment,
  type TurnEvent,
} from './loop.js'
import type { PhaseRegistry } from './phases.js'
import { systemPrompt } from './prompt.js'
import type { SessionState } from './session.js'
import { type StoredEvent, SessionStore } from './store.js'

export interface CardResponse {
  type: 'confirm_match' | 'reject_match' | 'approve_validation'
  proposal_id?: string
}

export interface ChatRequest {
  session_id?: string
  message?: string
  card_response?: CardResponse
}

export interface ChatReply {
  session_id: string
  phase: string
  status: string
  message: string
  segments: Segment[]
  recipe_draft: unknown
}

export class ChatService {
  private client?: Anthropic
  private readonly model?: ReturnType<typeof aiSettings>['model']
  readonly store: SessionStore
  /** Emits `events:<session id>` with the stored events of each turn, for streams. */
  readonly feed = new EventEmitter()
  /** Events counted by type and reason, for metrics. */
  readonly counts = new Map<string, number>()

  constructor(
    private readonly app: FastifyInstance,
    readonly phases: PhaseRegistry,
  ) {
    this.store = new SessionStore(app.db)
    this.model = aiSettings(app.config).model
    this.feed.setMaxListeners(0)
  }

  async chat(ws: string, request: ChatRequest): Promise<ChatReply> {
    if (!this.model)
      throw new ConcordError(
        'model_not_configured',
        'the chat agent needs a model: ANTHROPIC_API_KEY is not set',
        503,
        'set ANTHROPIC_API_KEY, or use the step-by-step tools at POST /api/ai',
      )
    if (!request.message?.trim() && !request.card_response)
      throw new ConcordError('invalid_request', 'send a message or a card_response', 400)
    const known = request.session_id ? await this.store.state(ws, request.session_id) : await this.store.create(ws)
    const lease = await this.store.acquire(known.id, this.app.config.chatLeaseMs)
    if (!lease) {
      // refused, but seen: the session's events and the metrics show the collision
      await this.refused(known.id, known.snapshot + 1, {
        type: 'turn_refused',
        reason: 'session_busy',
        phase: known.phase,
      })
      throw new ConcordError(
        'session_busy',
        'this session is in the middle of another turn',
        409,
        'wait for it to finish',
      )
    }
    const events: TurnEvent[] = []
    try {
      // read under the lease: a turn that finished just before this one took it is included
      const session = await this.store.state(ws, known.id)
      const messages = await this.store.messages(session.id, session.snapshot)
      const base = messages.length
      const blocks: Block[] = []
      if (request.card_response) {
        let told: string
        try {
          told = applyCard(session, request.card_response, events)
        } catch (err) {
          const e = err as ConcordError
          await this.refused(session.id, session.snapshot + 1, {
            type: 'card_error',
            reason: e.code ?? 'card_error',
            phase: session.phase,
            detail: { card: request.card_response, message: e.message },
          })
          throw err
        }
        blocks.push({ type: 'text', text: told })
      }
      if (request.message?.trim()) blocks.push({ type: 'text', text: request.message.trim() })
      messages.push({ role: 'user', content: blocks })
      events.push({
        type: 'turn_started',
        reason: request.card_response ? 'card_response' : 'message',
        phase: session.phase,
      })
      this.client ??= modelClient(this.model)
      let segments: Segment[]
      try {
        segments = await runTurn(
          {
            app: this.app,
            workspace: ws,
            phases: this.phases,
            client: this.client,
            model: this.model.model,
            maxTokens: this.model.maxTokens ?? 4096,
            loopLimit: this.app.config.agentLoopLimit,
            events,
          },
          session,
          messages,
        )
      } catch (err) {
        // nothing of the turn is kept but its events: the session is as it was, the turn retryable
        const failure = err instanceof InvalidState ? err : modelError(err)
        events.push({
          type: err instanceof InvalidState ? 'invalid_state' : 'model_error',
          reason: failure.code,
          phase: session.phase,
          detail: { message: failure.message },
        })
        await this.store.recordEvents(session.id, session.snapshot + 1, events, lease)
        this.publish(session.id, events)
        throw failure
      }
      events.push({ type: 'turn_finished', reason: 'turn_finished', phase: session.phase })
      await this.store.saveTurn(lease, session, base, messages.slice(base), events)
      this.publish(session.id, events)
      return {
        session_id: session.id,
        phase: session.phase,
        status: session.status,
        message: segments
          .filter((s): s is { type: 'text'; text: string } => s.type === 'text')
          .map((s) => s.text)
          .join('\n\n'),
        segments,
        recipe_draft: session.recipe_draft,
      }
    } finally {
      await lease.release()
    }
  }

  private publish(id: string, events: TurnEvent[]): void {
    for (const e of events) {
      const key = `${e.type}:${e.reason}`
      this.counts.set(key, (this.counts.get(key) ?? 0) + 1)
      this.app.metrics?.agentEvents.inc({ type: e.type, reason: e.reason })
    }
    this.feed.emit(`events:${id}`)
  }

  /** A request refused before its turn ran (busy session, bad card): recorded and counted. */
  private async refused(id: string, turn: number, event: TurnEvent): Promise<void> {
    await this.store.recordEvents(id, turn, [event])
    this.publish(id, [event])
  }

  async session(ws: string, id: string): Promise<SessionState & { snapshot: number }> {
    return this.store.state(ws, id)
  }

  /** The exact system prompt and tools the next model call of a session would get. */
  async prompt(ws: string, id: string) {
    const session = await this.store.state(ws, id)
    checkPrerequisites(this.phases, session)
    const phase = this.phases.get(session.phase)
    const tools = offeredTools(this.phases, session)
    return {
      phase: phase.name,
      system: systemPrompt(
        session,
        phase,
        tools.map((t) => t.name),
      ),
      tools: tools.map((t) => ({
        name: t.name,
        description: t.description,
        input_schema: plainSchema(t.input),
      })),
    }
  }

  async undo(ws: string, id: string) {
    return this.step(ws, id, -1)
  }

  async redo(ws: string, id: string) {
    return this.step(ws, id, 1)
  }

  private async step(ws: string, id: string, step: -1 | 1) {
    const current = await this.store.state(ws, id)
    const lease = await this.store.acquire(id, this.app.config.chatLeaseMs)
    if (!lease) {
      await this.refused(id, current.snapshot, { type: 'turn_refused', reason: 'session_busy', phase: current.phase })
      throw new ConcordError('session_busy', 'this session is in the middle of a turn', 409, 'wait for it to finish')
    }
    try {
      const state = await this.store.move(ws, id, step)
      if (!state)
        throw new ConcordError(
          step < 0 ? 'nothing_to_undo' : 'nothing_to_redo',
          `there is nothing to ${step < 0 ? 'undo' : 'redo'}`,
          409,
        )
      const event: TurnEvent = {
        type: step < 0 ? 'undo' : 'redo',
        reason: step < 0 ? 'undo' : 'redo',
        phase: state.phase,
      }
      await this.store.recordEvents(id, state.snapshot, [event], lease)
      this.publish(id, [event])
      return state
    } finally {
      await lease.release()
    }
  }

  events(ws: string, id: string, after?: number): Promise<StoredEvent[]> {
    return this.store.events(ws, id, after)
  }

  phaseList() {
    return this.phases.all().map((p) => ({
      name: p.name,
      tools: p.tools,
      instructions: p.instructions,
      prerequisites: p.prerequisites,
      context: p.contextInjections,
      transitions: { next: this.phases.nextOf(p.name) ?? null, back: p.back },
      owns: p.owns,
      clears_on_return: p.clearsOnReturn,
      error_policy: p.errorPolicy,
    }))
  }
}

/** A card response changes the session before the model is asked; the model is told what happened. */
function applyCard(session: SessionState, card: CardResponse, events: TurnEvent[]): string {
  const record = (detail: unknown) =>
    events.push({ type: 'card_response', reason: card.type, phase: session.phase, detail })
  if (card.type === 'approve_validation') {
    if (!session.validation?.valid)
      throw new InvalidState('there is no valid recipe draft to approve', 'validate the draft first')
    session.validation_approved = true
    record({})
    return '[card] The user approved the recipe draft.'
  }
  const proposal = session.proposals?.find((p) => p.id === card.proposal_id)
  if (!proposal || !session.sample_left || !session.sample_right)
    throw new ConcordError(
      'unknown_proposal',
      `no proposed pair "${card.proposal_id}" in this session`,
      400,
      `the proposals shown are ${session.proposals?.map((p) => p.id).join(', ') || 'none'}`,
    )
  session.proposals = session.proposals!.filter((p) => p !== proposal)
  const left = session.sample_left.rows[proposal.left]
  const right = session.sample_right.rows[proposal.right]
  record({ proposal: proposal.id })
  if (card.type === 'reject_match')
    return `[card] The user rejected the pair ${JSON.stringify(left)} ~ ${JSON.stringify(right)}.`
  session.confirmed_pairs = [...session.confirmed_pairs, { left, right }]
  return `[card] The user confirmed the pair ${JSON.stringify(left)} ~ ${JSON.stringify(right)} (${session.confirmed_pairs.length} confirmed).`
}

declare module 'fastify' {
  interface FastifyInstance {
    chat: ChatService
  }
}

export default fp(
  async (app) => {
    app.decorate('chat', new ChatService(app, app.phases))
  },
  { name: 'chat', dependencies: ['db', 'sources', 'recipes', 'runs', 'ai', 'phases'] },
)
