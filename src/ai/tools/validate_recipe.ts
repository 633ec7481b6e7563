// validate_recipe: the recipe checked against two schemas, every issue located.

import { type Static, Type } from 'typebox'
import type { Recipe } from '../../recipes/schema.js'
import { structuralIssues, validateRecipe as validate } from '../../recipes/validate.js'
import { FilterConditionSchema } from '../../sources/schemas.js'
import { TableSchema } from '../schemas.js'
import type { AiTool } from '../types.js'

const Input = Type.Object(
  {
    recipe: Type.Object({}, { additionalProperties: true, description: 'a recipe (see the Recipe schema)' }),
    schemas: Type.Object({ left: TableSchema, right: TableSchema }),
  },
  { additionalProperties: false },
)

const output = Type.Object({
  valid: Type.Boolean(),
  issues: Type.Array(
    Type.Object({
      pass: Type.Union([Type.String(), Type.Null()]),
      code: Type.String(),
      message: Type.String(),
      field: Type.Optional(
        Type.String({
          description: 'aggregate.sum, aggregate.equals or aggregate.tolerance: the text position points into',
        }),
      ),
      position: Type.Optional(Type.Object({ start: Type.Integer(), end: Type.Integer() })),
      suggestion: Type.Optional(Type.String()),
    }),
  ),
  suggestions: Type.Array(Type.String()),
})

function report(input: Static<typeof Input>) {
  const structural = structuralIssues(input.recipe, { FilterCondition: FilterConditionSchema })
  if (structural.length) return { valid: false, issues: structural, suggestions: [] }
  const schemas = {
    l: input.schemas.left.map((c) => ({ ...c, nullable: c.nullable ?? true })),
    r: input.schemas.right.map((c) => ({ ...c, nullable: c.nullable ?? true })),
  }
  return validate(input.recipe as unknown as Recipe, schemas)
}

export const validateRecipe: AiTool<typeof Input, typeof output> = {
  name: 'validate_recipe',
  description:
    "Checks a recipe against the two sources' schemas without running it: unknown columns (with the nearest names), type mismatches, unknown functions, syntax errors with their position, passes with no usable join, cycles in `after`, group sums (SUM(...) missing, twice or on the wrong side).",
  input: Input,
  output,
  prompt:
    'You review a reconciliation recipe against the schemas of its two sources. List every issue with its pass (or null), a code (unknown_column, type_mismatch, unknown_function, syntax_error, no_usable_join, pass_cycle), a message and a suggestion; valid is true only when there is none.',
  deterministic: report,
  // the parser and type checker decide validity; a model may add suggestions, not overrule them
  check(out, input) {
    const truth = report(input)
    return out.valid === truth.valid
      ? []
      : [
          `the recipe is ${truth.valid ? 'valid' : `invalid: ${truth.issues.map((i) => i.message).join('; ')}`}, not ${out.valid ? 'valid' : 'invalid'}`,
        ]
  },
}
