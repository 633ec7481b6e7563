// The reasoning tools (DESIGN §4): stateless functions with TypeBox input and output schemas, each
// with a deterministic implementation (no key, no network) and a Claude-backed one driven by the
// tool's prompt. Everything a tool needs is in its input.

import type { Static, TSchema } from 'typebox'

export interface AiTool<In extends TSchema = TSchema, Out extends TSchema = TSchema> {
  name: string
  /** One paragraph: what the tool answers (shown in MCP listings and the OpenAPI document). */
  description: string
  input: In
  output: Out
  /** Instructions for the model: how to answer, beyond "return JSON matching the output schema". */
  prompt: string
  deterministic(input: Static<In>): Static<Out>
  /**
   * What the deterministic implementation observes in the input (in numbers: fits, lags,
   * similarities), sent to the model with the input so both implementations reason from the same
   * evidence.
   */
  evidence?(input: Static<In>): unknown
  /**
   * Checks an answer beyond its schema (a predicate the recipe parser accepts, columns that
   * exist); returns problems in words, for the model's one retry. Used on both implementations.
   */
  check?(output: Static<Out>, input: Static<In>): string[]
}

/** Which implementation answered. */
export type AiEngine = 'deterministic' | 'llm'
