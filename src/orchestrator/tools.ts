// The agent's tools: the sources, the reasoning tools and runs, as the model calls them. A tool
// returns what the model is told, how the session changes, and what the user sees (a card). Tools
// know no phases: when a patch changes work an earlier phase owns (a new scope, other sources,
// other rules), the loop sends the session back as the phase configs declare. Failures are
// ConcordErrors: their message and suggestion become the tool_result's hint.

import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { type TSchema, Type } from 'typebox'
import type { RunSummary } from '../engine/reconcile.js'
import { describeTable, rowsAsJson } from '../engine/data/table.js'
import type { FilterCondition } from '../engine/data/types.js'
import { ConcordError } from '../errors.js'
import type { Recipe } from '../recipes/schema.js'
import type { Artifact, Sample, SessionState } from './session.js'
import type { JsonRow } from '../engine/data/table.js'

export interface Card {
  type:
    'source_preview' | 'sample' | 'match_proposals' | 'rules' | 'recipe' | 'validation' | 'run_summary' | 'exceptions'
  data: unknown
}

export interface ToolOutcome {
  /** What the model is told (compacted when large). */
  result: unknown
  patch?: Partial<SessionState>
  card?: Card
  artifact?: Omit<Artifact, 'id'>
}

export interface AgentTool {
  name: string
  description: string
  input: TSchema
  /** Argument names models often use instead of ours. */
  aliases?: Record<string, string>
  /** A successful call changes the session: identical calls after it are not duplicates. */
  changesState: boolean
  run(app: FastifyInstance, ws: string, session: SessionState, input: Record<string, unknown>): Promise<ToolOutcome>
}

const Condition = Type.Object({
  column: Type.String(),
  op: Type.Union(['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'between', 'in', 'like'].map((o) => Type.Literal(o))),
  value: Type.Union([
    Type.String(),
    Type.Number(),
    Type.Boolean(),
    Type.Array(Type.Union([Type.String(), Type.Number()])),
  ]),
})

const sideOf = (s: SessionState, alias: string): 'left' | 'right' | null =>
  s.left_alias === alias ? 'left' : s.right_alias === alias ? 'right' : null

function requireSide(s: SessionState, alias: string): 'left' | 'right' {
  const side = sideOf(s, alias)
  if (!side)
    throw new ConcordError(
      'not_a_session_source',
      `"${alias}" is not one of this session's sources`,
      400,
      `the left source is ${s.left_alias ?? 'not chosen'}, the right ${s.right_alias ?? 'not chosen'}`,
    )
  return side
}

async function waitForRun(
  app: FastifyInstance,
  ws: string,
  id: string,
): Promise<{ status: string; summary: RunSummary | null; error: unknown }> {
  for (;;) {
    const run = await app.runs.get(ws, id)
    if (!['queued', 'running'].includes(run.status)) return run
    await new Promise((r) => setTimeout(r, 50))
  }
}

async function run(app: FastifyInstance, ws: string, s: SessionState, mode: 'sample' | 'full'): Promise<ToolOutcome> {
  if (!s.recipe_draft) throw new ConcordError('no_recipe', 'there is no recipe draft yet', 400, 'build one first')
  // a sample run reads this session's scoped tables, as they are when it starts
  const started = await app.runs.start(ws, { recipe: s.recipe_draft, mode }, null, undefined, s.id, {
    actor: `chat:${s.id}`,
  })
  const done = await waitForRun(app, ws, started.id)
  if (done.status !== 'completed' || !done.summary)
    throw new ConcordError('run_failed', `the ${mode} run ${done.status}: ${JSON.stringify(done.error)}`, 400)
  const sm = done.summary
  const summary = {
    run_id: started.id,
    mode,
    matches: sm.matches,
    ambiguous: sm.ambiguous,
    left: sm.left,
    right: sm.right,
    passes: sm.passes.map((p) => ({ name: p.name, matches: p.matches, status: p.status })),
  }
  return {
    result: summary,
    patch: {
      last_run: { id: started.id, mode, summary },
      ...(mode === 'full' ? { status: 'completed' as const } : {}),
    },
    card: { type: 'run_summary', data: summary },
    artifact: {
      kind: 'run',
      summary: `run ${started.id} (${mode}): ${sm.matches} matches, ${sm.left.unmatched} left and ${sm.right.unmatched} right unmatched`,
    },
  }
}

function sampleSummary(alias: string, sample: Sample, app: FastifyInstance, ws: string, session: string): string {
  const table = app.sources.engine(ws, session).get(alias)?.table
  const parts = [`${alias}: ${sample.total_rows} rows in scope`]
  if (table) {
    const cols = describeTable(table)
    const date = cols.find((c) => c.type === 'date' || c.type === 'timestamp')
    if (date && table.length) {
      const values = rowsAsJson(table)
        .map((r) => r[date.name])
        .filter((v) => v !== null) as string[]
      values.sort()
      if (values.length) parts.push(`${date.name} ${values[0]}..${values[values.length - 1]}`)
    }
  }
  if (sample.conditions.length)
    parts.push(`scope ${sample.conditions.map((c) => `${c.column} ${c.op} ${JSON.stringify(c.value)}`).join(' and ')}`)
  return parts.join(', ')
}

export const AGENT_TOOLS: AgentTool[] = [
  {
    name: 'list_sources',
    description: 'The registered sources: alias, type and number of columns.',
    input: Type.Object({}),
    changesState: false,
    async run(app, ws) {
      const sources = (await app.sources.list(ws)).map((s) => ({
        alias: s.alias,
        type: s.type,
        columns: s.columns.length,
      }))
      return { result: { sources }, patch: { sources_list: sources } }
    },
  },
  {
    name: 'get_source_preview',
    description:
      "A source's columns (with types) and first rows. The first source previewed becomes the left side and the second the right; pass side to replace one.",
    input: Type.Object({
      alias: Type.String(),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 10 })),
      side: Type.Optional(Type.Union([Type.Literal('left'), Type.Literal('right')])),
    }),
    aliases: { source: 'alias', name: 'alias', rows: 'limit' },
    changesState: true,
    async run(app, ws, s, input) {
      const alias = String(input.alias)
      const preview = await app.sources.preview(ws, alias, Number(input.limit ?? 10))
      const known = sideOf(s, alias)
      const side =
        (input.side as 'left' | 'right' | undefined) ??
        known ??
        (!s.left_alias ? 'left' : !s.right_alias ? 'right' : null)
      const outcome: ToolOutcome = {
        result: { ...preview, side: side ?? 'not chosen (both sides are taken; pass side to replace one)' },
        card: { type: 'source_preview', data: preview },
      }
      if (side && known !== side)
        outcome.patch =
          side === 'left'
            ? { left_alias: alias, schema_left: preview.columns }
            : { right_alias: alias, schema_right: preview.columns }
      return outcome
    },
  },
  {
    name: 'load_scoped',
    description:
      "Loads the records of one of the session's sources that satisfy every condition (column, op: eq neq gt gte lt lte between in like, value; dates YYYY-MM-DD; between takes [from, to]). Replaces that side's sample.",
    input: Type.Object({
      alias: Type.String(),
      conditions: Type.Array(Condition),
      limit: Type.Optional(Type.Integer({ minimum: 1 })),
    }),
    aliases: { source: 'alias', filters: 'conditions', where: 'conditions' },
    changesState: true,
    async run(app, ws, s, input) {
      const alias = String(input.alias)
      const side = requireSide(s, alias)
      const conditions = input.conditions as FilterCondition[]
      const loaded = await app.sources.loadScoped(
        ws,
        alias,
        { conditions, limit: input.limit as number | undefined, preview: 20 },
        undefined,
        s.id,
      )
      const sample: Sample = {
        alias,
        columns: loaded.columns,
        rows: loaded.rows,
        total_rows: loaded.total_rows,
        loaded_rows: loaded.loaded_rows,
        conditions,
      }
      const patch: Partial<SessionState> =
        side === 'left'
          ? { scope_left: conditions, sample_left: sample }
          : { scope_right: conditions, sample_right: sample }
      return {
        result: {
          alias,
          side,
          total_rows: loaded.total_rows,
          loaded_rows: loaded.loaded_rows,
          rows: loaded.rows,
          // the model reads these with the rows: a month that drops its last day is said here
          ...(loaded.warnings.length ? { warnings: loaded.warnings } : {}),
        },
        patch,
        card: { type: 'sample', data: { alias, side, total_rows: loaded.total_rows, rows: loaded.rows.slice(0, 20) } },
        artifact: { kind: 'sample', summary: sampleSummary(alias, sample, app, ws, s.id) },
      }
    },
  },
  {
    name: 'propose_match',
    description:
      'Proposes likely matching pairs from the two samples, shown to the user as cards to confirm or reject.',
    input: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 20, default: 5 })) }),
    changesState: true,
    async run(app, _ws, s, input) {
      if (!s.sample_left || !s.sample_right) throw new ConcordError('no_samples', 'load both scoped samples first', 400)
      const answer = await app.ai.run('propose_match', {
        rows_a: s.sample_left.rows,
        rows_b: s.sample_right.rows,
        schemas: { a: s.sample_left.columns, b: s.sample_right.columns },
        limit: input.limit ?? 5,
      })
      const proposals = (answer.result as { proposals: Omit<import('./session.js').Proposal, 'id'>[] }).proposals.map(
        (p) => ({ id: randomUUID().slice(0, 8), ...p }),
      )
      const shown = proposals.map((p) => ({
        id: p.id,
        left: s.sample_left!.rows[p.left],
        right: s.sample_right!.rows[p.right],
        confidence: p.confidence,
        reason: p.reason,
      }))
      return { result: { proposals: shown }, patch: { proposals }, card: { type: 'match_proposals', data: shown } }
    },
  },
  {
    name: 'infer_rules',
    description: 'Infers the matching rules, record keys and pattern from the confirmed pairs.',
    input: Type.Object({}),
    changesState: true,
    async run(app, _ws, s) {
      if (!s.schema_left || !s.schema_right || !s.sample_left || !s.sample_right)
        throw new ConcordError('no_samples', 'load both scoped samples first', 400)
      const pairs = s.confirmed_pairs
      // the confirmed rows first, each once: a payout confirmed with three captures is one row of
      // sample b that three pairs name, which is how infer_rules sees a group
      const firstRows = (rows: JsonRow[]) => {
        const keys: string[] = []
        const at = rows.map((row) => {
          const key = JSON.stringify(row)
          const i = keys.indexOf(key)
          return i >= 0 ? i : keys.push(key) - 1
        })
        return { rows: keys.map((k) => JSON.parse(k) as JsonRow), at }
      }
      const confirmedA = firstRows(pairs.map((p) => p.left))
      const confirmedB = firstRows(pairs.map((p) => p.right))
      const sampleA = [...confirmedA.rows, ...s.sample_left.rows]
      const sampleB = [...confirmedB.rows, ...s.sample_right.rows]
      const mappings = (
        (
          await app.ai.run('detect_field_mappings', {
            schema_a: s.schema_left,
            schema_b: s.schema_right,
            sample_a: sampleA,
            sample_b: sampleB,
          })
        ).result as { mappings: unknown[] }
      ).mappings
      const answer = await app.ai.run('infer_rules', {
        schema_a: s.schema_left,
        schema_b: s.schema_right,
        sample_a: sampleA,
        sample_b: sampleB,
        mappings,
        confirmed_pairs: pairs.map((_, n) => ({ left: confirmedA.at[n], right: confirmedB.at[n] })),
      })
      const rules = answer.result as SessionState['rules']
      return {
        result: rules,
        patch: { rules },
        card: { type: 'rules', data: rules },
      }
    },
  },
  {
    name: 'build_recipe',
    description:
      "Assembles the recipe draft from the inferred rules (or the rules given: name, sql, description, confidence) with the session's sources, keys and scopes, and checks it against the sources.",
    input: Type.Object({
      rules: Type.Optional(
        Type.Array(
          Type.Object({
            name: Type.String(),
            sql: Type.String(),
            description: Type.String(),
            confidence: Type.Number(),
          }),
        ),
      ),
      name: Type.Optional(Type.String()),
    }),
    changesState: true,
    async run(app, ws, s, input) {
      const inferred = s.rules
      const rules = (input.rules as NonNullable<SessionState['rules']>['rules'] | undefined) ?? inferred?.rules
      if (!rules?.length || !inferred)
        throw new ConcordError('no_rules', 'there are no rules yet', 400, 'infer them from the confirmed pairs first')
      const scope = [
        ...(s.scope_left ?? []).map((c) => ({ source: 'a', ...c })),
        ...(s.scope_right ?? []).map((c) => ({ source: 'b', ...c })),
      ]
      const answer = await app.ai.run('build_recipe', {
        rules,
        sources: { left: s.left_alias, right: s.right_alias },
        primary_keys: inferred.primary_keys,
        pattern: inferred.pattern,
        ...(input.name ? { name: input.name } : {}),
        scope,
      })
      const { recipe, explanation } = answer.result as { recipe: Recipe; explanation: string }
      const report = await app.recipes.validate(ws, recipe)
      if (!report.valid)
        throw new ConcordError(
          'invalid_recipe',
          `the draft has issues: ${report.issues.map((i) => `${i.pass ? `${i.pass}: ` : ''}${i.message}`).join('; ')}`,
          400,
          report.suggestions.join('; ') || 'change the rules and build again',
        )
      return {
        result: { recipe, explanation },
        patch: { recipe_draft: recipe },
        card: { type: 'recipe', data: { recipe, explanation } },
        artifact: {
          kind: 'recipe',
          summary: `recipe draft "${recipe.name}": ${recipe.passes.map((p) => `${p.name} (${p.pattern})`).join(', ')}`,
        },
      }
    },
  },
  {
    name: 'validate_recipe',
    description: 'Checks the recipe draft against the sources; the result is shown to the user with an approve button.',
    input: Type.Object({}),
    changesState: true,
    async run(app, ws, s) {
      if (!s.recipe_draft) throw new ConcordError('no_recipe', 'there is no recipe draft yet', 400)
      const report = await app.recipes.validate(ws, s.recipe_draft)
      return { result: report, patch: { validation: report }, card: { type: 'validation', data: report } }
    },
  },
  {
    name: 'run_sample',
    description: 'Runs the recipe draft on the scoped samples and reports matched and unmatched counts.',
    input: Type.Object({}),
    changesState: true,
    run: (app, ws, s) => run(app, ws, s, 'sample'),
  },
  {
    name: 'run_full',
    description: 'Runs the approved recipe on the full scopes and reports the outcome.',
    input: Type.Object({}),
    changesState: true,
    run: (app, ws, s) => run(app, ws, s, 'full'),
  },
  {
    name: 'show_exceptions',
    description:
      "The exceptions of the session's last full run: how many by reason (missing counterpart, amount outside tolerance, fee variance, date outside window, duplicate, ambiguous, …) with the amount at risk, and the largest open ones. Shown to the user as a card.",
    input: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 20, default: 5 })) }),
    aliases: { top: 'limit', count: 'limit' },
    changesState: false,
    async run(app, ws, s, input) {
      const last = s.last_run
      if (!last || last.mode !== 'full')
        throw new ConcordError(
          'no_full_run',
          'the session has no full run yet: sample runs make no exceptions',
          400,
          'run the recipe with run_full first',
        )
      const overview = await app.exceptions.overviewOfRun(ws, last.id, Number(input.limit ?? 5))
      return {
        result: overview,
        card: { type: 'exceptions', data: overview },
        artifact: {
          kind: 'run',
          summary: `exceptions of run ${last.id}: ${overview.open} open of ${overview.total}, ${overview.by_reason
            .map((r) => `${r.count} ${r.reason}`)
            .join(', ')}`,
        },
      }
    },
  },
]

export function agentTool(name: string): AgentTool | undefined {
  return AGENT_TOOLS.find((t) => t.name === name)
}
