import { type Kysely, sql } from 'kysely'

// Workspaces and API keys. Every source, recipe, run and session belongs to a workspace; what was
// there before this migration belongs to "default". Keys are stored as SHA-256 hashes (they are
// random 256-bit tokens, so a slow hash adds nothing); the prefix identifies a key in lists.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('workspaces')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await sql`INSERT INTO workspaces (id, name) VALUES ('default', 'default')`.execute(db)
  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('prefix', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('last_used_at', 'timestamptz')
    .addColumn('revoked_at', 'timestamptz')
    .execute()
  for (const table of ['sources', 'recipes', 'runs', 'sessions']) {
    await db.schema
      .alterTable(table)
      .addColumn('workspace_id', 'text', (c) => c.notNull().defaultTo('default').references('workspaces.id'))
      .execute()
  }
  // an alias is unique within its workspace
  await sql`ALTER TABLE sources DROP CONSTRAINT sources_pkey`.execute(db)
  await sql`ALTER TABLE sources ADD PRIMARY KEY (workspace_id, alias)`.execute(db)
  for (const table of ['recipes', 'runs', 'sessions'])
    await db.schema.createIndex(`${table}_workspace`).on(table).column('workspace_id').execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['recipes', 'runs', 'sessions'])
    await db.schema.alterTable(table).dropColumn('workspace_id').execute()
  await sql`ALTER TABLE sources DROP CONSTRAINT sources_pkey`.execute(db)
  await db.schema.alterTable('sources').dropColumn('workspace_id').execute()
  await sql`ALTER TABLE sources ADD PRIMARY KEY (alias)`.execute(db)
  await db.schema.dropTable('api_keys').execute()
  await db.schema.dropTable('workspaces').execute()
}
