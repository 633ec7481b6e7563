// Decorates the app with its database (opened by the caller or here), migrated to the latest schema.

import type { FastifyBaseLogger } from 'fastify'
import fp from 'fastify-plugin'
import type { Kysely } from 'kysely'
import type { Config } from '../config.js'
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
  /** The service's database as `openServiceDatabase` began opening it; the app's to close. */
  opening?: Promise<ServiceDatabase>
}

/**
 * The service's database as configured, opening. `concord serve` calls it before it loads the
 * service's modules, so an embedded database starts on its own thread meanwhile. A failure is
 * held for whoever awaits the promise (no unhandled rejection in between); `log` names where a
 * later failure of the embedded database's thread is reported.
 */
export function openServiceDatabase(
  config: Config,
  log: () => FastifyBaseLogger | undefined,
): Promise<ServiceDatabase> {
  const opening = openDatabase({
    url: config.databaseUrl,
    pgliteDir: embeddedDir(config.dataDir),
    onFailure: (err) => {
      const message = 'the embedded database stopped: requests that need it fail until the service restarts'
      const logger = log()
      if (logger) logger.fatal({ err }, message)
      else process.stderr.write(`${message}: ${String(err)}\n`)
    },
  })
  opening.catch(() => {})
  return opening
}

export default fp<DbPluginOptions>(
  async (app, opts) => {
    const owned = !opts.database
    const database = opts.database ?? (await (opts.opening ?? openServiceDatabase(app.config, () => app.log)))
    await migrateToLatest(database.db)
    app.decorate('database', database)
    app.decorate('db', database.db)
    if (owned) app.addHook('onClose', () => database.close())
    app.log.info({ database: database.kind }, 'database ready')
  },
  { name: 'db' },
)
