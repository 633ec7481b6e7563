// The Claude-backed implementation of a reasoning tool: the tool's prompt and output schema as the
// system prompt, its input as JSON, and an answer that must be JSON valid against the schema (and
// the tool's own check). One retry carries the validation errors back to the model; then a clear
// error. Model failures become 502s with a code the caller can act on.

import Anthropic from '@anthropic-ai/sdk'
import type { Static, TSchema } from 'typebox'
import { Value } from 'typebox/value'
import { ConcordError } from '../errors.js'
import type { AiTool } from './types.js'

export interface ModelSettings {
  apiKey: string
  baseURL?: string
  model: string
  timeoutMs: number
  /** The SDK's own retries of 408/429/5xx answers, with backoff. */
  maxRetries: number
  maxTokens?: number
}

export function modelClient(settings: ModelSettings): Anthropic {
  return new Anthropic({
    apiKey: settings.apiKey,
    baseURL: settings.baseURL,
    timeout: settings.timeoutMs,
    maxRetries: settings.maxRetries,
  })
}

/** A JSON schema as plain data: TypeBox values carry symbols the wire does not need. */
export function plainSchema(schema: TSchema): unknown {
  return JSON.parse(JSON.stringify(schema))
}

export function systemPrompt(tool: AiTool): string {
  return [
    tool.prompt,
    '',
    'Answer with one JSON object and nothing else: no prose, no code fences. It must match this JSON schema:',
    JSON.stringify(plainSchema(tool.output)),
  ].join('\n')
}

/** The answer's JSON, or the reasons it is not an acceptable one. */
function readAnswer<T extends TSchema>(
  tool: AiTool,
  text: string,
  input: unknown,
): { value?: Static<T>; problems: string[] } {
  const json = text
    .trim()
    .replace(/^```(?:json)?\s*/i, '')
    .replace(/\s*```$/, '')
  let value: unknown
  try {
    value = JSON.parse(json)
  } catch (err) {
    return { problems: [`the answer is not JSON: ${(err as Error).message}`] }
  }
  if (!Value.Check(tool.output, value)) {
    const problems = [...Value.Errors(tool.output, value)]
      .slice(0, 8)
      .map((e) => `${e.instancePath || '(root)'} ${e.message}`)
    return { problems }
  }
  const problems = tool.check?.(value as never, input as never) ?? []
  return problems.length ? { problems } : { value: value as Static<T>, problems: [] }
}

export async function runWithModel(
  client: Anthropic,
  settings: ModelSettings,
  tool: AiTool,
  input: unknown,
): Promise<unknown> {
  const evidence = tool.evidence?.(input as never)
  const content =
    evidence === undefined
      ? JSON.stringify(input)
      : `${JSON.stringify(input)}\n\nWhat Concord measured in this input (use it; the answer is checked against it):\n${JSON.stringify(evidence)}`
  const messages: Anthropic.MessageParam[] = [{ role: 'user', content }]
  let problems: string[] = []
  for (let attempt = 0; attempt < 2; attempt++) {
    let reply: Anthropic.Message
    try {
      reply = await client.messages.create({
        model: settings.model,
        max_tokens: settings.maxTokens ?? 4096,
        system: systemPrompt(tool),
        messages,
      })
    } catch (err) {
      throw modelError(err)
    }
    const text = reply.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
    const answer = readAnswer(tool, text, input)
    if (answer.value !== undefined) return answer.value
    problems = answer.problems
    messages.push(
      { role: 'assistant', content: text || '(empty)' },
      {
        role: 'user',
        content: `That answer is not valid:\n- ${problems.join('\n- ')}\nAnswer again with the corrected JSON object only.`,
      },
    )
  }
  throw new ConcordError(
    'model_invalid_output',
    `the model's answer for ${tool.name} was not valid twice: ${problems.join('; ')}`,
    502,
    'retry, or use AI_MODE=deterministic',
  )
}

/** SDK errors as ConcordErrors with codes. */
export function modelError(err: unknown): ConcordError {
  if (err instanceof ConcordError) return err
  const hint = 'retry later, or use AI_MODE=deterministic'
  if (err instanceof Anthropic.APIConnectionTimeoutError)
    return new ConcordError('model_timeout', 'the model did not answer in time', 502, hint)
  if (err instanceof Anthropic.RateLimitError)
    return new ConcordError('model_rate_limited', 'the model API is rate limiting (429)', 502, hint)
  if (err instanceof Anthropic.APIError && err.status === 529)
    return new ConcordError('model_overloaded', 'the model API is overloaded (529)', 502, hint)
  if (err instanceof Anthropic.AuthenticationError || err instanceof Anthropic.PermissionDeniedError)
    return new ConcordError('model_auth_failed', 'the model API refused the key', 502, 'check ANTHROPIC_API_KEY')
  if (err instanceof Anthropic.APIConnectionError)
    return new ConcordError('model_unreachable', `cannot reach the model API: ${err.message}`, 502, hint)
  if (err instanceof Anthropic.APIError)
    return new ConcordError('model_error', `the model API answered ${err.status}: ${err.message}`, 502, hint)
  return new ConcordError('model_error', `the model call failed: ${(err as Error).message}`, 502, hint)
}
