// Entry point: configuration, listen, graceful shutdown. Everything else is buildApp.

import closeWithGrace from 'close-with-grace'
import type { FastifyInstance } from 'fastify'
import { loadConfig } from './config.js'
import { openServiceDatabase } from './db/plugin.js'

export async function serve(): Promise<void> {
  const config = loadConfig()
  // the database opens (an embedded one on its own thread) while the service's modules load:
  // each took 1–2 s of a start on an existing data folder, one after the other
  let app: FastifyInstance | undefined
  const openingDatabase = openServiceDatabase(config, () => app?.log)
  try {
    const { buildApp } = await import('./app.js')
    app = await buildApp({ config, openingDatabase })
    await app.ready()
  } catch (err) {
    // nothing will serve: the database (an embedded one's thread and lock) closes before the error
    // is said; an app that was built closes it with itself
    if (app) await app.close().catch(() => {})
    else await openingDatabase.then((database) => database.close()).catch(() => {})
    throw err
  }
  if (app.keys.openAtStart && !LOOPBACK.has(config.host)) {
    // no key protects the API: serving other hosts would hand every caller an admin of the default workspace
    app.log.error(
      { host: config.host },
      `no API key is configured (CONCORD_ADMIN_KEY): refusing to listen on ${config.host}; set CONCORD_ADMIN_KEY, or HOST=127.0.0.1 for local use`,
    )
    await app.close()
    process.exitCode = 1
    return
  }
  closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'closing after an error')
    else app.log.info({ signal }, 'shutting down')
    await app.close()
  })
  if (app.keys.openAtStart)
    app.log.warn(
      { host: config.host },
      'no API key is configured (CONCORD_ADMIN_KEY): open mode, listening on loopback only; every request is an admin of the default workspace',
    )
  try {
    await app.listen({ port: config.port, host: config.host })
  } catch (err) {
    await app.close().catch(() => {}) // the port is taken, say: close cleanly, then say why
    throw err
  }
  // what no request has needed yet compiles now, between requests, so first requests stay quick
  app.compilers
    .compileAll()
    .then((n) => app.log.debug({ compiled: n }, 'reply serializers and request validators compiled'))
    .catch((err) => app.log.error({ err }, 'a route schema does not compile'))
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1'])
