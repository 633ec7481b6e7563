import type { Kysely } from 'kysely'

// A turn's lease on its session names its owner: only the turn holding the token renews, saves or
// releases it (before, a turn that outlived the lease could release or overwrite the next one's).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('sessions').addColumn('busy_token', 'text').execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('sessions').dropColumn('busy_token').execute()
}
