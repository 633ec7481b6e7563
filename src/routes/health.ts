// Probes: /health says the process is up; /ready says it can serve (its database answers).

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'

const Status = Type.Object({ status: Type.String(), database: Type.Optional(Type.String()) })

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/health', { schema: { tags: ['ops'], response: { 200: Status } } }, async () => ({ status: 'ok' }))
  app.get('/ready', { schema: { tags: ['ops'], response: { 200: Status, 503: Status } } }, async (_request, reply) => {
    const ok = await app.database.ping()
    return reply.code(ok ? 200 : 503).send({ status: ok ? 'ready' : 'unavailable', database: app.database.kind })
  })
}

export default routes
