// The generic turn loop (DESIGN §3). Before each model call: prerequisites, the phase's prompt and
// its tools minus exhausted ones. At dispatch: deny by default, validate and normalize arguments,
// answer duplicates from the first result, count failures against a per-tool budget. After each
// result: going back when a tool changed work an earlier phase owns (declared transitions only),
// advancing when the phase's rule holds. Every tool_use gets a tool_result, so the history stays valid for the Messages API.
// No branch here knows any phase: they are configuration (plugins/).

import type Anthropic from '@anthropic-ai/sdk'
import type { FastifyInstance } from 'fastify'
import { Value } from 'typebox/value'
import { plainSchema } from '../ai/llm.js'
import { ConcordError } from '../errors.js'
import type { PhaseRegistry } from './phases.js'
import { resultText, systemPrompt } from './prompt.js'
import { emptyValue, isSet, type PhaseName, type SessionField, type SessionState } from './session.js'
import { type AgentTool, agentTool, type Card } from './tools.js'

export type Block = Anthropic.ContentBlockParam
export interface Message {
  role: 'user' | 'assistant'
  content: Block[]
}

export interface TurnEvent {
  type: string
  /** Why it happened, as a code: what /metrics counts (concord_agent_events_total). */
  reason: string
  phase: PhaseName
  tool?: string
  detail?: unknown
}

export type Segment = { type: 'text'; text: string } | { type: 'card'; card: Card }

export interface TurnContext {
  app: FastifyInstance
  /** The workspace the session belongs to: its tools act there. */
  workspace: string
  phases: PhaseRegistry
  client: Anthropic
  model: string
  maxTokens: number
  loopLimit: number
  events: TurnEvent[]
}

export class InvalidState extends ConcordError {
  constructor(message: string, suggestion?: string) {
    super('invalid_state', message, 409, suggestion)
  }
}

/** What the user reads when the model answers with no text and no tool call. */
export const EMPTY_REPLY =
  'I have no answer to that just now. Could you say it another way, or tell me what you would like to do next?'

/** The model's view of the history: every tool result shortened when large. */
export function forModel(messages: Message[]): Anthropic.MessageParam[] {
  return messages.map((m) => ({
    role: m.role,
    content: m.content.map((b) =>
      b.type === 'tool_result' && typeof b.content === 'string' ? { ...b, content: resultText(b.content) } : b,
    ),
  }))
}

export function offeredTools(
  phases: PhaseRegistry,
  session: SessionState,
  exhausted: Set<string> = new Set(),
): AgentTool[] {
  return phases
    .get(session.phase)
    .tools.filter((t) => !exhausted.has(t))
    .map((t) => agentTool(t)!)
}

export function checkPrerequisites(phases: PhaseRegistry, session: SessionState): void {
  const phase = phases.get(session.phase)
  const missing = phase.prerequisites.sessionFields.filter((f) => !isSet(session[f]))
  if (missing.length)
    throw new InvalidState(
      `phase ${phase.name} needs ${missing.join(', ')}, which the session does not have`,
      'undo the last turn, or start a new session',
    )
}

/** Moves the session forward while the current phase's rule holds. */
export function advance(ctx: Pick<TurnContext, 'phases' | 'events'>, session: SessionState): void {
  for (
    let phase = ctx.phases.get(session.phase), next = ctx.phases.nextOf(phase.name);
    next !== undefined && phase.advancesWhen(session);
    phase = ctx.phases.get(session.phase), next = ctx.phases.nextOf(phase.name)
  ) {
    ctx.events.push({
      type: 'transition',
      reason: 'advanced',
      phase: next,
      detail: { from: phase.name, to: next },
    })
    session.phase = next
  }
}

/**
 * Returns to an earlier phase the current one declares (anything else is invalid_state): what
 * later phases produced is cleared, and of the target's own work what it declares to redo.
 */
export function goBack(ctx: Pick<TurnContext, 'phases' | 'events'>, session: SessionState, to: PhaseName): void {
  const from = ctx.phases.get(session.phase)
  if (from.name === to) return
  if (!from.back.includes(to))
    throw new InvalidState(
      `phase ${from.name} cannot go back to ${to}`,
      `it may go back to ${from.back.join(', ') || 'no phase'}`,
    )
  const cleared = [...ctx.phases.get(to).clearsOnReturn, ...ctx.phases.fieldsAfter(to)]
  for (const field of cleared) (session as unknown as Record<SessionField, unknown>)[field] = emptyValue(field)
  ctx.events.push({ type: 'transition', reason: 'went_back', phase: to, detail: { from: from.name, to, cleared } })
  session.phase = to
}

const canonical = (name: string, input: unknown): string => `${name}:${JSON.stringify(sortKeys(input))}`
function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys)
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]),
    )
  return v
}

/** Arguments as the tool's schema wants them: known aliases renamed, "5" made 5, defaults filled. */
function normalize(tool: AgentTool, raw: unknown): { input?: Record<string, unknown>; problems: string[] } {
  const renamed: Record<string, unknown> = { ...((raw ?? {}) as Record<string, unknown>) }
  for (const [alias, name] of Object.entries(tool.aliases ?? {}))
    if (alias in renamed && !(name in renamed)) {
      renamed[name] = renamed[alias]
      delete renamed[alias]
    }
  const value = Value.Default(tool.input, Value.Convert(tool.input, renamed))
  if (Value.Check(tool.input, value)) return { input: value as Record<string, unknown>, problems: [] }
  return {
    problems: [...Value.Errors(tool.input, value)]
      .slice(0, 5)
      .map((e) => `${e.instancePath || 'arguments'} ${e.message}`),
  }
}

/**
 * One turn: the user's message is already the last message; the model is called until it stops
 * calling tools, or the loop limit. `session` and `messages` are changed in place.
 */
export async function runTurn(ctx: TurnContext, session: SessionState, messages: Message[]): Promise<Segment[]> {
  const segments: Segment[] = []
  const exhausted = new Set<string>()
  const failures = new Map<string, number>()
  const firstResults = new Map<string, { content: string; isError: boolean }>()
  let endTurn = false
  advance(ctx, session)
  for (let call = 0; ; call++) {
    if (call >= ctx.loopLimit) {
      const text = 'I have taken as many steps as I can in one turn. Tell me how you would like to go on.'
      messages.push({ role: 'assistant', content: [{ type: 'text', text }] })
      segments.push({ type: 'text', text })
      ctx.events.push({
        type: 'loop_limit_reached',
        reason: 'loop_limit_reached',
        phase: session.phase,
        detail: { calls: call },
      })
      return segments
    }
    checkPrerequisites(ctx.phases, session)
    const phase = ctx.phases.get(session.phase)
    const tools = offeredTools(ctx.phases, session, exhausted)
    const names = tools.map((t) => t.name)
    ctx.events.push({ type: 'model_call', reason: 'model_call', phase: phase.name, detail: { tools: names } })
    const reply = await ctx.client.messages.create({
      model: ctx.model,
      max_tokens: ctx.maxTokens,
      system: systemPrompt(session, phase, names),
      tools: tools.map((t) => ({
        name: t.name,
        description: t.description,
        input_schema: plainSchema(t.input) as Anthropic.Tool.InputSchema,
      })),
      messages: forModel(messages),
    })
    // empty text blocks are dropped (the Messages API refuses them when replayed); a reply with
    // nothing left still ends the turn with something the user can read and the history can hold
    const content = (reply.content as Block[]).filter((b) => b.type !== 'text' || b.text.trim())
    if (content.length === 0) {
      content.push({ type: 'text', text: EMPTY_REPLY })
      ctx.events.push({
        type: 'empty_reply',
        reason: 'empty_model_reply',
        phase: session.phase,
        detail: { stop_reason: reply.stop_reason },
      })
    }
    messages.push({ role: 'assistant', content })
    for (const block of content) if (block.type === 'text') segments.push({ type: 'text', text: block.text })
    const uses = content.filter((b): b is Anthropic.ToolUseBlockParam => b.type === 'tool_use')
    if (uses.length === 0) return segments

    const results: Block[] = []
    for (const use of uses) {
      const answer = await dispatch(ctx, session, phase.name, use, { exhausted, failures, firstResults }, segments)
      if (answer.endTurn) endTurn = true
      results.push({ type: 'tool_result', tool_use_id: use.id, content: answer.content, is_error: answer.isError })
    }
    messages.push({ role: 'user', content: results })
    if (endTurn) {
      const text = 'A step failed too often; I have stopped this turn. Tell me how you would like to go on.'
      messages.push({ role: 'assistant', content: [{ type: 'text', text }] })
      segments.push({ type: 'text', text })
      return segments
    }
  }
}

interface TurnMemory {
  exhausted: Set<string>
  failures: Map<string, number>
  firstResults: Map<string, { content: string; isError: boolean }>
}

async function dispatch(
  ctx: TurnContext,
  session: SessionState,
  offeredIn: PhaseName,
  use: Anthropic.ToolUseBlockParam,
  memory: TurnMemory,
  segments: Segment[],
): Promise<{ content: string; isError: boolean; endTurn?: boolean }> {
  const phase = ctx.phases.get(offeredIn)
  const event = (type: string, reason: string, detail?: unknown) =>
    ctx.events.push({ type, reason, phase: session.phase, tool: use.name, detail })
  const tool = agentTool(use.name)
  if (!tool || !phase.tools.includes(use.name)) {
    event('tool_denied', 'tool_not_allowed', { input: use.input })
    return {
      content: `tool_not_allowed: ${use.name} is not available in phase ${phase.name}. Available now: ${phase.tools.filter((t) => !memory.exhausted.has(t)).join(', ') || 'none'}.`,
      isError: true,
    }
  }
  if (memory.exhausted.has(use.name)) {
    event('tool_denied', 'retry_budget_exhausted')
    return {
      content: `retry_budget_exhausted: ${use.name} failed too often this turn; do not call it again now.`,
      isError: true,
    }
  }
  const { input, problems } = normalize(tool, use.input)
  const key = canonical(use.name, input ?? use.input)
  const first = memory.firstResults.get(key)
  if (first) {
    event('tool_duplicate', 'duplicate_tool_call_skipped')
    return {
      content: `duplicate_tool_call_skipped: the same call was answered earlier this turn: ${first.content}`,
      isError: first.isError,
    }
  }
  const fail = (code: string, message: string, hint?: string) => {
    const failed = (memory.failures.get(use.name) ?? 0) + 1
    memory.failures.set(use.name, failed)
    const left = Math.max(0, phase.errorPolicy.maxRetriesPerTool - failed + 1)
    let content = `${code}: ${message}${hint ? `\nhint: ${hint}` : ''}\nretries left this turn: ${left}`
    let endTurn = false
    if (left === 0) {
      memory.exhausted.add(use.name)
      event('tool_exhausted', 'retry_budget_exhausted', { failures: failed })
      content += `\n${use.name} is no longer available this turn: do not call it again.`
      endTurn = phase.errorPolicy.onExhausted === 'end_turn'
    } else event('tool_error', code, { message, retries_left: left })
    memory.firstResults.set(key, { content, isError: true })
    return { content, isError: true, endTurn }
  }
  if (!input)
    return fail(
      'invalid_arguments',
      problems.join('; '),
      `the arguments must match: ${JSON.stringify(plainSchema(tool.input))}`,
    )
  const failedBefore = memory.failures.get(use.name) ?? 0
  if (failedBefore) event('tool_retry', 'retry', { failures: failedBefore })
  event('tool_call', 'called', { input })
  let outcome
  try {
    outcome = await tool.run(ctx.app, ctx.workspace, session, input)
  } catch (err) {
    if (err instanceof InvalidState) throw err
    const e = err instanceof ConcordError ? err : new ConcordError('tool_failed', (err as Error).message, 500)
    return fail(e.code, e.message, e.suggestion)
  }
  // a change to work an earlier phase owns sends the session back there, if this phase may go
  const target = ctx.phases.returnFor(session, outcome.patch ?? {})
  if (target)
    try {
      goBack(ctx, session, target)
    } catch (err) {
      if (!(err instanceof InvalidState)) throw err
      // refused: the session keeps its state and the model is told why
      return fail(err.code, err.message, err.suggestion)
    }
  Object.assign(session, outcome.patch ?? {})
  if (outcome.artifact)
    session.artifacts = [...session.artifacts, { id: `a${session.artifacts.length + 1}`, ...outcome.artifact }]
  if (outcome.card) segments.push({ type: 'card', card: outcome.card })
  if (tool.changesState) memory.firstResults.clear()
  const content = JSON.stringify(outcome.result)
  memory.firstResults.set(key, { content, isError: false })
  event('tool_result', 'ok')
  advance(ctx, session)
  return { content, isError: false }
}
