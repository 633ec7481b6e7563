// validate_recipe: the recipe checked against two schemas, every issue located; with sample rows
// and confirmed pairs, warnings about rules that cannot be right on them (recipe-warnings.ts).

import { type Static, Type } from 'typebox'
import type { Recipe } from '../../recipes/schema.js'
import { structuralIssues, validateRecipe as validate } from '../../recipes/validate.js'
import { FilterConditionSchema } from '../../sources/schemas.js'
import { RECIPE_WARNING_CODES, recipeWarnings } from '../recipe-warnings.js'
import { PairRef, Row, TableSchema } from '../schemas.js'
import type { AiTool } from '../types.js'

/**
 * Every pass is checked on every pair of sample rows: 250,000 pairs at most, under a second even
 * for a similarity() on each. Previews of 20 to 100 rows are what the warnings are meant for.
 */
const MAX_SAMPLE_ROWS = 500
const SampleRows = Type.Array(Row, { maxItems: MAX_SAMPLE_ROWS })

const Input = Type.Object(
  {
    recipe: Type.Object({}, { additionalProperties: true, description: 'a recipe (see the Recipe schema)' }),
    schemas: Type.Object({ left: TableSchema, right: TableSchema }),
    samples: Type.Optional(
      Type.Object(
        { left: SampleRows, right: SampleRows },
        {
          additionalProperties: false,
          description:
            'rows of each source as previews return them (decimals as strings): the warnings are judged on them',
        },
      ),
    ),
    confirmed_pairs: Type.Optional(
      Type.Array(PairRef, {
        maxItems: MAX_SAMPLE_ROWS,
        description: 'pairs a person confirmed, as row positions in samples.left and samples.right',
      }),
    ),
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
  warnings: Type.Array(
    Type.Object({
      pass: Type.Union([Type.String(), Type.Null()]),
      code: Type.String({ description: RECIPE_WARNING_CODES.join(', ') }),
      message: Type.String(),
      pairs: Type.Optional(Type.Array(PairRef, { description: 'the confirmed pairs concerned' })),
    }),
    {
      description:
        'rules that cannot be right on the samples and confirmed pairs, and what they cannot show; never affects valid',
    },
  ),
})

function report(input: Static<typeof Input>): Static<typeof output> {
  const structural = structuralIssues(input.recipe, { FilterCondition: FilterConditionSchema })
  if (structural.length) return { valid: false, issues: structural, suggestions: [], warnings: [] }
  const recipe = input.recipe as unknown as Recipe
  const schemas = {
    l: input.schemas.left.map((c) => ({ ...c, nullable: c.nullable ?? true })),
    r: input.schemas.right.map((c) => ({ ...c, nullable: c.nullable ?? true })),
  }
  const validation = validate(recipe, schemas)
  const warnings = recipeWarnings({
    recipe,
    schemas: input.schemas,
    samples: input.samples,
    confirmed_pairs: input.confirmed_pairs,
    invalidPasses: new Set(validation.issues.flatMap((i) => (i.pass === null ? [] : [i.pass]))),
  })
  return { ...validation, warnings }
}

export const validateRecipe: AiTool<typeof Input, typeof output> = {
  name: 'validate_recipe',
  description:
    "Checks a recipe against the two sources' schemas without running it: unknown columns (with the nearest names), type mismatches, unknown functions, syntax errors with their position, passes with no usable join, cycles in `after`, group sums (SUM(...) missing, twice or on the wrong side). Given sample rows and confirmed pairs, it also warns about rules that cannot be right on them (a tolerance wider than a typical amount, a 1:1 pass for confirmed groups, a condition that rejects a confirmed pair, a rule admitting far more pairs than records) and says what they cannot show (a pass no confirmed pair supports, a window seen on fewer than 3 pairs); warnings never change valid.",
  input: Input,
  output,
  prompt:
    'You review a reconciliation recipe against the schemas of its two sources. List every issue with its pass (or null), a code (unknown_column, type_mismatch, unknown_function, syntax_error, no_usable_join, pass_cycle), a message and a suggestion; valid is true only when there is none. ' +
    'When samples (rows of each source) and confirmed_pairs (row positions in them) are given, also list warnings, each with its pass (or null), a code and a message naming the rows: ' +
    'tolerance_too_wide (an amount tolerance larger than the median sample amount it compares, or an aggregate tolerance larger than a typical summed record), ' +
    'shape_not_1_1 (a 1:1 pass while confirmed pairs share a record), excludes_confirmed_pair (a conjunct, blocking rule or group sum rejecting a confirmed pair no pass matches; say which), ' +
    'too_many_pairs (a pass admitting more than 3 times the pairs it could match, and more than 10), unsupported_pass (no confirmed pair is one the pass matches), ' +
    'thin_evidence (a window or tolerance seen on fewer than 3 confirmed pairs, or no confirmed pairs at all), no_amount_check (no pass compares amounts), ' +
    'not_judged, invalid_pair, invalid_sample. Warnings never change valid.',
  deterministic: report,
  // the parser and type checker decide validity, the samples the warnings: a model may add
  // suggestions and warnings, not overrule or drop them
  check(out, input) {
    const truth = report(input)
    const problems =
      out.valid === truth.valid
        ? []
        : [
            `the recipe is ${truth.valid ? 'valid' : `invalid: ${truth.issues.map((i) => i.message).join('; ')}`}, not ${out.valid ? 'valid' : 'invalid'}`,
          ]
    const given = new Set(out.warnings.map((w) => `${w.pass}\u0000${w.code}`))
    for (const w of truth.warnings)
      if (!given.has(`${w.pass}\u0000${w.code}`))
        problems.push(`missing warning ${w.code}${w.pass === null ? '' : ` for pass "${w.pass}"`}: ${w.message}`)
    return problems
  },
}
