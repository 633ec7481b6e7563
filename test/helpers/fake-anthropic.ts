// A scripted fake of the Anthropic Messages API on loopback: the real SDK talks to it over HTTP,
// so tests exercise the SDK's request building, parsing and error mapping. Replies are consumed
// in order; every request body is recorded for assertions.

import Fastify from 'fastify'
import type { Test } from 'tap'

export interface ScriptedReply {
  status?: number
  /** A full Messages API body; or give `text` for an assistant message with one text block. */
  body?: unknown
  text?: string
  /** Wait this long before answering (to provoke a client timeout). */
  delayMs?: number
  /** Let the SDK retry this answer (with a 20 ms retry-after); by default it is told not to. */
  retryable?: boolean
}

export interface FakeAnthropic {
  baseURL: string
  requests: {
    system?: string
    messages: { role: string; content: unknown }[]
    model: string
    tools?: { name: string; description: string; input_schema: unknown }[]
  }[]
  script(...replies: ScriptedReply[]): void
}

/** An assistant message calling tools: [name, input] pairs, ids made up. */
export function toolCalls(...calls: [string, unknown][]) {
  return {
    ...messageWithText(''),
    content: calls.map(([name, input]) => ({
      type: 'tool_use',
      id: `toolu_${Math.random().toString(36).slice(2, 12)}`,
      name,
      input,
    })),
    stop_reason: 'tool_use',
  }
}

export function messageWithText(text: string) {
  return {
    id: `msg_${Math.random().toString(36).slice(2)}`,
    type: 'message',
    role: 'assistant',
    model: 'claude-test',
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 5 },
  }
}

export async function fakeAnthropic(t: Test): Promise<FakeAnthropic> {
  const queue: ScriptedReply[] = []
  const requests: FakeAnthropic['requests'] = []
  const app = Fastify()
  app.post('/v1/messages', async (request, reply) => {
    requests.push(request.body as FakeAnthropic['requests'][number])
    const next = queue.shift()
    if (!next)
      return reply.code(500).send({ type: 'error', error: { type: 'api_error', message: 'no scripted reply' } })
    if (next.delayMs) await new Promise((r) => setTimeout(r, next.delayMs))
    // the SDK must not retry on its own behind the test's back, unless the test asks for it
    if (next.retryable) reply.header('retry-after-ms', '20')
    else reply.header('x-should-retry', 'false')
    return reply.code(next.status ?? 200).send(next.body ?? messageWithText(next.text ?? ''))
  })
  const address = await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  return { baseURL: address, requests, script: (...replies) => queue.push(...replies) }
}
