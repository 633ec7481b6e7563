// The service's own tables, one interface each (Kysely style). Migrations in ./migrations create them.

import type { ColumnType, Generated, Insertable, JSONColumnType, Selectable } from 'kysely'
import type { ColumnInfo } from '../engine/types.js'

export interface SourcesTable {
  alias: string
  type: string
  /** The connector's config, as prepared. Redacted before it leaves the service. */
  config: JSONColumnType<Record<string, unknown>, string, string>
  columns: JSONColumnType<ColumnInfo[], string, string>
  created_at: ColumnType<Date, never, never>
}

export interface Database {
  sources: SourcesTable
}

export type SourceRow = Selectable<SourcesTable>
export type NewSourceRow = Insertable<SourcesTable>
export type { Generated }
