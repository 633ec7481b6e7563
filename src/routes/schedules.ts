// /api/schedules: thin routes over the schedules service. Reads need a viewer, changes an operator.

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { ScheduleInput, SchedulePatch } from '../schedules/service.js'
import { actorOf } from './exceptions.js'

const errors = { 400: Type.Ref('ErrorReply'), 404: Type.Ref('ErrorReply'), 409: Type.Ref('ErrorReply') }
const IdParams = Type.Object({ id: Type.String() })

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/api/schedules',
    {
      schema: {
        tags: ['schedules'],
        summary: 'Run a saved recipe on a cron expression, parameters bound to rolling dates',
        body: Type.Ref('ScheduleRequest'),
        response: { 201: Type.Ref('Schedule'), ...errors },
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(await app.schedules.create(request.principal.workspace, request.body as ScheduleInput, actorOf(request))),
  )

  app.get(
    '/api/schedules',
    {
      schema: {
        tags: ['schedules'],
        summary: 'Schedules, oldest first',
        response: { 200: Type.Object({ schedules: Type.Array(Type.Ref('Schedule')) }) },
      },
    },
    async (request) => ({ schedules: await app.schedules.list(request.principal.workspace) }),
  )

  app.get(
    '/api/schedules/:id',
    {
      schema: {
        tags: ['schedules'],
        summary: 'A schedule: its next occurrence and its last run',
        params: IdParams,
        response: { 200: Type.Ref('Schedule'), ...errors },
      },
    },
    async (request) => app.schedules.get(request.principal.workspace, request.params.id),
  )

  app.patch(
    '/api/schedules/:id',
    {
      schema: {
        tags: ['schedules'],
        summary: 'Change a schedule (a new cron, zone or active state moves its next occurrence)',
        params: IdParams,
        body: Type.Ref('SchedulePatch'),
        response: { 200: Type.Ref('Schedule'), ...errors },
      },
    },
    async (request) =>
      app.schedules.update(
        request.principal.workspace,
        request.params.id,
        request.body as SchedulePatch,
        actorOf(request),
      ),
  )

  app.delete(
    '/api/schedules/:id',
    {
      schema: {
        tags: ['schedules'],
        summary: 'Delete a schedule (its runs stay)',
        params: IdParams,
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await app.schedules.remove(request.principal.workspace, request.params.id, actorOf(request))
      return reply.code(204).send(null)
    },
  )

  app.post(
    '/api/schedules/:id/fire',
    {
      schema: {
        tags: ['schedules'],
        summary: 'Run a schedule now, its parameters resolved as of now (its next occurrence stays)',
        params: IdParams,
        response: { 202: Type.Ref('RunView'), ...errors },
      },
    },
    async (request, reply) =>
      reply.code(202).send(await app.schedules.fire(request.principal.workspace, request.params.id, actorOf(request))),
  )
}

export default routes
