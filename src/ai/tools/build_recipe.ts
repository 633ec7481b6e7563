// build_recipe: rules and keys assembled into a recipe the engine accepts.

import { type Static, Type } from 'typebox'
import { FilterConditionSchema } from '../../sources/schemas.js'
import { type Pattern as RecipePattern, type Recipe, recipeSchemas } from '../../recipes/schema.js'
import { structuralIssues } from '../../recipes/validate.js'
import { parsePredicate, PredicateError } from '../../language/predicate.js'
import { passOf } from '../rules.js'
import { Filter, Pattern, PrimaryKeys, Rule } from '../schemas.js'
import type { AiTool } from '../types.js'

const Input = Type.Object(
  {
    rules: Type.Array(Rule, { minItems: 1 }),
    sources: Type.Object({ left: Type.String(), right: Type.String() }),
    primary_keys: PrimaryKeys,
    pattern: Pattern,
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    scope: Type.Optional(
      Type.Array(Filter, { description: "filters (from parse_nl_filter) that become the sides' scopes" }),
    ),
  },
  { additionalProperties: false },
)

const output = Type.Object({
  recipe: Type.Object({}, { additionalProperties: true, description: 'a recipe (see the Recipe schema)' }),
  explanation: Type.String(),
})

const passName = (name: string, n: number) => {
  const clean = name.replace(/[^A-Za-z0-9_-]+/g, '_').replace(/^[^A-Za-z]+/, '')
  return (clean || `pass_${n + 1}`).slice(0, 63)
}

function assemble(input: Static<typeof Input>): { recipe: Recipe; explanation: string } {
  const names = new Set<string>()
  const passes = input.rules.map((rule, n) => {
    let name = passName(rule.name, n)
    while (names.has(name)) name = `${name}_${n + 1}`
    names.add(name)
    const pattern = (rule.pattern ?? (rule.aggregate ? input.pattern : '1:1')) as RecipePattern
    const { aggregate, ...rest } = passOf(rule)
    return { name, pattern, ...rest, ...(aggregate && pattern !== '1:1' ? { aggregate } : {}) }
  })
  const scope = (side: 'a' | 'b') =>
    (input.scope ?? []).filter((f) => f.source === side).map(({ column, op, value }) => ({ column, op, value }))
  const recipe: Recipe = {
    name: input.name ?? `${input.sources.left}-vs-${input.sources.right}`,
    left: { source: input.sources.left, key: input.primary_keys.left, scope: scope('a') },
    right: { source: input.sources.right, key: input.primary_keys.right, scope: scope('b') },
    passes,
  }
  const explanation = [
    `Matches ${input.sources.left} (left, keyed by ${input.primary_keys.left.join(', ')}) with ${input.sources.right} (right, keyed by ${input.primary_keys.right.join(', ')}) in ${passes.length} pass${passes.length === 1 ? '' : 'es'}, each on what the earlier ones left:`,
    ...passes.map((p, n) => `${n + 1}. ${p.name} (${p.pattern}): ${input.rules[n].description}`),
  ].join('\n')
  return { recipe, explanation }
}

export const buildRecipe: AiTool<typeof Input, typeof output> = {
  name: 'build_recipe',
  description:
    "Assembles rules, record keys and a pattern into a recipe the engine accepts (passes in the rules' order, scopes from filters), with an explanation in words.",
  input: Input,
  output,
  prompt:
    "You assemble a reconciliation recipe: { name, left: { source, key, scope }, right: { source, key, scope }, passes: [{ name, pattern, when, aggregate? }] }. Keep the rules in order as passes; a pass name is letters, digits, _ or -; when is the rule's predicate unchanged; aggregate only for 1:N, N:1 and N:M passes. A probabilistic rule (with block and compare) becomes a pass with block, compare, threshold and train as given, and when only if its sql is not empty. Explain the recipe in a few sentences.",
  deterministic: assemble,
  check(out) {
    const problems = structuralIssues(out.recipe, {
      FilterCondition: FilterConditionSchema,
      ...Object.fromEntries(recipeSchemas.map((s) => [(s as unknown as { $id: string }).$id, s])),
    }).map((i) => i.message)
    if (problems.length) return problems
    for (const pass of (out.recipe as unknown as Recipe).passes) {
      try {
        if (pass.when !== undefined) parsePredicate(pass.when)
        for (const rule of pass.block ?? []) parsePredicate(rule)
      } catch (err) {
        problems.push(`pass ${pass.name}: ${err instanceof PredicateError ? err.message : String(err)}`)
      }
    }
    return problems
  },
}
