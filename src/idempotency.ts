// Idempotency-Key on requests that create something (POST /api/runs, POST /api/sources, chat
// turns): a client that retries after a timeout or a dropped connection gets the first answer and
// starts nothing new. The key is kept per workspace and route with a hash of the request; the
// first request records it before it runs and its 2xx answer after, so a retry meanwhile is a
// 409 and a later one a replay. A request that failed leaves no record (nothing was stored, so the
// retry runs again). Answers are kept a day; a first request unfinished after 15 minutes (its
// process died) is forgotten.

import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { sql } from 'kysely'
import { Type } from 'typebox'
import { ConcordError } from './errors.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route honours Idempotency-Key. */
    idempotent?: boolean
  }
  interface FastifyRequest {
    idempotency: { workspace: string; route: string; key: string } | null
  }
}

const KEY = /^[\w.:-]{1,255}$/

/** The header as the routes that honour it declare it (OpenAPI, the generated client). */
export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      // the pattern is checked by the hook, which answers invalid_idempotency_key with a hint
      description:
        '1-255 of letters, digits, . _ : -. Retries with the same key get the first answer and create nothing new (kept a day; another request with the key is a 422)',
    }),
  ),
})

export default fp(
  async (app: FastifyInstance) => {
    app.decorateRequest('idempotency', null)

    // an upload is checked before its body is read (a replay must not write the file again), its
    // key standing for it alone; a JSON request once its body is parsed, with the body's hash
    app.addHook('preParsing', async (request, reply) => {
      if (isUpload(request)) return check(request, reply, () => 'multipart')
    })
    app.addHook('preHandler', async (request, reply) => {
      if (!isUpload(request))
        return check(request, reply, () =>
          createHash('sha256')
            .update(JSON.stringify(request.body ?? null))
            .digest('hex'),
        )
    })

    /** `hashOf` is called only for a route that honours the header and a request that sends it. */
    async function check(request: FastifyRequest, reply: FastifyReply, hashOf: () => string) {
      if (!request.routeOptions.config.idempotent) return
      const key = request.headers['idempotency-key']
      if (key === undefined) return
      if (typeof key !== 'string' || !KEY.test(key))
        throw new ConcordError(
          'invalid_idempotency_key',
          'Idempotency-Key must be 1 to 255 letters, digits or . _ : -',
          400,
          'send one key per logical request, e.g. a UUID',
        )
      const hash = hashOf()
      const workspace = request.principal.workspace
      const route = `${request.method} ${request.routeOptions.url}`
      const db = app.db
      // forgotten: answers older than a day, and first requests that never finished (a crash)
      await db
        .deleteFrom('idempotency_keys')
        .where((eb) =>
          eb.or([
            eb('created_at', '<', sql<Date>`now() - interval '1 day'`),
            eb.and([eb('status', 'is', null), eb('created_at', '<', sql<Date>`now() - interval '15 minutes'`)]),
          ]),
        )
        .execute()
      const inserted = await db
        .insertInto('idempotency_keys')
        .values({ workspace_id: workspace, route, key, request_hash: hash })
        .onConflict((oc) => oc.doNothing())
        .returning('key')
        .executeTakeFirst()
      if (inserted) {
        request.idempotency = { workspace, route, key }
        return
      }
      const first = await db
        .selectFrom('idempotency_keys')
        .selectAll()
        .where('workspace_id', '=', workspace)
        .where('route', '=', route)
        .where('key', '=', key)
        .executeTakeFirst()
      if (!first) throw inProgress() // forgotten this instant: as good as in progress
      if (first.request_hash !== hash)
        throw new ConcordError(
          'idempotency_key_reused',
          `Idempotency-Key "${key}" was used for a different request`,
          422,
          'use a new key for a new request',
        )
      if (first.status === null) throw inProgress()
      const headers = { 'content-type': 'application/json; charset=utf-8', 'idempotent-replayed': 'true' }
      if (isUpload(request)) {
        // before the body is parsed a reply must end the request outright (the upload stays unread)
        reply.hijack()
        reply.raw.writeHead(first.status, { ...headers, 'x-request-id': request.id, connection: 'close' })
        reply.raw.end(first.response ?? '')
        return
      }
      return reply
        .code(first.status)
        .headers(headers)
        .send(first.response ?? '')
    }

    app.addHook('onSend', async (request, reply, payload) => {
      const held = request.idempotency
      if (!held) return payload
      request.idempotency = null
      if (reply.statusCode >= 200 && reply.statusCode < 300 && typeof payload === 'string')
        await app.db
          .updateTable('idempotency_keys')
          .set({ status: reply.statusCode, response: payload })
          .where('workspace_id', '=', held.workspace)
          .where('route', '=', held.route)
          .where('key', '=', held.key)
          .execute()
      else
        await app.db
          .deleteFrom('idempotency_keys')
          .where('workspace_id', '=', held.workspace)
          .where('route', '=', held.route)
          .where('key', '=', held.key)
          .execute()
      return payload
    })
  },
  { name: 'idempotency', dependencies: ['db'] },
)

/** A multipart upload, told by its header (request.isMultipart() is only known once parsed). */
function isUpload(request: FastifyRequest): boolean {
  return /^multipart\/form-data/i.test(request.headers['content-type'] ?? '')
}

function inProgress(): ConcordError {
  return new ConcordError(
    'idempotency_in_progress',
    'a request with this Idempotency-Key is still being answered',
    409,
    'retry once it has finished: the retry then gets its answer',
  )
}
