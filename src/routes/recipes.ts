// /api/recipes: thin routes over the recipes service.

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { attributionOf } from '../audit/service.js'

const errors = { 400: Type.Ref('ErrorReply'), 404: Type.Ref('ErrorReply') }
const IdParams = Type.Object({ id: Type.String() })
const AnyRecipe = Type.Object(
  {},
  {
    additionalProperties: true,
    description: 'a recipe (see the Recipe schema); structural problems are reported as issues',
  },
)

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/api/recipes',
    {
      schema: {
        tags: ['recipes'],
        summary: 'Save a new recipe (version 1), after validating it against the registered sources',
        body: Type.Ref('Recipe'),
        response: { 201: Type.Ref('RecipeView'), ...errors },
      },
    },
    async (request, reply) =>
      reply.code(201).send(await app.recipes.create(request.principal.workspace, request.body, attributionOf(request))),
  )

  app.put(
    '/api/recipes/:id',
    {
      schema: {
        tags: ['recipes'],
        summary: 'Save a new version of a recipe; earlier versions stay readable',
        params: IdParams,
        body: Type.Ref('Recipe'),
        response: { 200: Type.Ref('RecipeView'), ...errors },
      },
    },
    async (request) =>
      app.recipes.update(request.principal.workspace, request.params.id, request.body, attributionOf(request)),
  )

  app.get(
    '/api/recipes',
    { schema: { tags: ['recipes'], summary: 'List recipes', response: { 200: Type.Ref('RecipeList') } } },
    async (request) => ({ recipes: await app.recipes.list(request.principal.workspace) }),
  )

  app.get(
    '/api/recipes/:id',
    {
      schema: {
        tags: ['recipes'],
        summary: 'A recipe: its latest version, or the one asked for',
        params: IdParams,
        querystring: Type.Object({ version: Type.Optional(Type.Integer({ minimum: 1 })) }),
        response: { 200: Type.Ref('RecipeView'), ...errors },
      },
    },
    async (request) => app.recipes.get(request.principal.workspace, request.params.id, request.query.version),
  )

  app.delete(
    '/api/recipes/:id',
    {
      schema: {
        tags: ['recipes'],
        summary: 'Delete a recipe and all its versions',
        params: IdParams,
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await app.recipes.remove(request.principal.workspace, request.params.id, attributionOf(request))
      return reply.code(204).send(null)
    },
  )

  app.post(
    '/api/recipes/validate',
    {
      schema: {
        tags: ['recipes'],
        summary: 'Check a recipe without saving it: every issue, with its pass, code and position',
        body: AnyRecipe,
        response: { 200: Type.Ref('ValidationReport') },
      },
      config: { role: 'viewer' },
    },
    async (request) => app.recipes.validate(request.principal.workspace, request.body),
  )

  app.post(
    '/api/recipes/explain',
    {
      schema: {
        tags: ['recipes'],
        summary:
          'How each pass will run: hash keys or band, residual predicates, phase in the pass DAG; for probabilistic passes the blocking rules, comparison levels and weights',
        body: AnyRecipe,
        querystring: Type.Object({
          run_id: Type.Optional(
            Type.String({ description: "show the weights this run's probabilistic passes learned (by pass name)" }),
          ),
        }),
        response: { 200: Type.Ref('ExplainReply'), ...errors },
      },
      config: { role: 'viewer' },
    },
    async (request) => {
      const ws = request.principal.workspace
      const { run_id } = request.query as { run_id?: string }
      const models = run_id === undefined ? {} : await app.runs.learnedModels(ws, run_id)
      return app.recipes.explain(ws, request.body, models)
    },
  )
}

export default routes
