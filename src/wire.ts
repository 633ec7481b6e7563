// Building blocks of the wire schemas for "this or null" and "one of these words". Fastify writes
// replies with fast-json-stringify, which writes a union (anyOf) by running a JSON Schema
// validator over each branch for every value: a page of 50 exceptions ran hundreds of
// validations, and they made most of the request's garbage (a sampled allocation profile of the
// list under load). A type list (["string", "null"]) and an enum say the same in JSON Schema and
// OpenAPI 3.1, and are written with a typeof check. TypeBox checks both the same way too.

import { type Static, type TSchema, type TUnsafe, Type } from 'typebox'

/** `t` or null: a type list when `t` has one type, else a union. */
export function Nullable<T extends TSchema>(t: T): TUnsafe<Static<T> | null> {
  const schema = t as TSchema & { type?: unknown; enum?: unknown[]; anyOf?: { const?: unknown }[] }
  if (typeof schema.type === 'string')
    return Type.Unsafe<Static<T> | null>({
      ...schema,
      type: [schema.type, 'null'],
      ...(schema.enum ? { enum: [...schema.enum, null] } : {}),
    })
  const words = literals(schema)
  if (words) {
    const rest: Record<string, unknown> = { ...schema }
    delete rest.anyOf
    return Type.Unsafe<Static<T> | null>({ ...rest, ...oneOf(words, true) })
  }
  return Type.Unsafe<Static<T> | null>(Type.Union([t, Type.Null()]))
}

/** One of these words, as an enum. */
export function OneOf<const W extends readonly string[]>(words: W, options: { description?: string } = {}) {
  return Type.Unsafe<W[number]>({ ...options, ...oneOf(words, false) })
}

function oneOf(words: readonly string[], orNull: boolean) {
  return orNull ? { type: ['string', 'null'], enum: [...words, null] } : { type: 'string', enum: [...words] }
}

/** The words of a union of string literals, else undefined. */
function literals(schema: { anyOf?: { const?: unknown }[] }): string[] | undefined {
  const words = schema.anyOf?.map((s) => s.const)
  return words?.length && words.every((w) => typeof w === 'string') ? (words as string[]) : undefined
}
