// Access control: every request but the probes and the API documentation carries
// `Authorization: Bearer <key>`; the key gives the request its workspace and role, and a route
// needs at least a role (GET: viewer, other methods: operator, unless the route asks for admin).
// With no key configured at all when the service starts (open mode) every request is an admin of
// the default workspace; the server then refuses to listen anywhere but loopback (server.ts).
// Open mode is decided at start-up: it ends with the first key, and never begins while running.

import fp from 'fastify-plugin'
import { ConcordError } from '../errors.js'
import type { Role } from '../db/schema.js'
import { KeysService, type Principal, roleRank } from './keys.js'

declare module 'fastify' {
  interface FastifyInstance {
    keys: KeysService
  }
  interface FastifyRequest {
    principal: Principal
  }
  interface FastifyContextConfig {
    /** The least role the route needs (default: viewer for GET, operator otherwise). */
    role?: Role
  }
}

const PUBLIC = /^\/(health|ready|metrics|docs|openapi\.json)(\/|\?|$)/

const OPEN: Principal = { workspace: 'default', role: 'admin', keyId: null, root: true }

export default fp(
  async (app) => {
    const keys = new KeysService(app.db, app.config.adminKey)
    app.decorate('keys', keys)
    app.decorateRequest('principal', null as unknown as Principal)
    app.addHook('onReady', async () => {
      await keys.decideOpenMode()
    })
    app.addHook('onRequest', async (request) => {
      if (PUBLIC.test(request.url)) return
      const header = request.headers.authorization
      if (!header) {
        if (await keys.openNow()) {
          request.principal = OPEN
          return
        }
        throw new ConcordError('unauthorized', 'this request needs an API key', 401, 'send Authorization: Bearer <key>')
      }
      const match = /^Bearer\s+(\S+)$/i.exec(header)
      const principal = match ? await keys.authenticate(match[1]) : null
      if (!principal)
        throw new ConcordError(
          'unauthorized',
          'the API key is not valid (or was revoked)',
          401,
          'ask an admin for a key',
        )
      request.principal = principal
      request.log = request.log.child({ workspace: principal.workspace, key: principal.keyId ?? 'bootstrap' })
      // checked here, before any body is read (an upload is written to disk before the handler)
      const needed = request.routeOptions.config?.role ?? (request.method === 'GET' ? 'viewer' : 'operator')
      if (roleRank(principal.role) < roleRank(needed))
        throw new ConcordError(
          'forbidden',
          `this needs the ${needed} role; the key is a ${principal.role}`,
          403,
          'use a key with that role',
        )
    })
  },
  { name: 'auth', dependencies: ['db'] },
)
