// Access control: every request but the probes and the API documentation carries
// `Authorization: Bearer <key>`; the key gives the request its workspace and role, and a route
// needs at least a role (GET: viewer, other methods: operator, unless the route asks for admin).
// With no key configured at all when the service starts (open mode) every request is an admin of
// the default workspace; the server then refuses to listen anywhere but loopback (server.ts).
// Open mode is decided at start-up: it ends with the first key, and never begins while running.

import type { FastifyRequest } from 'fastify'
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

const OPEN: Principal = { workspace: 'default', role: 'admin', keyId: null, root: true, open: true }

/** The probes' routes: reachable without a key, and exempt from the rate limit and the overload guard. */
const PROBE_ROUTES = new Set(['/health', '/ready', '/metrics'])
export const isProbe = (request: FastifyRequest) => PROBE_ROUTES.has(request.routeOptions.url ?? '')

/** Each request's key is looked up once, by whichever needs it first (the rate limit, then access). */
const authenticated = new WeakMap<FastifyRequest, Promise<Principal | null>>()

function principalOf(request: FastifyRequest): Promise<Principal | null> {
  let found = authenticated.get(request)
  if (!found) {
    const match = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '')
    found = match ? request.server.keys.authenticate(match[1]) : Promise.resolve(null)
    authenticated.set(request, found)
  }
  return found
}

/**
 * Who the rate limit counts a request against: its API key when the key is valid (many clients
 * may share an address), otherwise its address. Keying on the raw header instead would give
 * every made-up token a fresh allowance, and leave key guessing unlimited.
 */
export async function rateLimitKey(request: FastifyRequest): Promise<string> {
  const principal = await principalOf(request).catch(() => null)
  if (principal) return principal.keyId ? `key:${principal.keyId}` : 'key:bootstrap'
  return `ip:${request.ip}`
}

export default fp(
  async (app) => {
    const keys = new KeysService(app.db, app.config.adminKey, app.audit, app.database.kind === 'pglite')
    app.decorate('keys', keys)
    app.decorateRequest('principal', null as unknown as Principal)
    app.addHook('onReady', async () => {
      await keys.decideOpenMode()
    })
    // preParsing: after the rate limit (a route-level onRequest hook), before any body is read
    app.addHook('preParsing', async (request) => {
      if (PUBLIC.test(request.url)) return
      const header = request.headers.authorization
      if (!header) {
        if (await keys.openNow()) {
          request.principal = OPEN
          return
        }
        throw new ConcordError('unauthorized', 'this request needs an API key', 401, 'send Authorization: Bearer <key>')
      }
      const principal = await principalOf(request)
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
  { name: 'auth', dependencies: ['db', 'audit'] },
)
