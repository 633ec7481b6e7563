// Reply serializers compiled with only the shared schemas a route's reply refers to. Fastify gives
// fast-json-stringify every shared schema (app.addSchema) for every route's reply, and it checks
// each against the JSON Schema meta-schema and indexes it once per route: with the API's ~60
// shared schemas and ~100 routes, that was about 2 s of every start (a CPU profile of
// `concord serve`), the larger part of the time to /ready on an existing data folder.

import fastJsonStringify, { type Options, type Schema } from 'fast-json-stringify'

type Schemas = Record<string, Schema>

/** Fastify's `schemaController.compilersFactory.buildSerializer`. */
export function buildSerializer(externalSchemas?: unknown, serializerOpts?: Options) {
  const shared = (externalSchemas ?? {}) as Schemas
  return ({ schema = {} }: { schema?: unknown }): ((doc: unknown) => string) => {
    const used: Schemas = {}
    referred(schema, shared, used)
    // as Fastify's own compiler: a reply schema that is itself a shared one is not also external
    const id = (schema as { $id?: unknown }).$id
    if (typeof id === 'string') delete used[id]
    return fastJsonStringify(schema as Schema, { ...serializerOpts, schema: used })
  }
}

/** The shared schemas `node` refers to ($ref "Name" or "Name#/…"), and those they refer to. */
function referred(node: unknown, shared: Schemas, used: Schemas): void {
  if (Array.isArray(node)) for (const item of node) referred(item, shared, used)
  else if (node !== null && typeof node === 'object')
    for (const [key, value] of Object.entries(node)) {
      if (key !== '$ref' || typeof value !== 'string') {
        referred(value, shared, used)
        continue
      }
      const id = value.split('#')[0]
      if (id && !(id in used) && id in shared) {
        used[id] = shared[id]
        referred(shared[id], shared, used)
      }
    }
}
