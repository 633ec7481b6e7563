// The `concord` command. Subcommands: serve (the HTTP service), migrate, openapi.

import { buildApp } from './app.js'
import { loadConfig } from './config.js'
import { embeddedDir, migrateToLatest, openDatabase } from './db/connect.js'
import { serveMcp } from './ai/mcp.js'
import { RECONCILE_USAGE, reconcileCommand } from './runs/cli.js'
import { serve } from './server.js'

const USAGE = `usage: concord <command>

commands:
  serve      start the HTTP service (same as npm start)
  reconcile  match two files or sources with a recipe, without a server (see below)
  mcp        serve the reasoning tools over MCP on stdio (AI_MODE, ANTHROPIC_API_KEY as for the service)
  migrate    bring the database to the latest schema and exit
  openapi    print the OpenAPI document to stdout

configuration comes from the environment: PORT, HOST, DATA_DIR, DATABASE_URL, LOG_LEVEL (see README)

${RECONCILE_USAGE}`

export async function main(argv: string[]): Promise<void> {
  const [command] = argv
  switch (command) {
    case 'serve':
      return serve()
    case 'reconcile':
      process.exitCode = await reconcileCommand(argv.slice(1), loadConfig({ ...process.env, LOG_LEVEL: 'silent' }))
      return
    case 'mcp':
      return serveMcp(loadConfig({ ...process.env, LOG_LEVEL: 'silent' }))
    case 'migrate': {
      const config = loadConfig()
      const database = await openDatabase({ url: config.databaseUrl, pgliteDir: embeddedDir(config.dataDir) })
      try {
        await migrateToLatest(database.db)
        process.stdout.write(`database (${database.kind}) is at the latest schema\n`)
      } finally {
        await database.close()
      }
      return
    }
    case 'openapi': {
      const config = loadConfig({ ...process.env, LOG_LEVEL: 'silent' })
      const database = await openDatabase({ pgliteDir: 'memory://' })
      const app = await buildApp({ config, database, logger: false })
      await app.ready()
      process.stdout.write(`${JSON.stringify(app.swagger(), null, 2)}\n`)
      await app.close()
      await database.close()
      return
    }
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(`${USAGE}\n`)
      return
    default:
      process.stderr.write(`concord: unknown command "${command}"\n\n${USAGE}\n`)
      process.exitCode = 2
  }
}
