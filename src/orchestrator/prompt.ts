// The system prompt of a model call: base rules, the phase's instructions, and what the phase
// injects of the session (sources, schemas, samples with "showing 20 of N", pairs, the draft, the
// artifact inventory). Also the compaction of large tool results in the history sent to the model.

import type { PhaseConfig } from './phases.js'
import type { SessionState } from './session.js'

export const BASE_RULES = `You are Concord's reconciliation assistant. You help the user match the records of two sources (bank lines and invoices, a ledger and an acquirer's settlement) by finding the rules with them, one phase at a time.
- Use only the tools offered to you now; other tools belong to other phases.
- Never invent sources, columns or values: use what the tools and the context below show.
- The user sees cards for previews, samples, proposed pairs, rules, the recipe, validation and run summaries: interpret them in a few sentences instead of repeating their rows.
- When a tool fails, read its hint; if you cannot fix the call, explain the problem to the user.
- Reuse what the artifact inventory lists instead of loading or building it again.`

const SAMPLE_ROWS = 20

function rowsBlock(label: string, rows: unknown[], total: number): string {
  const shown = rows.slice(0, SAMPLE_ROWS)
  return [`${label} (showing ${shown.length} of ${total}):`, ...shown.map((r) => JSON.stringify(r))].join('\n')
}

const INJECTIONS: Record<PhaseConfig['contextInjections'][number], (s: SessionState) => string | null> = {
  sources: (s) =>
    s.sources_list
      ? `Registered sources: ${s.sources_list.map((x) => `${x.alias} (${x.type}, ${x.columns} columns)`).join(', ') || 'none'}.`
      : 'The registered sources are not known yet.',
  schemas: (s) => {
    const side = (name: string, alias: string | null, cols: SessionState['schema_left']) =>
      alias && cols
        ? `${name} source ${alias}: ${cols.map((c) => `${c.name} ${c.type}`).join(', ')}`
        : `${name} source: not chosen yet`
    return [side('Left', s.left_alias, s.schema_left), side('Right', s.right_alias, s.schema_right)].join('\n')
  },
  samples: (s) =>
    [s.sample_left, s.sample_right]
      .map((sample, n) =>
        sample
          ? rowsBlock(
              `${n === 0 ? 'Left' : 'Right'} sample of ${sample.alias}, scope ${JSON.stringify(sample.conditions)}`,
              sample.rows,
              sample.total_rows,
            )
          : `${n === 0 ? 'Left' : 'Right'} sample: not loaded yet`,
      )
      .join('\n\n'),
  proposals: (s) =>
    s.proposals?.length
      ? `Proposed pairs awaiting the user (cards): ${s.proposals.map((p) => `${p.id}: left row ${p.left} ~ right row ${p.right} (${p.reason})`).join('; ')}`
      : null,
  confirmed_pairs: (s) =>
    `Confirmed pairs (${s.confirmed_pairs.length} of the 3 needed):${s.confirmed_pairs.map((p, n) => `\n${n + 1}. ${JSON.stringify(p.left)} ~ ${JSON.stringify(p.right)}`).join('')}`,
  rules: (s) => (s.rules ? `Inferred rules: ${JSON.stringify(s.rules)}` : null),
  recipe_draft: (s) =>
    s.recipe_draft ? `Recipe draft: ${JSON.stringify(s.recipe_draft)}` : 'There is no recipe draft yet.',
  validation: (s) =>
    s.validation
      ? `Validation: ${s.validation.valid ? 'valid' : `invalid: ${s.validation.issues.map((i) => i.message).join('; ')}`}; approved by the user: ${s.validation_approved ? 'yes' : 'not yet'}.`
      : null,
  last_run: (s) => (s.last_run ? `Last run: ${JSON.stringify(s.last_run.summary)}` : null),
  artifacts: (s) =>
    s.artifacts.length
      ? `Artifact inventory:\n${s.artifacts.map((a) => `- ${a.id} ${a.kind}: ${a.summary}`).join('\n')}`
      : null,
}

/**
 * The system prompt of one model call. `tools` are the tools offered with it (the phase's, minus
 * those exhausted this turn): the prompt names them and no other.
 */
export function systemPrompt(session: SessionState, phase: PhaseConfig, tools: string[]): string {
  const context = phase.contextInjections.map((i) => INJECTIONS[i](session)).filter((x): x is string => !!x)
  const offered = `Tools available now: ${tools.join(', ') || 'none'}.`
  return [BASE_RULES, `Current phase: ${phase.name}.\n${instructionsFor(phase, tools)}\n${offered}`, ...context].join(
    '\n\n',
  )
}

/**
 * The phase's instructions without the sentences that name a tool not offered now (one removed
 * for the rest of the turn after failing too often), so the prompt never points at it.
 */
function instructionsFor(phase: PhaseConfig, tools: string[]): string {
  const withdrawn = phase.tools.filter((t) => !tools.includes(t))
  if (!withdrawn.length) return phase.instructions
  return phase.instructions
    .split(/(?<=[.!?])\s+/)
    .filter((sentence) => !withdrawn.some((t) => new RegExp(`\\b${t}\\b`).test(sentence)))
    .join(' ')
}

/** Tool results past this size are sent shortened (they stay whole in the stored history). */
export const COMPACT_ABOVE = 4000

/** A large value shortened for the model: long arrays cut to a few items with a count, long strings cut. */
export function compact(value: unknown): unknown {
  if (Array.isArray(value)) {
    const head = value.slice(0, 5).map(compact)
    return value.length > 5 ? [...head, `… ${value.length - 5} more (${value.length} in all)`] : head
  }
  if (typeof value === 'string')
    return value.length > 500 ? `${value.slice(0, 500)}… (${value.length} characters)` : value
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, compact(v)]))
  return value
}

/** A tool result's text as sent to the model. */
export function resultText(stored: string): string {
  if (stored.length <= COMPACT_ABOVE) return stored
  try {
    return `${JSON.stringify(compact(JSON.parse(stored)))}\n(shortened: the full result has ${stored.length} characters)`
  } catch {
    return `${stored.slice(0, COMPACT_ABOVE)}… (shortened from ${stored.length} characters)`
  }
}
