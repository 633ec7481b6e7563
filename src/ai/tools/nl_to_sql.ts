// nl_to_sql: a matching rule in words as a predicate of the recipe language.

import { Type } from 'typebox'
import { parsePredicate, PredicateError } from '../../recipes/predicate.js'
import { Glossary, Mapping, TableSchema } from '../schemas.js'
import type { AiTool } from '../types.js'

const input = Type.Object(
  {
    text: Type.String({ minLength: 1 }),
    schema_a: TableSchema,
    schema_b: TableSchema,
    mappings: Type.Optional(Type.Array(Mapping)),
    glossary: Type.Optional(Glossary),
  },
  { additionalProperties: false },
)

const output = Type.Object({
  sql: Type.String({ description: 'a predicate over l. (source a) and r. (source b) columns' }),
  explanation: Type.String(),
})

export const nlToSql: AiTool<typeof input, typeof output> = {
  name: 'nl_to_sql',
  description:
    'Turns a matching rule in words ("within 7 days", "amount within 1%", "same reference ignoring case") into a predicate of the recipe language over l. and r. columns.',
  input,
  output,
  prompt:
    "You write one boolean predicate in PostgreSQL syntax over two records: l (source a) and r (source b), e.g. UPPER(TRIM(l.reference)) = UPPER(TRIM(r.ref)) AND ABS(l.amount - r.total) <= 0.01 AND r.day BETWEEN l.day - INTERVAL '3 days' AND l.day. Only l. and r. columns that exist; functions: ABS ROUND LOWER UPPER TRIM SUBSTRING REPLACE COALESCE DATE_TRUNC.",
  deterministic() {
    throw new Error('not implemented yet')
  },
  check(out) {
    try {
      parsePredicate(out.sql)
      return []
    } catch (err) {
      return [err instanceof PredicateError ? err.message : String(err)]
    }
  },
}
