// Wire schemas of the runs API, shared by the routes, the OpenAPI document and the client SDK.

import { Type } from 'typebox'
import { Nullable } from '../wire.js'
import { ScopeSet } from '../sources/schemas.js'

const Amount = Nullable(Type.String({ description: 'exact decimal, or null when the sides have no amount column' }))
const ParamValue = Type.Union([Type.String(), Type.Number(), Type.Boolean()])

export const RunRequestSchema = Type.Object(
  {
    recipe_id: Type.Optional(Type.String({ description: 'a saved recipe (or give `recipe` inline)' })),
    version: Type.Optional(
      Type.Integer({ minimum: 1, description: 'with recipe_id: a version other than the latest' }),
    ),
    recipe: Type.Optional(Type.Ref('Recipe')),
    mode: Type.Optional(
      Type.Union([Type.Literal('sample'), Type.Literal('full')], {
        default: 'full',
        description:
          'sample: the scoped tables loaded with load-scoped; full: each source loaded with the recipe scope',
      }),
    ),
    dry_run: Type.Optional(
      Type.Boolean({ default: false, description: 'match, keep only the summary, store no results' }),
    ),
    params: Type.Optional(Type.Record(Type.String(), ParamValue, { description: "values of the recipe's parameters" })),
    engine: Type.Optional(
      Type.Union([Type.Literal('memory'), Type.Literal('postgres')], {
        default: 'memory',
        description: 'postgres: run the matching inside PostgreSQL when both sources are tables of one database',
      }),
    ),
    reuse_model_from: Type.Optional(
      Type.String({
        description:
          "a completed run: its probabilistic passes' learned models are used by the same-named passes (no training)",
      }),
    ),
    scope_set: Type.Optional(ScopeSet),
    carry_open_items: Type.Optional(
      Type.Boolean({
        default: false,
        description:
          "carry the saved recipe's open exceptions (records earlier runs left unmatched) into this run's scope",
      }),
    ),
  },
  { $id: 'RunRequest', additionalProperties: false },
)

const Progress = Type.Object({
  phase: Type.Union(['queued', 'loading', 'matching', 'writing', 'done'].map((p) => Type.Literal(p))),
  rows_loaded: Type.Object({ left: Nullable(Type.Integer()), right: Nullable(Type.Integer()) }),
  pass: Nullable(Type.String()),
  percent: Type.Integer({ minimum: 0, maximum: 100 }),
})

const Side = Type.Object({
  rows: Type.Integer(),
  matched: Type.Integer({ description: 'records in a match, those held in ambiguous matches included' }),
  ambiguous: Type.Integer({ description: 'of the matched records, those held in ambiguous matches for review' }),
  unmatched: Type.Integer(),
  amount: Amount,
  matched_amount: Amount,
  unmatched_amount: Amount,
})

const PassReport = Type.Object({
  name: Type.String(),
  pattern: Type.String(),
  status: Type.Union([Type.Literal('done'), Type.Literal('failed'), Type.Literal('skipped')]),
  depends_on: Type.Array(Type.String()),
  blocked_by: Type.Optional(Type.Array(Type.String())),
  error: Type.Optional(Type.String()),
  matches: Type.Integer(),
  ambiguous: Type.Integer(),
  left_matched: Type.Integer(),
  right_matched: Type.Integer(),
  left_amount: Amount,
  right_amount: Amount,
  // aggregate passes: how often the bounded group search met its limits (src/engine/match/aggregate.ts)
  search: Type.Optional(
    Type.Object({
      candidates_capped: Type.Integer(),
      visits_exhausted: Type.Integer(),
      groups_over_max: Type.Integer(),
    }),
  ),
  // probabilistic passes (src/engine/match/probabilistic/): the model is the one to reuse
  probabilistic: Type.Optional(
    Type.Object({
      blocking: Type.Array(
        Type.Object({
          rule: Type.String(),
          join: Type.Union([Type.Literal('hash'), Type.Literal('band'), Type.Literal('token')]),
          pairs: Type.Integer({ description: 'candidate pairs this rule added' }),
          capped_tokens: Type.Optional(Type.Integer({ description: 'tokens too common to block on' })),
        }),
      ),
      candidates: Type.Integer(),
      above_threshold: Type.Integer(),
      threshold: Type.Number(),
      training: Type.Object({
        trained: Type.Boolean({ description: 'false when the recipe gave the model' }),
        iterations: Type.Integer(),
        converged: Type.Boolean(),
        u_pairs: Type.Integer({ description: 'random pairs that estimated u' }),
        matches: Type.Integer({ description: 'pairs taken as matches in the last expectation step' }),
      }),
      model: Type.Ref('RecipeModel'),
    }),
  ),
  // 1:1 passes: what assignment did (src/engine/match/assign.ts)
  assignment: Type.Optional(
    Type.Object({
      uncontested: Type.Integer({ description: 'pairs taken at once: neither record had another candidate' }),
      components: Type.Integer({ description: 'connected components of the other candidate pairs' }),
      exact: Type.Integer({ description: 'components assigned exactly: the most matches, then the best total score' }),
      greedy_fallback: Type.Integer({ description: 'components past the exact bound, assigned best-first' }),
      largest_component: Type.Integer({ description: 'candidate pairs in the largest component' }),
      ties_resolved: Type.Integer({ description: "ties resolved by the pass's prefer instead of held as ambiguous" }),
    }),
  ),
  // band passes: the band chosen on the data, its estimate and what it found (src/engine/match/bandpass.ts)
  band: Type.Optional(
    Type.Object({
      column: Type.String({ description: 'the band column used, as side.column' }),
      estimated_pairs: Type.Integer({ description: 'pairs within the band, estimated on a sample before the join' }),
      pairs: Type.Integer({ description: 'pairs within the band, each checked' }),
      candidates: Type.Integer({ description: 'pairs that satisfied every conjunct' }),
      options: Type.Array(Type.Object({ column: Type.String(), estimated_pairs: Type.Integer() }), {
        description: 'every band option with its estimate',
      }),
    }),
  ),
  ms: Type.Number(),
})

export const RunSummarySchema = Type.Object(
  {
    recipe: Type.String(),
    recipe_version: Nullable(Type.Integer()),
    status: Type.Union([Type.Literal('completed'), Type.Literal('failed')]),
    left: Side,
    right: Side,
    matches: Type.Integer(),
    ambiguous: Type.Integer(),
    match_rate: Type.Number({ description: 'matched records over all records, both sides' }),
    passes: Type.Array(PassReport),
    timings: Type.Object({
      plan_ms: Type.Number(),
      match_ms: Type.Number(),
      evidence_ms: Type.Number(),
      total_ms: Type.Number(),
    }),
  },
  { $id: 'RunSummary' },
)

export const RunViewSchema = Type.Object(
  {
    id: Type.String(),
    status: Type.Union(
      ['queued', 'running', 'completed', 'failed', 'cancelled', 'interrupted'].map((s) => Type.Literal(s)),
    ),
    mode: Type.String(),
    engine: Type.String(),
    dry_run: Type.Boolean(),
    recipe_id: Nullable(Type.String()),
    recipe_version: Nullable(Type.Integer()),
    recipe_name: Type.String(),
    params: Type.Record(Type.String(), ParamValue, { description: 'the parameter values the run used' }),
    progress: Progress,
    summary: Nullable(Type.Ref('RunSummary')),
    error: Nullable(
      Type.Object({ error: Type.String(), message: Type.String(), suggestion: Type.Optional(Type.String()) }),
    ),
    retry_of: Nullable(Type.String()),
    carry_open_items: Type.Boolean({ description: "whether the recipe's open exceptions were carried into the run" }),
    created_at: Type.String({ format: 'date-time' }),
    started_at: Nullable(Type.String({ format: 'date-time' })),
    finished_at: Nullable(Type.String({ format: 'date-time' })),
  },
  { $id: 'RunView' },
)

export const RunListSchema = Type.Object(
  { runs: Type.Array(Type.Ref('RunView')), total: Type.Integer() },
  { $id: 'RunList' },
)

const Match = Type.Object({
  match_id: Type.String(),
  pass: Type.String(),
  pattern: Type.String(),
  left_keys: Type.Array(Type.String()),
  right_keys: Type.Array(Type.String()),
  score: Type.Number(),
  deltas: Type.Object({
    amount: Nullable(Type.String({ description: 'left minus right, exact' })),
    days: Nullable(Type.Number({ description: 'right date minus left date' })),
  }),
  ambiguous: Type.Boolean(),
  weights: Type.Optional(
    Type.Object(
      {
        prior: Type.Number({ description: 'log2 of the prior odds that two records match' }),
        match_weight: Type.Number({ description: 'prior + the comparisons: probability = 1 / (1 + 2^-match_weight)' }),
        comparisons: Type.Array(Type.Object({ name: Type.String(), level: Type.String(), weight: Type.Number() })),
        context: Type.Number({
          description: "what the records' other candidates add under the one-to-one reading (rivals lower it)",
        }),
      },
      { description: 'probabilistic matches: what each comparison added (the waterfall)' },
    ),
  ),
})

const PageMeta = {
  total: Type.Integer({ description: 'records in the set (after filters)' }),
  offset: Type.Integer(),
  limit: Type.Integer(),
}

export const MatchesPageSchema = Type.Object({ ...PageMeta, items: Type.Array(Match) }, { $id: 'MatchesPage' })

// a type list, not a union: a reply writes it for every cell without a validator (src/wire.ts)
const CellValue = Type.Unsafe<string | number | boolean | null>({ type: ['string', 'number', 'boolean', 'null'] })

export const UnmatchedPageSchema = Type.Object(
  {
    ...PageMeta,
    items: Type.Array(
      Type.Object({
        record_key: Type.String(),
        closest_candidate: Nullable(Type.String()),
        failed: Nullable(Type.Object({ pass: Type.String(), conjunct: Type.String() })),
        reason: Type.String(),
        tied_with: Nullable(
          Type.String({
            description: "the record (this side) the pass's prefer chose over this one for closest_candidate",
          }),
        ),
        record: Type.Record(Type.String(), CellValue, { description: "the record's columns" }),
      }),
    ),
  },
  { $id: 'UnmatchedPage' },
)

export const runWireSchemas = [
  RunRequestSchema,
  RunSummarySchema,
  RunViewSchema,
  RunListSchema,
  MatchesPageSchema,
  UnmatchedPageSchema,
]
