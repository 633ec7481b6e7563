import { type Kysely, sql } from 'kysely'

// Schedules: a saved recipe run on a cron expression in a time zone, its parameters bound to
// rolling tokens resolved at each firing. The next occurrence is stored, so schedules survive
// restarts, and instances sharing the database claim each occurrence by a compare-and-set on it.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('schedules')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('recipe_id', 'text', (c) => c.notNull().references('recipes.id').onDelete('cascade'))
    .addColumn('name', 'text')
    .addColumn('cron', 'text', (c) => c.notNull())
    .addColumn('timezone', 'text', (c) => c.notNull())
    .addColumn('params', 'jsonb', (c) => c.notNull())
    .addColumn('carry_open_items', 'boolean', (c) => c.notNull())
    .addColumn('active', 'boolean', (c) => c.notNull())
    .addColumn('next_run_at', 'timestamptz')
    .addColumn('last_fired_at', 'timestamptz')
    .addColumn('last_run_id', 'text')
    .addColumn('last_error', 'jsonb')
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await sql`create index schedules_due on schedules (next_run_at) where active`.execute(db)
  await db.schema.createIndex('schedules_workspace').on('schedules').columns(['workspace_id', 'created_at']).execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('schedules').execute()
}
