import { type Kysely, sql } from 'kysely'

// A run: what ran (the recipe as run, with its parameters applied, and the version it came from),
// how far it got, and its summary. The bulk of its results lives in files (src/runs/results.ts);
// a run is `completed` only once those are in place, so a crash never shows half a result.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('runs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('recipe_id', 'text')
    .addColumn('recipe_version', 'integer')
    .addColumn('recipe', 'jsonb', (c) => c.notNull())
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('engine', 'text', (c) => c.notNull())
    .addColumn('dry_run', 'boolean', (c) => c.notNull())
    .addColumn('params', 'jsonb', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('progress', 'jsonb', (c) => c.notNull())
    .addColumn('summary', 'jsonb')
    .addColumn('error', 'jsonb')
    .addColumn('retry_of', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('started_at', 'timestamptz')
    .addColumn('finished_at', 'timestamptz')
    .execute()
  await db.schema.createIndex('runs_created_at').on('runs').column('created_at').execute()
  await db.schema.createIndex('runs_status').on('runs').column('status').execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('runs').execute()
}
