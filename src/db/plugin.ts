// Decorates the app with its database (opened by the caller or here), migrated to the latest schema.

import fp from 'fastify-plugin'
import type { Kysely } from 'kysely'
import { embeddedDir, migrateToLatest, openDatabase, type ServiceDatabase } from './connect.js'
import type { Database } from './schema.js'

declare module 'fastify' {
  interface FastifyInstance {
    db: Kysely<Database>
    database: ServiceDatabase
  }
}

export interface DbPluginOptions {
  /** An already open database (tests share one); it is then not closed with the app. */
  database?: ServiceDatabase
}

export default fp<DbPluginOptions>(
  async (app, opts) => {
    const owned = !opts.database
    const database =
      opts.database ??
      (await openDatabase({
        url: app.config.databaseUrl,
        pgliteDir: embeddedDir(app.config.dataDir),
        onFailure: (err) =>
          app.log.fatal(
            { err },
            'the embedded database stopped: requests that need it fail until the service restarts',
          ),
      }))
    await migrateToLatest(database.db)
    app.decorate('database', database)
    app.decorate('db', database.db)
    if (owned) app.addHook('onClose', () => database.close())
    app.log.info({ database: database.kind }, 'database ready')
  },
  { name: 'db' },
)
