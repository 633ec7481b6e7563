// /api/keys and /api/workspaces: API keys (admin) and workspaces (the bootstrap key).

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { attributionOf } from '../audit/service.js'
import { ConcordError } from '../errors.js'

const Role = Type.Union([Type.Literal('viewer'), Type.Literal('operator'), Type.Literal('admin')])
const KeyView = Type.Object({
  id: Type.String(),
  workspace: Type.String(),
  name: Type.String(),
  role: Role,
  prefix: Type.String({ description: 'the first characters of the key, to recognise it' }),
  created_at: Type.String(),
  last_used_at: Type.Union([Type.String(), Type.Null()]),
  revoked_at: Type.Union([Type.String(), Type.Null()]),
})
const errors = {
  400: Type.Ref('ErrorReply'),
  403: Type.Ref('ErrorReply'),
  404: Type.Ref('ErrorReply'),
  409: Type.Ref('ErrorReply'),
}

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/api/keys',
    {
      schema: {
        tags: ['access'],
        summary: "The keys of the caller's workspace (never their secrets)",
        response: { 200: Type.Object({ keys: Type.Array(KeyView) }), ...errors },
      },
      config: { role: 'admin' },
    },
    async (request) => ({ keys: await app.keys.list(request.principal.workspace) }),
  )

  app.post(
    '/api/keys',
    {
      schema: {
        tags: ['access'],
        summary: 'A new key; its secret is in this reply only',
        body: Type.Object(
          {
            name: Type.String({ minLength: 1, maxLength: 100 }),
            role: Role,
            workspace: Type.Optional(Type.String({ description: 'another workspace: the bootstrap key only' })),
          },
          { additionalProperties: false },
        ),
        response: { 201: Type.Intersect([KeyView, Type.Object({ key: Type.String() })]), ...errors },
      },
      config: { role: 'admin' },
    },
    async (request, reply) => {
      const { name, role, workspace = request.principal.workspace } = request.body
      if (workspace !== request.principal.workspace && !request.principal.root)
        throw new ConcordError('forbidden', 'keys for another workspace need the bootstrap key', 403)
      return reply.code(201).send(await app.keys.create(workspace, name, role, attributionOf(request)))
    },
  )

  app.delete(
    '/api/keys/:id',
    {
      schema: {
        tags: ['access'],
        summary: 'Revoke a key (it stops working at once)',
        params: Type.Object({ id: Type.String() }),
        response: { 200: KeyView, ...errors },
      },
      config: { role: 'admin' },
    },
    async (request) => app.keys.revoke(request.principal.workspace, request.params.id, attributionOf(request)),
  )

  app.post(
    '/api/workspaces',
    {
      schema: {
        tags: ['access'],
        summary: 'A new workspace with its first admin key (the bootstrap key only)',
        body: Type.Object({ name: Type.String() }, { additionalProperties: false }),
        response: {
          201: Type.Object({
            workspace: Type.Object({ id: Type.String(), name: Type.String() }),
            admin_key: Type.String(),
          }),
          ...errors,
        },
      },
      config: { role: 'admin' },
    },
    async (request, reply) => {
      if (!request.principal.root) throw new ConcordError('forbidden', 'only the bootstrap key creates workspaces', 403)
      const workspace = await app.keys.createWorkspace(request.body.name, attributionOf(request))
      const key = await app.keys.create(workspace.id, 'admin', 'admin', attributionOf(request))
      return reply.code(201).send({ workspace, admin_key: key.key })
    },
  )
}

export default routes
