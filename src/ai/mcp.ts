// `concord mcp`: the reasoning tools over the Model Context Protocol on stdio, with their input and
// output schemas declared, answered by the same AiService as POST /api/ai. stdout carries the
// protocol, so nothing else may write to it.

import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import type { Config } from '../config.js'
import { ConcordError } from '../errors.js'
import { plainSchema } from './llm.js'
import { AiService, aiSettings } from './service.js'

export function mcpServer(config: Config): Server {
  const ai = new AiService(aiSettings(config))
  const server = new Server({ name: 'concord', version: '0.1.0' }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: ai.tools().map((t) => ({
      name: t.name,
      description: t.description,
      inputSchema: plainSchema(t.input) as { type: 'object' },
      outputSchema: plainSchema(t.output) as { type: 'object' },
    })),
  }))
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    try {
      const answer = await ai.run(request.params.name, request.params.arguments ?? {})
      return {
        content: [{ type: 'text' as const, text: JSON.stringify(answer.result) }],
        structuredContent: answer.result as Record<string, unknown>,
        _meta: { engine: answer.engine, ...(answer.fallback ? { fallback: answer.fallback } : {}) },
      }
    } catch (err) {
      const body =
        err instanceof ConcordError ? err.toJSON() : { error: 'tool_failed', message: (err as Error).message }
      return { isError: true, content: [{ type: 'text' as const, text: JSON.stringify(body) }] }
    }
  })
  return server
}

export async function serveMcp(config: Config): Promise<void> {
  const server = mcpServer(config)
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve()
  })
  // The transport does not watch for the end of its input: a client that closes our stdin is
  // done, and without this the process ran out of work with this function still waiting (exit 13,
  // an unsettled top-level await, on Node 22 and later).
  process.stdin.once('end', () => void server.close())
  await server.connect(new StdioServerTransport())
  await closed
}
