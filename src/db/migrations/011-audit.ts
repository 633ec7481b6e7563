import { type Kysely, sql } from 'kysely'

// The audit trail: one append-only chain of changes per workspace (src/audit/). Every row keeps
// exactly the text it was hashed from (the time as ISO text, the snapshots as canonical JSON), so
// the hash can be recomputed from what is stored, on PGlite and PostgreSQL alike. `audit_heads`
// holds each chain's last seq and hash: appenders lock it, so concurrent appends queue up and
// each links to the one before.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('audit_log')
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('at', 'text', (c) => c.notNull())
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('entity_type', 'text', (c) => c.notNull())
    .addColumn('entity_id', 'text', (c) => c.notNull())
    .addColumn('before', 'text')
    .addColumn('after', 'text')
    .addColumn('request_id', 'text')
    .addColumn('prev_hash', 'text', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('audit_log_pk', ['workspace_id', 'seq'])
    .execute()
  await db.schema
    .createIndex('audit_log_entity')
    .on('audit_log')
    .columns(['workspace_id', 'entity_type', 'entity_id', 'seq'])
    .execute()
  await db.schema.createIndex('audit_log_at').on('audit_log').columns(['workspace_id', 'at']).execute()
  await db.schema
    .createTable('audit_heads')
    .addColumn('workspace_id', 'text', (c) => c.primaryKey())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .execute()
  // Append-only in the database too: the service never updates or deletes a row, and a stray
  // UPDATE or DELETE is refused here. Whoever can disable the trigger can still rewrite rows:
  // GET /api/audit/verify finds that.
  await sql`
    CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP;
    END
    $$`.execute(db)
  await sql`
    CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only()`.execute(db)
  await sql`
    CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only()`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('audit_heads').execute()
  await db.schema.dropTable('audit_log').execute()
  await sql`DROP FUNCTION audit_log_append_only()`.execute(db)
}
