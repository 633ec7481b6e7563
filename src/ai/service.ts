// The reasoning tools behind one entry point: input checked against the tool's schema, then the
// implementation AI_MODE asks for — deterministic, Claude (llm), or auto: Claude when a key is
// configured, falling back to the deterministic implementation when the model fails. The result
// says which engine answered (and why it fell back).

import type Anthropic from '@anthropic-ai/sdk'
import type { FastifyBaseLogger } from 'fastify'
import fp from 'fastify-plugin'
import { Value } from 'typebox/value'
import type { Config } from '../config.js'
import type { Metrics } from '../metrics.js'
import { ConcordError } from '../errors.js'
import { nearestNames } from '../language/similarity.js'
import { type ModelSettings, modelClient, runWithModel } from './llm.js'
import { TOOLS } from './tools/index.js'
import type { AiEngine, AiTool } from './types.js'

export type AiMode = 'auto' | 'deterministic' | 'llm'

export interface AiSettings {
  mode: AiMode
  model?: ModelSettings
}

export interface AiAnswer {
  result: unknown
  engine: AiEngine
  /** auto mode: why the deterministic implementation answered instead of the model. */
  fallback?: { error: string; message: string }
}

export function aiSettings(config: Config): AiSettings {
  return {
    mode: config.aiMode,
    model: config.anthropicApiKey
      ? {
          apiKey: config.anthropicApiKey,
          baseURL: config.anthropicBaseUrl,
          model: config.anthropicModel,
          timeoutMs: config.aiTimeoutMs,
          maxRetries: config.aiMaxRetries,
        }
      : undefined,
  }
}

export class AiService {
  private client?: Anthropic

  constructor(
    private readonly settings: AiSettings,
    private readonly log?: FastifyBaseLogger,
    private readonly metrics?: Metrics,
    private readonly toolset: AiTool[] = TOOLS,
  ) {}

  tools(): AiTool[] {
    return this.toolset
  }

  tool(name: string): AiTool {
    const tool = this.toolset.find((t) => t.name === name)
    if (!tool) {
      const near = nearestNames(
        name,
        this.toolset.map((t) => t.name),
      )
      throw new ConcordError(
        'unknown_tool',
        `no reasoning tool named "${name}"`,
        404,
        `did you mean ${near.join(', ')}?`,
      )
    }
    return tool
  }

  async run(name: string, input: unknown): Promise<AiAnswer> {
    try {
      const answer = await this.answer(name, input)
      this.metrics?.aiCalls.inc({ tool: name, engine: answer.fallback ? 'fallback' : answer.engine })
      return answer
    } catch (err) {
      this.metrics?.aiCalls.inc({ tool: name, engine: err instanceof ConcordError ? err.code : 'error' })
      throw err
    }
  }

  private async answer(name: string, input: unknown): Promise<AiAnswer> {
    const tool = this.tool(name)
    const withDefaults = Value.Default(tool.input, structuredClone(input ?? {}))
    if (!Value.Check(tool.input, withDefaults)) {
      const errors = [...Value.Errors(tool.input, withDefaults)].slice(0, 5)
      throw new ConcordError(
        'invalid_input',
        `${name}: ${errors.map((e) => `${e.instancePath || 'input'} ${e.message}`).join('; ')}`,
        400,
        "GET /api/ai/tools shows each tool's input schema",
      )
    }
    const mode = this.settings.mode
    if (mode === 'deterministic' || (mode === 'auto' && !this.settings.model))
      return this.deterministic(tool, withDefaults)
    if (!this.settings.model)
      throw new ConcordError(
        'model_not_configured',
        'AI_MODE=llm needs ANTHROPIC_API_KEY',
        502,
        'set the key, or AI_MODE=auto',
      )
    this.client ??= modelClient(this.settings.model)
    try {
      return { result: await runWithModel(this.client, this.settings.model, tool, withDefaults), engine: 'llm' }
    } catch (err) {
      if (mode === 'llm' || !(err instanceof ConcordError)) throw err
      this.log?.warn({ tool: name, error: err.code }, 'model failed; deterministic answer instead')
      return { ...this.deterministic(tool, withDefaults), fallback: { error: err.code, message: err.message } }
    }
  }

  private deterministic(tool: AiTool, input: unknown): AiAnswer {
    const result = tool.deterministic(input as never)
    // the deterministic answers keep the same contract as the model's
    const problems = Value.Check(tool.output, result)
      ? (tool.check?.(result as never, input as never) ?? [])
      : [...Value.Errors(tool.output, result)].slice(0, 5).map((e) => `${e.instancePath || 'result'} ${e.message}`)
    // a bug in the tool, not in the caller's input: a coded 500 the caller can report
    if (problems.length)
      throw new ConcordError(
        'tool_failed',
        `${tool.name} produced an answer that fails its own check: ${problems.join('; ')}`,
        500,
        'report this input; a different wording or sample may get an answer meanwhile',
      )
    return { result, engine: 'deterministic' }
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    ai: AiService
  }
}

export default fp(
  async (app) => {
    app.decorate('ai', new AiService(aiSettings(app.config), app.log, app.metrics))
  },
  { name: 'ai' },
)
