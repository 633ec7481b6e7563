// Probes: /health says the process is up; /ready says it can serve: its database answers and the
// overload guard would let an ordinary request through (so a client that waits for /ready is not
// then refused).

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'

const Status = Type.Object({ status: Type.String(), database: Type.Optional(Type.String()) })

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/health', { schema: { tags: ['ops'], response: { 200: Status } } }, async () => ({ status: 'ok' }))
  app.get('/ready', { schema: { tags: ['ops'], response: { 200: Status, 503: Status } } }, async (_request, reply) => {
    const database = app.database.kind
    if (!(await app.database.ping())) return reply.code(503).send({ status: 'unavailable', database })
    if (app.isUnderPressure())
      return reply.code(503).header('retry-after', '5').send({ status: 'overloaded', database })
    return reply.code(200).send({ status: 'ready', database })
  })
}

export default routes
