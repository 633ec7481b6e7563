// infer_rules: the matching rules that explain confirmed pairs.

import { type Static, Type } from 'typebox'
import { Glossary, Mapping, PairRef, Pattern, PrimaryKeys, Rule, Sample, TableSchema } from '../schemas.js'
import { observeAndInfer } from '../inference.js'
import type { Recipe } from '../../recipes/schema.js'
import { buildRecipe } from './build_recipe.js'
import { recipeWarnings } from '../recipe-warnings.js'
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
  questions: Type.Optional(
    Type.Array(
      Type.Object({
        ask: Type.Union([Type.Literal('group'), Type.Literal('more_pairs'), Type.Literal('differing_amounts')]),
        message: Type.String(),
      }),
      { description: 'what the evidence left unsure, and the confirmed pair (or group) that would settle it' },
    ),
  ),
})

type InferInput = Static<typeof input>

/** The warnings that say a rule cannot be right on the confirmed pairs. */
const IMPOSSIBLE = new Set(['shape_not_1_1', 'excludes_confirmed_pair', 'tolerance_too_wide'])

/**
 * The deterministic inference of an input, kept per input object: the service asks for the
 * answer, then checks it, and the Claude path asks for the evidence, then checks each attempt —
 * one inference serves them all. (Inputs are not changed after a call: the service clones each
 * request's input.)
 */
const inferred = new WeakMap<InferInput, ReturnType<typeof observeAndInfer>>()
function inferenceOf(given: InferInput): ReturnType<typeof observeAndInfer> {
  let found = inferred.get(given)
  if (!found) inferred.set(given, (found = observeAndInfer(given)))
  return found
}

/** validate_recipe's warnings for an answer's rules, assembled as build_recipe would, on the tool's samples and pairs. */
function rulesWarnings(answer: Static<typeof output>, given: InferInput) {
  const { recipe } = buildRecipe.deterministic({
    rules: answer.rules,
    sources: { left: 'a', right: 'b' },
    primary_keys: answer.primary_keys,
    pattern: answer.pattern,
  })
  return recipeWarnings({
    recipe: recipe as unknown as Recipe,
    schemas: { left: given.schema_a, right: given.schema_b },
    samples: { left: given.sample_a, right: given.sample_b },
    confirmed_pairs: given.confirmed_pairs,
    invalidPasses: new Set(),
  })
}

export const inferRules: AiTool<typeof input, typeof output> = {
  name: 'infer_rules',
  description:
    'Infers matching rules from the mappings and the pairs a person confirmed: which columns are equal (after normalization), the largest amount difference, the date lag range, sums for 1:N. Returns the record keys, the pattern and the rules as recipe predicates, strictest first.',
  input,
  output,
  prompt:
    'You infer reconciliation rules from confirmed pairs of records, as an expert would. The shape: pairs sharing a left record are 1:N groups, pairs sharing a right record N:1 (an aggregate rule: sum = "SUM(<many side>.<column>)" with constants for a fee, equals the other side\'s amount, a tolerance and max_group). Amounts: equal, a fixed offset, a percentage (with or without a fixed part) or only close; which column (net or gross) sums to the other side; state a fee as an equation, never as a wide tolerance. Dates: a lag window with a margin. Keys: exact keys first, then each further key its own rule for records whose earlier keys are blank ("(l.k IS NULL OR r.k IS NULL)"). Free text that names the party with no shared key: a probabilistic rule (sql "", block: ["shares_token(l.x, r.y)", an amount band AND a date window], compare: text token_set levels, relative amount levels, lag levels; train.confirmed: the confirmed pairs\' keys). Write each other rule as a predicate over l. (a) and r. (b) columns, strictest first, each with a name, a description and a confidence. Give the columns that identify a record on each side as primary_keys. Use the measurements given with the input; list in questions what they leave unsure and the pair that would settle it.',
  deterministic: (given) => inferenceOf(given).inference,
  evidence(given) {
    const { inference, observations } = inferenceOf(given)
    return { observations, questions: inference.questions }
  },
  // the recipe validator decides: every rule must parse, type-check and have a usable join; and
  // on the confirmed pairs, no rule may be one validate_recipe calls impossible (a 1:1 rule for
  // groups, a condition that excludes a confirmed pair, a tolerance past a typical amount) unless
  // the deterministic answer, from the same evidence, is warned about the same
  check(out, input) {
    const problems = out.rules.flatMap((rule) =>
      ruleIssues(rule, input.schema_a, input.schema_b).map((m) => `rule ${rule.name}: ${m}`),
    )
    // the warnings run every rule over the sample pairs: past validate_recipe's 500 rows a side, not judged
    if (
      problems.length ||
      !input.confirmed_pairs?.length ||
      Math.max(input.sample_a.length, input.sample_b.length) > 500
    )
      return problems
    // the deterministic answer itself is not held against itself
    const deterministic = inferenceOf(input).inference
    if (out === deterministic) return problems
    const impossible = (answer: Static<typeof output>) =>
      rulesWarnings(answer, input).filter((w) => IMPOSSIBLE.has(w.code))
    const ours = new Set(impossible(deterministic).map((w) => w.code))
    return impossible(out)
      .filter((w) => !ours.has(w.code))
      .map((w) => `${w.pass === null ? '' : `rule ${w.pass}: `}${w.message}`)
  },
}
