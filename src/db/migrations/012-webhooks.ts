import { type Kysely, sql } from 'kysely'

// Webhooks (src/webhooks/): subscriptions per workspace, the transactional outbox that emit()
// fills in the caller's transaction, and the log of every delivery attempt. An outbox row is one
// event for one subscription; its id is the delivery id receivers deduplicate by. A dispatcher
// claims due rows with a lease (lease_owner, lease_until), so instances sharing the database
// never deliver one row at the same time, and a row whose process died is picked up again.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('webhooks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    /** a JSON array of event names */
    .addColumn('events', 'text', (c) => c.notNull())
    /** sealed with CONCORD_SECRET_KEY when one is configured (sources/secrets.ts) */
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('active', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema.createIndex('webhooks_workspace').on('webhooks').column('workspace_id').execute()
  await db.schema
    .createTable('webhook_outbox')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('webhook_id', 'text', (c) => c.notNull().references('webhooks.id').onDelete('cascade'))
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('event', 'text', (c) => c.notNull())
    /** the exact JSON body every attempt sends (and signs) */
    .addColumn('body', 'text', (c) => c.notNull())
    /** pending | delivered | dead */
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('pending'))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('lease_owner', 'text')
    .addColumn('lease_until', 'timestamptz')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('finished_at', 'timestamptz')
    .execute()
  // the dispatcher's claim reads due pending rows; a partial index keeps delivered ones out of it
  await sql`CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at) WHERE status = 'pending'`.execute(db)
  await db.schema
    .createIndex('webhook_outbox_webhook')
    .on('webhook_outbox')
    .columns(['webhook_id', 'created_at'])
    .execute()
  await db.schema
    .createTable('webhook_attempts')
    .addColumn('delivery_id', 'text', (c) => c.notNull().references('webhook_outbox.id').onDelete('cascade'))
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('webhook_id', 'text', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('error', 'text')
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('webhook_attempts_pk', ['delivery_id', 'attempt'])
    .execute()
  await db.schema.createIndex('webhook_attempts_webhook').on('webhook_attempts').columns(['webhook_id', 'at']).execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('webhook_attempts').execute()
  await db.schema.dropTable('webhook_outbox').execute()
  await db.schema.dropTable('webhooks').execute()
}
