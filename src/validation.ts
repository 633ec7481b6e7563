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
          params:
            e.keyword === 'const'
              ? { ...(e.params as Record<string, unknown>), allowedValues: literalsAt(context, schema, e.instancePath) }
              : (e.params as Record<string, unknown>),
          message: e.message,
        })),
      }
    }
  }
}

type Node = TSchema & {
  $ref?: string
  anyOf?: Node[]
  properties?: Record<string, Node>
  items?: Node
  const?: unknown
}

/**
 * Every literal a value at `path` may take when the schema there is a union of literals (an
 * operator, a pattern, an export format), else undefined. TypeBox reports at most eight errors,
 * so the failed literals alone could leave some out; the schema says them all.
 */
function literalsAt(context: TProperties, schema: TSchema, path: string): string[] | undefined {
  let nodes: Node[] = [schema as Node]
  for (const segment of path.split('/').slice(1)) {
    const next: Node[] = []
    const visit = (n: Node | undefined): void => {
      if (!n) return
      if (n.$ref) return visit(context[n.$ref] as Node | undefined)
      if (n.anyOf) return n.anyOf.forEach(visit)
      if (n.properties?.[segment]) next.push(n.properties[segment])
      else if (n.items && /^\d+$/.test(segment)) next.push(n.items)
    }
    nodes.forEach(visit)
    nodes = next
  }
  const literals: string[] = []
  const collect = (n: Node | undefined): boolean => {
    if (!n) return false
    if (n.$ref) return collect(context[n.$ref] as Node | undefined)
    if (n.anyOf) return n.anyOf.every(collect)
    if (n.const === undefined) return false
    literals.push(String(n.const))
    return true
  }
  return nodes.length && nodes.every(collect) ? [...new Set(literals)] : undefined
}

/**
 * Where the first NUL character (U+0000) in a request part is, as a path (`body.conditions[0].value`),
 * or undefined. PostgreSQL text cannot hold one and rejects it with an encoding error that says
 * nothing about the request, and no column name, value or predicate in Concord needs one, so a
 * request carrying one is refused up front. Iterative: a deeply nested body cannot overflow the stack.
 */
export function findNul(value: unknown, root: string): string | undefined {
  const stack: [unknown, string][] = [[value, root]]
  while (stack.length) {
    const [v, path] = stack.pop()!
    if (typeof v === 'string') {
      if (v.includes('\u0000')) return path
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${path}[${i}]`])
    } else if (v && typeof v === 'object') {
      for (const [k, inner] of Object.entries(v)) {
        if (k.includes('\u0000')) return `${path} (a key)`
        stack.push([inner, `${path}.${k}`])
      }
    }
  }
  return undefined
}
