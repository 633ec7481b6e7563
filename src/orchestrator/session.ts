// A chat session's state: the fields of the seed's ChatSession, filled by the agent's tools and
// the user's card responses as the conversation moves through the phases.

import type { JsonRow } from '../engine/data/table.js'
import type { ColumnInfo, FilterCondition } from '../engine/data/types.js'
import type { Recipe } from '../recipes/schema.js'
import type { ValidationReport } from '../recipes/validate.js'
import type { RuleT } from '../ai/schemas.js'

/**
 * A phase's name. Phases are Fastify plugins (plugins/, phases.ts): the seven of the design card
 * ship with Concord — greeting, intent, scoping, demonstration, inference, validation, execution —
 * and a plugin may add one, so the name is any string the registry holds.
 */
export type PhaseName = string

/** The phase every session starts in. */
export const START_PHASE: PhaseName = 'greeting'

export interface SourceEntry {
  alias: string
  type: string
  columns: number
}

/** A scoped sample of one side: what load_scoped loaded, with up to 20 rows kept for prompts. */
export interface Sample {
  alias: string
  columns: ColumnInfo[]
  rows: JsonRow[]
  total_rows: number
  loaded_rows: number
  conditions: FilterCondition[]
}

/** A pair the agent proposed, shown to the user as a card: row positions in the two samples. */
export interface Proposal {
  id: string
  left: number
  right: number
  confidence: number
  reason: string
}

export interface ConfirmedPair {
  left: JsonRow
  right: JsonRow
}

/** infer_rules' answer as the session keeps it (rules may be groups or probabilistic: see RuleT). */
export interface InferredRules {
  pattern: string
  primary_keys: { left: string[]; right: string[] }
  rules: RuleT[]
  questions?: { ask: string; message: string }[]
}

/** Something a tool produced that later prompts list, so the model reuses it instead of redoing it. */
export interface Artifact {
  id: string
  kind: 'sample' | 'recipe' | 'run'
  /** One line: rows, date range, amount total, recipe version, run counts. */
  summary: string
}

export interface SessionState {
  id: string
  phase: PhaseName
  status: 'active' | 'completed'
  left_alias: string | null
  right_alias: string | null
  sources_list: SourceEntry[] | null
  schema_left: ColumnInfo[] | null
  schema_right: ColumnInfo[] | null
  scope_left: FilterCondition[] | null
  scope_right: FilterCondition[] | null
  sample_left: Sample | null
  sample_right: Sample | null
  proposals: Proposal[] | null
  confirmed_pairs: ConfirmedPair[]
  rules: InferredRules | null
  recipe_draft: Recipe | null
  validation: ValidationReport | null
  validation_approved: boolean
  last_run: { id: string; mode: string; summary: unknown } | null
  artifacts: Artifact[]
}

export type SessionField = Exclude<keyof SessionState, 'id' | 'phase' | 'status'>

export function newSession(id: string): SessionState {
  return {
    id,
    phase: START_PHASE,
    status: 'active',
    left_alias: null,
    right_alias: null,
    sources_list: null,
    schema_left: null,
    schema_right: null,
    scope_left: null,
    scope_right: null,
    sample_left: null,
    sample_right: null,
    proposals: null,
    confirmed_pairs: [],
    rules: null,
    recipe_draft: null,
    validation: null,
    validation_approved: false,
    last_run: null,
    artifacts: [],
  }
}

/** The empty value of a field (what going back to an earlier phase resets it to). */
export function emptyValue(field: SessionField): unknown {
  const fresh = newSession('') as unknown as Record<string, unknown>
  return structuredClone(fresh[field])
}

/** A field holds something (the check behind prerequisites). */
export function isSet(value: unknown): boolean {
  if (value === null || value === undefined || value === false) return false
  if (Array.isArray(value)) return value.length > 0
  return true
}
