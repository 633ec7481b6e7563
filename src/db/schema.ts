// The service's own tables, one interface each (Kysely style). Migrations in ./migrations create them.

import type { ColumnType, Generated, Insertable, JSONColumnType, Selectable } from 'kysely'
import type { ColumnInfo } from '../engine/data/types.js'
import type { RunSummary } from '../engine/reconcile.js'
import type { Recipe } from '../recipes/schema.js'
import type { JobProgress } from '../runs/job.js'

export interface SourcesTable {
  workspace_id: ColumnType<string, string, never>
  alias: string
  type: string
  /** The connector's config, as prepared. Redacted before it leaves the service. */
  config: JSONColumnType<Record<string, unknown>, string, string>
  columns: JSONColumnType<ColumnInfo[], string, string>
  created_at: ColumnType<Date, never, never>
}

export interface RecipesTable {
  id: string
  workspace_id: ColumnType<string, string, never>
  name: string
  latest_version: number
  created_at: ColumnType<Date, never, never>
  updated_at: ColumnType<Date, never, Date>
}

export interface RecipeVersionsTable {
  recipe_id: string
  version: number
  /** The recipe document, with `version` set to this row's version. */
  body: JSONColumnType<Recipe, string, never>
  created_at: ColumnType<Date, never, never>
}

export type RunStatus = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled' | 'interrupted'

export interface RunsTable {
  id: string
  workspace_id: ColumnType<string, string, never>
  recipe_id: string | null
  recipe_version: number | null
  /** The recipe as it ran, parameters applied. */
  recipe: JSONColumnType<Recipe, string, string>
  mode: 'sample' | 'full'
  engine: 'memory' | 'postgres'
  dry_run: boolean
  params: JSONColumnType<Record<string, string | number | boolean>, string, string>
  status: RunStatus
  progress: JSONColumnType<JobProgress, string, string>
  summary: JSONColumnType<RunSummary | null, string | null, string | null>
  error: JSONColumnType<{ error: string; message: string; suggestion?: string } | null, string | null, string | null>
  retry_of: string | null
  /** The instance that queued the run and runs it (instances.id); null for runs from before owners. */
  owner: string | null
  /** Carry the recipe's open exceptions into the run (src/exceptions/carry.ts). */
  carry_open_items: ColumnType<boolean, boolean | undefined, boolean>
  created_at: ColumnType<Date, never, never>
  started_at: ColumnType<Date | null, Date | null, Date | null>
  finished_at: ColumnType<Date | null, Date | null, Date | null>
}

/** The first answer to a request that carried an Idempotency-Key (src/idempotency.ts). */
export interface IdempotencyKeysTable {
  workspace_id: string
  route: string
  key: string
  request_hash: string
  status: number | null
  response: string | null
  created_at: ColumnType<Date, never, never>
}

/** A running service instance, beating while it lives (runs/service.ts). */
export interface InstancesTable {
  id: string
  started_at: ColumnType<Date, never, never>
  heartbeat_at: ColumnType<Date, never, unknown>
}

export interface SessionsTable {
  id: string
  workspace_id: ColumnType<string, string, never>
  phase: string
  status: string
  left_alias: string | null
  right_alias: string | null
  sources_list: unknown
  schema_left: unknown
  schema_right: unknown
  scope_left: unknown
  scope_right: unknown
  sample_left: unknown
  sample_right: unknown
  proposals: unknown
  confirmed_pairs: unknown
  rules: unknown
  recipe_draft: unknown
  validation: unknown
  validation_approved: boolean
  last_run: unknown
  artifacts: unknown
  /** The snapshot the session is at (undo/redo move it). */
  snapshot: ColumnType<number, number | undefined, number>
  busy_until: Date | null
  /** The owner of the lease `busy_until` bounds: the turn holding the session. */
  busy_token: string | null
  created_at: ColumnType<Date, never, never>
  updated_at: ColumnType<Date, never, Date>
}

export interface SessionMessagesTable {
  session_id: string
  seq: number
  role: string
  /** Messages API content blocks. */
  content: JSONColumnType<unknown[], string, never>
  created_at: ColumnType<Date, never, never>
}

export interface SessionEventsTable {
  session_id: string
  seq: number
  turn: number
  type: string
  reason: string | null
  phase: string
  tool: string | null
  detail: JSONColumnType<object | null, string | null, never>
  created_at: ColumnType<Date, never, never>
}

export interface SessionSnapshotsTable {
  session_id: string
  seq: number
  state: JSONColumnType<Record<string, unknown>, string, never>
  messages: number
  created_at: ColumnType<Date, never, never>
}

export interface WorkspacesTable {
  id: string
  name: string
  created_at: ColumnType<Date, never, never>
}

export type Role = 'viewer' | 'operator' | 'admin'

export interface ApiKeysTable {
  id: string
  workspace_id: string
  name: string
  role: Role
  key_hash: string
  prefix: string
  created_at: ColumnType<Date, never, never>
  last_used_at: Date | null
  revoked_at: Date | null
}

/** One link of a workspace's audit chain (src/audit/). Text columns hold exactly what was hashed. */
export interface AuditLogTable {
  workspace_id: string
  seq: number
  /** ISO 8601 UTC with milliseconds, as hashed. */
  at: string
  actor: string
  action: string
  entity_type: string
  entity_id: string
  /** Canonical JSON of the entity before the change, as hashed; null for a creation. */
  before: string | null
  /** Canonical JSON of the entity after the change, as hashed; null for a deletion. */
  after: string | null
  request_id: string | null
  prev_hash: string
  hash: string
}

/** The last link of each workspace's audit chain; appenders lock its row. */
export interface AuditHeadsTable {
  workspace_id: string
  seq: number
  hash: string
}

export interface WebhooksTable {
  id: string
  workspace_id: string
  url: string
  /** JSON array of event names. */
  events: string
  /** The signing secret, sealed when CONCORD_SECRET_KEY is set. */
  secret: string
  active: ColumnType<boolean, boolean | undefined, boolean>
  created_at: ColumnType<Date, never, never>
  updated_at: ColumnType<Date, never, Date>
}

export type DeliveryStatus = 'pending' | 'delivered' | 'dead'

/** One event for one subscription (the transactional outbox); its id is the delivery id. */
export interface WebhookOutboxTable {
  id: string
  webhook_id: string
  workspace_id: string
  event: string
  body: string
  status: ColumnType<DeliveryStatus, DeliveryStatus | undefined, DeliveryStatus>
  attempts: ColumnType<number, number | undefined, number>
  next_attempt_at: ColumnType<Date, Date | undefined, unknown>
  lease_owner: string | null
  lease_until: ColumnType<Date | null, never, unknown>
  last_error: string | null
  created_at: ColumnType<Date, never, never>
  finished_at: ColumnType<Date | null, never, unknown>
}

export interface WebhookAttemptsTable {
  delivery_id: string
  attempt: number
  webhook_id: string
  status_code: number | null
  error: string | null
  duration_ms: number
  at: ColumnType<Date, never, never>
}

export type ExceptionStatus = 'open' | 'resolved'

/** What a completed run left unmatched or ambiguous, worked until resolved (src/exceptions/). */
export interface ExceptionsTable {
  /** From exception_ids: a run's set reserves a block, a materialized row keeps its set's id. */
  id: number
  workspace_id: string
  /** The run that created it (its unmatched file holds the record's columns). */
  run_id: string
  /** The latest later run that saw it still open (null: only the run that created it). */
  last_run_id: string | null
  recipe_id: string | null
  recipe_version: number | null
  side: 'left' | 'right' | 'both'
  record_key: string
  /** Ambiguous groups: every record key of the match, per side. */
  keys: JSONColumnType<{ left: string[]; right: string[] } | null, string | null, string | null>
  match_id: string | null
  candidate_key: string | null
  /** Exact decimals, as text. */
  amount: string | null
  /** 0 when the record has no amount. */
  amount_at_risk: ColumnType<string, string | undefined, string>
  difference: string | null
  record_date: string | null
  /** The date its age counts from: the record's date, else the day it was created. */
  age_from: string
  reason: string
  /** Whether a later run of the recipe carries it (its record's columns are stored). */
  carry: ColumnType<boolean, boolean | undefined, boolean>
  status: ColumnType<ExceptionStatus, ExceptionStatus | undefined, ExceptionStatus>
  resolution: string | null
  resolution_detail: JSONColumnType<Record<string, unknown> | null, string | null, string | null>
  resolved_by: string | null
  resolved_at: Date | null
  assignee: string | null
  version: ColumnType<number, number | undefined, number>
  /** A materialized exception keeps the time its run created it. */
  created_at: ColumnType<Date, Date | undefined, never>
  updated_at: ColumnType<Date, Date | undefined, unknown>
}

/** A run's exceptions as a file beside its results (src/exceptions/sidecar.ts): ids first_id … first_id + count - 1. */
export interface ExceptionSetsTable {
  run_id: string
  workspace_id: string
  recipe_id: string | null
  recipe_version: number | null
  first_id: number
  count: number
  by_reason: JSONColumnType<Record<string, { count: number; amount_at_risk: string | null }>, string, never>
  /** Bumped each time some of its exceptions become rows (sets.ts reloads which). */
  touched: ColumnType<number, number | undefined, number>
  /** The day the run recorded them (an exception without a record date ages from it). */
  created_on: ColumnType<string, string | undefined, never>
  created_at: ColumnType<Date, never, never>
}

/** The next exception id (one row). */
export interface ExceptionIdsTable {
  one: ColumnType<boolean, boolean | undefined, never>
  next: number
}

export interface ExceptionHistoryTable {
  id: Generated<number>
  exception_id: number
  actor: string
  action: string
  detail: JSONColumnType<Record<string, unknown> | null, string | null, never>
  created_at: ColumnType<Date, never, never>
}

export interface UnmatchedMatchesTable {
  run_id: string
  match_id: string
  actor: string
  reason: string
  created_at: ColumnType<Date, never, never>
}

/** A saved recipe run on a cron expression (src/schedules/). */
export interface SchedulesTable {
  id: string
  workspace_id: string
  recipe_id: string
  name: string | null
  cron: string
  timezone: string
  /** Parameter bindings: values, or { rolling: token } resolved at each firing. */
  params: JSONColumnType<Record<string, string | number | boolean | { rolling: string }>, string, string>
  carry_open_items: boolean
  active: boolean
  /** The next occurrence to fire; null while inactive. Claimed by compare-and-set. */
  next_run_at: Date | null
  last_fired_at: Date | null
  last_run_id: string | null
  last_error: JSONColumnType<{ error: string; message: string } | null, string | null, string | null>
  version: ColumnType<number, number | undefined, number>
  created_at: ColumnType<Date, never, never>
  updated_at: ColumnType<Date, never, unknown>
}

export interface Database {
  sources: SourcesTable
  recipes: RecipesTable
  recipe_versions: RecipeVersionsTable
  runs: RunsTable
  instances: InstancesTable
  idempotency_keys: IdempotencyKeysTable
  sessions: SessionsTable
  session_messages: SessionMessagesTable
  session_events: SessionEventsTable
  session_snapshots: SessionSnapshotsTable
  workspaces: WorkspacesTable
  api_keys: ApiKeysTable
  audit_log: AuditLogTable
  audit_heads: AuditHeadsTable
  webhooks: WebhooksTable
  webhook_outbox: WebhookOutboxTable
  webhook_attempts: WebhookAttemptsTable
  exceptions: ExceptionsTable
  exception_sets: ExceptionSetsTable
  exception_ids: ExceptionIdsTable
  exception_history: ExceptionHistoryTable
  unmatched_matches: UnmatchedMatchesTable
  schedules: SchedulesTable
}

export type SourceRow = Selectable<SourcesTable>
export type NewSourceRow = Insertable<SourcesTable>
export type RecipeRow = Selectable<RecipesTable>
export type RunRow = Selectable<RunsTable>
export type ExceptionRow = Selectable<ExceptionsTable>
export type ScheduleRow = Selectable<SchedulesTable>
export type { Generated }
