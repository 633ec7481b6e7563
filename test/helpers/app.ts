// Builds the app for a test: a fresh data folder and an in-memory embedded database, closed at teardown.

import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { openDatabase, type ServiceDatabase } from '../../src/db/connect.js'

export interface TestApp {
  app: FastifyInstance
  dataDir: string
  database: ServiceDatabase
}

export async function testApp(
  t: Test,
  opts: {
    files?: Record<string, string>
    dataDir?: string
    env?: Record<string, string>
    database?: ServiceDatabase
  } = {},
): Promise<TestApp> {
  const dataDir = opts.dataDir ?? t.testdir(opts.files ?? {})
  const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', ...opts.env })
  const database = opts.database ?? (await openDatabase({ pgliteDir: 'memory://' }))
  const app = await buildApp({ config, database, logger: false })
  t.teardown(async () => {
    await app.close()
    if (!opts.database) await database.close()
  })
  await app.ready()
  return { app, dataDir, database }
}

/** The real datasets, shared with the project from outside; tests using them skip visibly when absent. */
export { datasetsDir, datasetsSkip, hasDatasets } from './datasets.js'
