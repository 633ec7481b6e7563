import { type Kysely, sql } from 'kysely'

// Chat sessions: one row of state per session (the fields of the seed's ChatSession), the whole
// conversation as Messages API content blocks, events with reason codes, and a snapshot after
// each turn for undo/redo. `busy_until` makes a turn exclusive without holding a transaction
// open across model calls (it expires, so a crashed turn does not lock a session forever).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('phase', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('left_alias', 'text')
    .addColumn('right_alias', 'text')
    .addColumn('sources_list', 'jsonb')
    .addColumn('schema_left', 'jsonb')
    .addColumn('schema_right', 'jsonb')
    .addColumn('scope_left', 'jsonb')
    .addColumn('scope_right', 'jsonb')
    .addColumn('sample_left', 'jsonb')
    .addColumn('sample_right', 'jsonb')
    .addColumn('proposals', 'jsonb')
    .addColumn('confirmed_pairs', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('rules', 'jsonb')
    .addColumn('recipe_draft', 'jsonb')
    .addColumn('validation', 'jsonb')
    .addColumn('validation_approved', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('last_run', 'jsonb')
    .addColumn('artifacts', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('snapshot', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('busy_until', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema
    .createTable('session_messages')
    .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id').onDelete('cascade'))
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('content', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('session_messages_pk', ['session_id', 'seq'])
    .execute()
  await db.schema
    .createTable('session_events')
    .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id').onDelete('cascade'))
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('turn', 'integer', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('phase', 'text', (c) => c.notNull())
    .addColumn('tool', 'text')
    .addColumn('detail', 'jsonb')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('session_events_pk', ['session_id', 'seq'])
    .execute()
  await db.schema
    .createTable('session_snapshots')
    .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id').onDelete('cascade'))
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('state', 'jsonb', (c) => c.notNull())
    .addColumn('messages', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('session_snapshots_pk', ['session_id', 'seq'])
    .execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ['session_snapshots', 'session_events', 'session_messages', 'sessions'])
    await db.schema.dropTable(t).execute()
}
