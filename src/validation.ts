// Request validation with TypeBox (not Ajv): Ajv's type coercion would quietly turn a number in
// a filter value into a string, and its removeAdditional would drop unknown fields instead of
// refusing them. Bodies are checked as sent; querystrings and params are converted (limit=5 → 5).
// Shared schemas (those with an $id) are resolved by name through a compile context.

import type { FastifySchemaCompiler } from 'fastify'
import type { TProperties, TSchema } from 'typebox'
import { Compile } from 'typebox/compile'
import { Value } from 'typebox/value'

export function typeboxValidator(shared: TSchema[]): FastifySchemaCompiler<TSchema> {
  const context: TProperties = {}
  for (const s of shared) context[(s as { $id: string }).$id] = s
  return ({ schema, httpPart }) => {
    const check = Compile(context, schema)
    return (value: unknown) => {
      const input = httpPart === 'body' ? value : Value.Convert(context, schema, value)
      const withDefaults = Value.Default(context, schema, input)
      if (check.Check(withDefaults)) return { value: withDefaults }
      return {
        error: check.Errors(withDefaults).map((e) => ({
          keyword: e.keyword,
          instancePath: e.instancePath,
          schemaPath: e.schemaPath,
          params: e.params as Record<string, unknown>,
          message: e.message,
        })),
      }
    }
  }
}
