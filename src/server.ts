// Entry point: configuration, listen, graceful shutdown. Everything else is buildApp.

import closeWithGrace from 'close-with-grace'
import { buildApp } from './app.js'
import { loadConfig } from './config.js'

export async function serve(): Promise<void> {
  const config = loadConfig()
  const app = await buildApp({ config })
  closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'closing after an error')
    else app.log.info({ signal }, 'shutting down')
    await app.close()
  })
  await app.ready()
  let host = config.host
  if ((await app.keys.open()) && !LOOPBACK.has(host)) {
    // no key protects the API: only this machine may reach it
    app.log.warn(
      { requested_host: host },
      'no API key is configured (CONCORD_ADMIN_KEY): listening on 127.0.0.1 only; set a key to serve other hosts',
    )
    host = '127.0.0.1'
  } else if (await app.keys.open()) {
    app.log.warn(
      'no API key is configured (CONCORD_ADMIN_KEY): every local request is an admin of the default workspace',
    )
  }
  await app.listen({ port: config.port, host })
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1'])
