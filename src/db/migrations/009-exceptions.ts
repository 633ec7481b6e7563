import { type Kysely, sql } from 'kysely'

// Exceptions: what a completed run left unmatched or ambiguous, one row each, worked by operators
// (assigned, commented, resolved) and carried into later runs of the same recipe until resolved.
// A run writes its exceptions in bulk, so the table keeps only the indexes the work queue needs:
// the open items of a recipe (unique: one open exception per record), the open queue by amount at
// risk and by age, the run that created them, and the later run that last saw one (set only when
// a later run sees it, so a fresh row adds nothing to that index).
export async function up(db: Kysely<unknown>): Promise<void> {
  // a run of a saved recipe may carry the recipe's open items into its scope (src/exceptions/carry.ts)
  await db.schema
    .alterTable('runs')
    .addColumn('carry_open_items', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute()
  await db.schema
    .createTable('exceptions')
    .addColumn('id', 'bigint', (c) => c.generatedByDefaultAsIdentity().primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
    .addColumn('last_run_id', 'text')
    .addColumn('recipe_id', 'text')
    .addColumn('recipe_version', 'integer')
    .addColumn('side', 'text', (c) => c.notNull())
    .addColumn('record_key', 'text', (c) => c.notNull())
    .addColumn('keys', 'jsonb')
    .addColumn('match_id', 'text')
    .addColumn('candidate_key', 'text')
    .addColumn('amount', 'numeric')
    .addColumn('amount_at_risk', 'numeric', (c) => c.notNull().defaultTo(0))
    .addColumn('difference', 'numeric')
    .addColumn('record_date', 'date')
    .addColumn('age_from', 'date', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('carry', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('open'))
    .addColumn('resolution', 'text')
    .addColumn('resolution_detail', 'jsonb')
    .addColumn('resolved_by', 'text')
    .addColumn('resolved_at', 'timestamptz')
    .addColumn('assignee', 'text')
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await sql`create unique index exceptions_open_item on exceptions (recipe_id, side, record_key)
    where status = 'open' and recipe_id is not null`.execute(db)
  await sql`create index exceptions_open_amount on exceptions (workspace_id, amount_at_risk, id)
    where status = 'open'`.execute(db)
  await sql`create index exceptions_open_age on exceptions (workspace_id, age_from, id)
    where status = 'open'`.execute(db)
  await db.schema.createIndex('exceptions_run').on('exceptions').column('run_id').execute()
  await sql`create index exceptions_last_run on exceptions (last_run_id) where last_run_id is not null`.execute(db)

  // what happened to an exception after it was created: assignments, comments, resolutions (one
  // row per operator action on it; a run's bulk creation and closing are on the row itself)
  await db.schema
    .createTable('exception_history')
    .addColumn('id', 'bigint', (c) => c.generatedByDefaultAsIdentity().primaryKey())
    .addColumn('exception_id', 'bigint', (c) => c.notNull().references('exceptions.id').onDelete('cascade'))
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('detail', 'jsonb')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema
    .createIndex('exception_history_exception')
    .on('exception_history')
    .columns(['exception_id', 'id'])
    .execute()

  // an automatic match an operator undid: once per match
  await db.schema
    .createTable('unmatched_matches')
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
    .addColumn('match_id', 'text', (c) => c.notNull())
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('unmatched_matches_pk', ['run_id', 'match_id'])
    .execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('unmatched_matches').execute()
  await db.schema.dropTable('exception_history').execute()
  await db.schema.dropTable('exceptions').execute()
  await db.schema.alterTable('runs').dropColumn('carry_open_items').execute()
}
