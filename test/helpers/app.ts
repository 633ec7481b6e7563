// Builds the app for a test: a fresh data folder and an in-memory embedded database, closed at teardown.

import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { migrateToLatest, openDatabase, type ServiceDatabase } from '../../src/db/connect.js'
import { datasetsDir } from './datasets.js'

export interface TestApp {
  app: FastifyInstance
  dataDir: string
  database: ServiceDatabase
}

let migrated: Promise<Blob> | undefined

/**
 * A fresh in-memory service database, already migrated. The first call in a process creates and
 * migrates one and keeps its dump; every call starts a new PGlite from that dump, which takes a
 * third of the time of creating one. The caller closes it.
 */
export async function freshDatabase(): Promise<ServiceDatabase> {
  migrated ??= (async () => {
    const template = await openDatabase({ pgliteDir: 'memory://' })
    await migrateToLatest(template.db)
    const dump = await template.dump!()
    await template.close()
    return dump
  })()
  return openDatabase({ pgliteDir: 'memory://', pgliteDump: await migrated })
}

/**
 * Environment every test app gets unless it says otherwise. The overload guard is off: test files
 * run two at a time on a small machine, and a busy event loop there is not what a test is about
 * (test/operations.test.ts turns it on to test it).
 */
export const testEnv = { LOG_LEVEL: 'silent', MAX_EVENT_LOOP_DELAY_MS: '0' }

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
  // the shared datasets are read, never written: an app over them keeps its runs elsewhere
  const runsDir = dataDir.startsWith(datasetsDir) ? await mkdtemp(join(tmpdir(), 'concord-runs-')) : undefined
  if (runsDir) t.teardown(() => rm(runsDir, { recursive: true, force: true }))
  const config = loadConfig({ DATA_DIR: dataDir, ...testEnv, ...(runsDir ? { RUNS_DIR: runsDir } : {}), ...opts.env })
  const database = opts.database ?? (await freshDatabase())
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
