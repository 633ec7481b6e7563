// A recipe's lookup tables ("lookups"), as validation and explain see them: each declared name
// with its source's columns, the problems of a declaration, and which lookups an expression reads.
// The engine's side (loading whole, indexing once per run) is src/engine/data/lookup.ts.

import type { ColumnInfo } from '../engine/data/types.js'
import type { Expr } from '../language/predicate.js'
import type { LookupSchema, Schemas } from '../language/types.js'
import { nearestNames } from '../language/similarity.js'
import type { Recipe } from './schema.js'

export interface LookupIssue {
  code: string
  message: string
  suggestion?: string
}

/** Every declared lookup with its source's columns (undefined where `columnsOf` knows no such source). */
export function lookupSchemas(
  recipe: Recipe,
  columnsOf: (source: string) => ColumnInfo[] | undefined,
): Record<string, LookupSchema> {
  const out: Record<string, LookupSchema> = {}
  for (const [name, def] of Object.entries(recipe.lookups ?? {})) {
    const columns = columnsOf(def.source)
    out[name] = { ...def, ...(columns ? { columns } : {}) }
  }
  return out
}

/** Problems of the declarations themselves: key and as_of columns that are not there or do not fit. */
export function lookupIssues(recipe: Recipe, schemas: Schemas): LookupIssue[] {
  const issues: LookupIssue[] = []
  for (const [name, def] of Object.entries(recipe.lookups ?? {})) {
    const columns = schemas.lookups?.[name]?.columns
    if (!columns) continue // an unknown source is reported where the sources are resolved
    const missing = (column: string, role: string) => {
      const near = nearestNames(
        column,
        columns.map((c) => c.name),
      )
      issues.push({
        code: 'unknown_column',
        message: `lookup "${name}": ${role} column "${column}" is not in source "${def.source}"`,
        suggestion: near.length ? `did you mean ${near.map((n) => `"${n}"`).join(', ')}?` : undefined,
      })
    }
    const seen = new Set<string>()
    for (const k of def.key) {
      if (seen.has(k))
        issues.push({ code: 'invalid_lookup', message: `lookup "${name}": key column "${k}" is named twice` })
      seen.add(k)
      if (!columns.some((c) => c.name === k)) missing(k, 'key')
    }
    if (def.as_of === undefined) continue
    const asOf = columns.find((c) => c.name === def.as_of)
    if (!asOf) missing(def.as_of, 'as_of')
    else if (asOf.type !== 'date' && asOf.type !== 'timestamp')
      issues.push({
        code: 'type_mismatch',
        message: `lookup "${name}": as_of column "${def.as_of}" is ${asOf.type}, not a date or timestamp`,
        suggestion: 'as_of names the date from which each row holds, e.g. "rate_date"',
      })
    if (seen.has(def.as_of))
      issues.push({
        code: 'invalid_lookup',
        message: `lookup "${name}": "${def.as_of}" is both a key column and the as_of column`,
        suggestion: 'the key says which rows belong together; as_of picks the latest of them',
      })
  }
  return issues.map((i) => (i.suggestion === undefined ? { code: i.code, message: i.message } : i))
}

/** The names of the lookups an expression reads, in the order first called. */
export function lookupsIn(e: Expr, out: string[] = []): string[] {
  if (e.kind === 'call' && e.name === 'lookup' && e.args[0]?.kind === 'string' && !out.includes(e.args[0].value))
    out.push(e.args[0].value)
  for (const v of Object.values(e)) {
    if (!v || typeof v !== 'object') continue
    for (const x of Array.isArray(v) ? v : [v])
      if (x && typeof x === 'object' && 'kind' in x && 'pos' in x) lookupsIn(x as Expr, out)
  }
  return out
}
