// What the migrator asks the database about its own tables. Kysely's stock Postgres introspector
// reads every column of every table in every schema and calls pg_get_serial_sequence on each by
// name; a table another session drops meanwhile (a second deployment, parallel tests in one
// database) makes that call fail with "relation … does not exist", and the service's start-up with
// it. The migrator only needs table names in its own schema, so that is all this reads.

import { PGliteDialect, PostgresDialect, sql, type DatabaseIntrospector, type Kysely, type TableMetadata } from 'kysely'

export class CurrentSchemaIntrospector implements DatabaseIntrospector {
  constructor(private readonly db: Kysely<unknown>) {}

  async getSchemas() {
    const { rows } = await sql<{ name: string }>`select nspname as name from pg_catalog.pg_namespace`.execute(this.db)
    return rows
  }

  /** Tables and views of the current schema, without their columns. */
  async getTables(): Promise<TableMetadata[]> {
    const { rows } = await sql<{ name: string; schema: string; kind: string }>`
      select c.relname as name, ns.nspname as schema, c.relkind as kind
      from pg_catalog.pg_class c join pg_catalog.pg_namespace ns on ns.oid = c.relnamespace
      where ns.nspname = current_schema() and c.relkind in ('r', 'v', 'p', 'f')`.execute(this.db)
    return rows.map((r) => ({
      name: r.name,
      schema: r.schema,
      isView: r.kind === 'v',
      isForeign: r.kind === 'f',
      columns: [],
    }))
  }
}

export class ServicePostgresDialect extends PostgresDialect {
  override createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new CurrentSchemaIntrospector(db)
  }
}

export class ServicePGliteDialect extends PGliteDialect {
  override createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new CurrentSchemaIntrospector(db)
  }
}
