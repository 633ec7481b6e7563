// infer_rules: the matching rules that explain confirmed pairs.

import { Type } from 'typebox'
import { Glossary, Mapping, PairRef, Pattern, PrimaryKeys, Rule, Sample, TableSchema } from '../schemas.js'
import { infer } from '../inference.js'
import { ruleIssues } from '../rules.js'
import type { AiTool } from '../types.js'

const input = Type.Object(
  {
    schema_a: TableSchema,
    schema_b: TableSchema,
    sample_a: Sample,
    sample_b: Sample,
    mappings: Type.Array(Mapping),
    confirmed_pairs: Type.Optional(Type.Array(PairRef, { description: 'pairs a person confirmed, as row positions' })),
    glossary: Type.Optional(Glossary),
  },
  { additionalProperties: false },
)

const output = Type.Object({
  pattern: Pattern,
  primary_keys: PrimaryKeys,
  rules: Type.Array(Rule, { description: 'in the order the passes should run: strictest first' }),
})

export const inferRules: AiTool<typeof input, typeof output> = {
  name: 'infer_rules',
  description:
    'Infers matching rules from the mappings and the pairs a person confirmed: which columns are equal (after normalization), the largest amount difference, the date lag range, sums for 1:N. Returns the record keys, the pattern and the rules as recipe predicates, strictest first.',
  input,
  output,
  prompt:
    'You infer reconciliation rules from confirmed pairs of records. Look at which mapped columns are equal (exactly, or after trimming and case folding), how far amounts differ, and how many days separate the dates. Write each rule as a predicate over l. (a) and r. (b) columns, strictest rule first, each with a name, a description and a confidence. Give the columns that identify a record on each side as primary_keys.',
  deterministic: infer,
  // the recipe validator decides: every rule must parse, type-check and have a usable join
  check(out, input) {
    return out.rules.flatMap((rule) =>
      ruleIssues(rule, input.schema_a, input.schema_b).map((m) => `rule ${rule.name}: ${m}`),
    )
  },
}
