import { type Kysely, sql } from 'kysely'

// Several instances on one database: each run belongs to the instance that queued it, and each
// instance beats in `instances`. Recovery touches only runs whose owner stopped beating (a restart
// used to interrupt every unfinished run in the database, the other instances' live ones too).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('instances')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('started_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('heartbeat_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema.alterTable('runs').addColumn('owner', 'text').execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('runs').dropColumn('owner').execute()
  await db.schema.dropTable('instances').execute()
}
