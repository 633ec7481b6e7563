// The `concord` command. Subcommands: serve (the HTTP service), reconcile, mcp, migrate, openapi.
// Each loads only what it uses (dynamic imports): `concord --help` reads two small modules, not
// the server, the engine and the database (every module is transpiled on start).

import { RECONCILE_USAGE } from './runs/usage.js'

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
    case 'serve': {
      const { serve } = await import('./server.js')
      return serve()
    }
    case 'reconcile': {
      const { loadConfig } = await import('./config.js')
      const { reconcileCommand } = await import('./runs/cli.js')
      process.exitCode = await reconcileCommand(argv.slice(1), loadConfig({ ...process.env, LOG_LEVEL: 'silent' }))
      return
    }
    case 'mcp': {
      const { loadConfig } = await import('./config.js')
      const { serveMcp } = await import('./ai/mcp.js')
      return serveMcp(loadConfig({ ...process.env, LOG_LEVEL: 'silent' }))
    }
    case 'migrate': {
      const { loadConfig } = await import('./config.js')
      const { embeddedDir, migrateToLatest, openDatabase } = await import('./db/connect.js')
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
      const { loadConfig } = await import('./config.js')
      const { openDatabase } = await import('./db/connect.js')
      const { buildApp } = await import('./app.js')
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
