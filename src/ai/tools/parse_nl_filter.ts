// parse_nl_filter: a request in words ("only January 2026 sales") as filter conditions per source.

import { Type } from 'typebox'
import { Filter, Glossary, Mapping, TableSchema } from '../schemas.js'
import type { AiTool } from '../types.js'

const input = Type.Object(
  {
    text: Type.String({ minLength: 1 }),
    schema_a: TableSchema,
    schema_b: TableSchema,
    current_mappings: Type.Optional(Type.Array(Mapping)),
    today: Type.Optional(Type.String({ description: 'YYYY-MM-DD, for "last month" and the like (default: today)' })),
    glossary: Type.Optional(Glossary),
  },
  { additionalProperties: false },
)

const output = Type.Object({
  filters: Type.Array(Filter, { description: 'conditions load-scoped takes, per source' }),
  explanation: Type.String(),
  unparsed: Type.Optional(Type.Array(Type.String(), { description: 'words the tool could not turn into a filter' })),
})

export const parseNlFilter: AiTool<typeof input, typeof output> = {
  name: 'parse_nl_filter',
  description:
    'Turns a scope request in words ("only January 2026 sales", "amounts above 500", "last month") into filter conditions for each source, saying plainly what it could not parse.',
  input,
  output,
  prompt:
    'You turn a request in words into filter conditions on two sources. Each filter names its source (a or b), one of its columns, an operator (eq, neq, gt, gte, lt, lte, between, in, like) and a value: dates as YYYY-MM-DD, between as [from, to] inclusive. Apply a period to the date column of each source. Put words you cannot turn into a condition in "unparsed".',
  deterministic() {
    throw new Error('not implemented yet')
  },
}
