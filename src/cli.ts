// The `concord` command. Subcommands: serve (the HTTP service), reconcile, exceptions, mcp,
// migrate, openapi.
// Each loads only what it uses (dynamic imports): `concord --help` reads two small modules, not
// the server, the engine and the database.

import { RECONCILE_USAGE } from './runs/usage.js'

const ENVIRONMENT = `configuration comes from the environment: PORT, HOST, DATA_DIR, DATABASE_URL, LOG_LEVEL,
CONCORD_ADMIN_KEY, AI_MODE, ANTHROPIC_API_KEY, … (see README, "Configuration")`

const USAGE = `usage: concord <command>

commands:
  serve      start the HTTP service (same as npm start)
  reconcile  match two files or sources with a recipe, without a server (its usage follows)
  exceptions list, show and resolve the exceptions of a running service (concord exceptions --help)
  mcp        serve the reasoning tools over MCP on stdio (AI_MODE, ANTHROPIC_API_KEY as for the service)
  migrate    bring the database to the latest schema and exit
  openapi    print the OpenAPI document to stdout

concord <command> --help says more about each.

${ENVIRONMENT}

${RECONCILE_USAGE}`

/** Each command's own help: `concord <command> --help`. */
const COMMAND_USAGE: Record<string, string> = {
  serve: `usage: concord serve

Starts the HTTP service (what npm start runs) and serves until SIGINT or SIGTERM, then drains
running requests. API documentation at /docs once it is up.

${ENVIRONMENT}`,
  reconcile: RECONCILE_USAGE,
  mcp: `usage: concord mcp

Serves the reasoning tools (GET /api/ai/tools lists them) over the Model Context Protocol on
stdin/stdout, for an MCP client that starts this process. Exits when its input ends.
AI_MODE and ANTHROPIC_API_KEY choose the engine as for the service.`,
  migrate: `usage: concord migrate

Brings the service's database (embedded PGlite under DATA_DIR, or DATABASE_URL) to the latest
schema and exits. concord serve does the same on start.

${ENVIRONMENT}`,
  openapi: `usage: concord openapi

Prints the OpenAPI document of the service's HTTP API to stdout (what /openapi.json serves).`,
}

export async function main(argv: string[]): Promise<void> {
  const [command] = argv
  if (command in COMMAND_USAGE && argv.slice(1).some((a) => a === '--help' || a === '-h')) {
    process.stdout.write(`${COMMAND_USAGE[command]}\n`)
    return
  }
  switch (command) {
    case 'serve': {
      const { serve } = await import('./server.js')
      return serve()
    }
    case 'reconcile': {
      // large files: the engine's helper threads boot while this thread loads the modules below
      await (await import('./runs/cli-args.js')).warmForFiles(argv.slice(1))
      const { loadConfig } = await import('./config.js')
      const { reconcileCommand } = await import('./runs/cli.js')
      process.exitCode = await reconcileCommand(argv.slice(1), loadConfig({ ...process.env, LOG_LEVEL: 'silent' }))
      return
    }
    case 'exceptions': {
      // a client of a running service: none of the server's modules are loaded
      const { exceptionsCommand } = await import('./exceptions/cli.js')
      process.exitCode = await exceptionsCommand(argv.slice(1))
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
