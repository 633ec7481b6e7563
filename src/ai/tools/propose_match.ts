// propose_match: likely pairs among sample rows, for a person to confirm or reject.

import { Type } from 'typebox'
import { Mapping, Sample, TableSchema } from '../schemas.js'
import { chooseLinks } from '../links.js'
import { chooseGreedily, scorePairs } from '../pairs.js'
import type { AiTool } from '../types.js'

const input = Type.Object(
  {
    rows_a: Sample,
    rows_b: Sample,
    schemas: Type.Object({ a: TableSchema, b: TableSchema }),
    mappings: Type.Optional(Type.Array(Mapping)),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10 })),
  },
  { additionalProperties: false },
)

const output = Type.Object({
  proposals: Type.Array(
    Type.Object({
      left: Type.Integer({ minimum: 0, description: 'position in rows_a' }),
      right: Type.Integer({ minimum: 0, description: 'position in rows_b' }),
      confidence: Type.Number({ minimum: 0, maximum: 1 }),
      reason: Type.String(),
    }),
    { description: 'best first; a row in at most one proposal' },
  ),
})

export const proposeMatch: AiTool<typeof input, typeof output> = {
  name: 'propose_match',
  description:
    'Proposes likely matching pairs among sample rows of the two sources (equal references, close amounts and dates), best first, for a person to confirm or reject.',
  input,
  output,
  prompt:
    'You propose pairs of records that are the same transaction seen from two sources. left and right are row positions in rows_a and rows_b. Each row in at most one proposal, best first, with a confidence in 0..1 and the evidence in the reason (equal reference, amount difference, days apart).',
  deterministic(input) {
    const samples = { schemaA: input.schemas.a, schemaB: input.schemas.b, rowsA: input.rows_a, rowsB: input.rows_b }
    const links = chooseLinks(samples, input.mappings)
    return { proposals: chooseGreedily(scorePairs(samples, links), input.limit ?? 10) }
  },
  check(out, input) {
    const problems: string[] = []
    const left = new Set<number>()
    const right = new Set<number>()
    for (const p of out.proposals) {
      if (p.left >= input.rows_a.length) problems.push(`left ${p.left} is not a row of rows_a`)
      if (p.right >= input.rows_b.length) problems.push(`right ${p.right} is not a row of rows_b`)
      if (left.has(p.left)) problems.push(`row ${p.left} of rows_a is in more than one proposal`)
      if (right.has(p.right)) problems.push(`row ${p.right} of rows_b is in more than one proposal`)
      left.add(p.left)
      right.add(p.right)
    }
    return problems
  },
}
