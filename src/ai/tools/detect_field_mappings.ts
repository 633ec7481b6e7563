// detect_field_mappings: which column of source a corresponds to which column of source b.

import { Type } from 'typebox'
import { Glossary, Mapping, Sample, TableSchema } from '../schemas.js'
import type { AiTool } from '../types.js'

const input = Type.Object(
  {
    schema_a: TableSchema,
    schema_b: TableSchema,
    sample_a: Type.Optional(Sample),
    sample_b: Type.Optional(Sample),
    glossary: Type.Optional(Glossary),
  },
  { additionalProperties: false },
)

const output = Type.Object({
  mappings: Type.Array(Mapping, { description: 'best first; each column of a and of b in at most one mapping' }),
  suggested_filters: Type.Array(
    Type.Object({
      source: Type.Union([Type.Literal('a'), Type.Literal('b')]),
      column: Type.String(),
      op: Type.String(),
      value: Type.Unknown(),
      reason: Type.String(),
    }),
  ),
})

export const detectFieldMappings: AiTool<typeof input, typeof output> = {
  name: 'detect_field_mappings',
  description:
    'Which columns of source a correspond to which columns of source b (ids, references, amounts, dates, names), with a confidence and a reason each, and filters worth suggesting for a first scope.',
  input,
  output,
  prompt:
    'You map the columns of two financial record sources onto each other. Use column names, types and the sample values. A column maps to at most one column of the other side. Give a confidence in 0..1 and a short reason per mapping, best first. Suggest filters only when the samples show an obvious first scope.',
  deterministic() {
    throw new Error('not implemented yet')
  },
}
