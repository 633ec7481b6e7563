// Recipe validation, without running it: structure, the pass graph, and every pass's predicate
// against the two sources' schemas. Returns every issue found (not only the first), each with
// the pass, a code, a message and, for predicate problems, the position in `when`.

import { Value } from 'typebox/value'
import { type FilterWarning, filterWarnings, resolveConditions } from '../engine/load/filter.js'
import { orderPasses, PassGraphError } from '../engine/plan/passes.js'
import { type PassPlan, planPass } from '../engine/plan/plan.js'
import { type ComparedColumns, scoredPairs } from '../engine/match/pass.js'
import { preferenceProblem } from '../engine/match/prefer.js'
import { comparedColumns } from '../engine/reconcile.js'
import { nearestNames } from '../language/similarity.js'
import { ConcordError } from '../errors.js'
import { lookupIssues } from './lookups.js'
import { paramIssues } from './params.js'
import type { AggregateField } from '../language/aggregate.js'
import { aggregateIssues } from '../language/aggregate-check.js'
import { type Position, PredicateError, parsePredicate } from '../language/predicate.js'
import { isProbabilistic, PREFERENCES, type Recipe, type RecipePass, recipeSchemas } from './schema.js'
import { blockingJoin } from '../engine/match/probabilistic/blocking.js'
import { comparisonIssues, comparisonLabels } from '../engine/match/probabilistic/comparisons.js'
import { type Schemas, TypeChecker } from '../language/types.js'

export interface ValidationIssue {
  pass: string | null
  code: string
  message: string
  /** The text `position` points into: the pass's `when` unless said otherwise. */
  field?: AggregateField
  position?: Position
  suggestion?: string
}

export interface ValidationReport {
  valid: boolean
  issues: ValidationIssue[]
  suggestions: string[]
  /** What holds but may not be meant (a bare date bounding a timestamp in a scope); never changes valid. */
  warnings: ScopeWarning[]
}

export type ScopeWarning = FilterWarning & { side: 'left' | 'right' }

const context = Object.fromEntries(recipeSchemas.map((s) => [(s as unknown as { $id: string }).$id, s]))

/** Structural check (the TypeBox schema); the FilterCondition schema is resolved by the caller's context. */
export function structuralIssues(recipe: unknown, extraContext: Record<string, unknown> = {}): ValidationIssue[] {
  const ctx = { ...extraContext, ...context } as never
  if (Value.Check(ctx, context.Recipe as never, recipe)) return []
  // an unknown `prefer` is named with the values it may take (the schema's own words for a
  // union of literals say only "must be equal to constant")
  const prefer = preferIssues(recipe)
  return [
    ...prefer,
    ...[...Value.Errors(ctx, context.Recipe as never, recipe)]
      .filter((e) => !(prefer.length && /^\/passes\/\d+\/prefer$/.test(e.instancePath)))
      .slice(0, 10)
      .map((e) => ({ pass: null, code: 'invalid_recipe', message: `${e.instancePath || 'recipe'} ${e.message}` })),
  ]
}

function preferIssues(recipe: unknown): ValidationIssue[] {
  const passes = (recipe as { passes?: unknown } | null)?.passes
  if (!Array.isArray(passes)) return []
  return passes.flatMap((p: { name?: unknown; prefer?: unknown } | null) =>
    p?.prefer === undefined || (PREFERENCES as readonly unknown[]).includes(p.prefer)
      ? []
      : [
          {
            pass: typeof p.name === 'string' ? p.name : null,
            code: 'invalid_prefer',
            message: `prefer ${JSON.stringify(p.prefer)} is not one of ${PREFERENCES.join(', ')}`,
            suggestion: `"prefer": "${PREFERENCES[0]}" (the earliest records), "first_key" or "closest_amount"`,
          },
        ],
  )
}

export function validateRecipe(recipe: Recipe, schemas: Schemas): ValidationReport {
  const issues: ValidationIssue[] = []
  const suggestions = new Set<string>()
  const add = (i: ValidationIssue) => {
    issues.push(i)
    if (i.suggestion) suggestions.add(i.suggestion)
  }

  for (const [side, name] of [
    ['l', 'left'],
    ['r', 'right'],
  ] as const) {
    const cols = schemas[side]
    const def = recipe[name]
    for (const k of def.key) {
      if (!cols.some((c) => c.name === k)) {
        const near = nearestNames(
          k,
          cols.map((c) => c.name),
        )
        add({
          pass: null,
          code: 'unknown_column',
          message: `${name} key column "${k}" is not in source "${def.source}"`,
          suggestion: near.length
            ? `did you mean ${near.map((n) => `"${n}"`).join(' or ')}?`
            : `its columns: ${cols.map((c) => c.name).join(', ')}`,
        })
      }
    }
    try {
      resolveConditions(cols, def.scope ?? [])
    } catch (err) {
      if (err instanceof ConcordError)
        add({ pass: null, code: err.code, message: `${name} scope: ${err.message}`, suggestion: err.suggestion })
      else throw err
    }
  }

  for (const i of paramIssues(recipe, schemas)) add({ pass: null, ...i })
  for (const i of lookupIssues(recipe, schemas)) add({ pass: null, ...i })

  try {
    orderPasses(recipe.passes)
  } catch (err) {
    if (err instanceof PassGraphError) add({ pass: err.pass, code: err.code, message: err.message })
    else throw err
  }

  const compared = comparedColumns(recipe, {
    l: { columns: schemas.l, data: [], length: 0 },
    r: { columns: schemas.r, data: [], length: 0 },
  })
  for (const pass of recipe.passes) {
    if (isProbabilistic(pass)) {
      probabilisticIssues(pass, schemas, compared).forEach(add)
      continue
    }
    // the aggregate is checked whatever state `when` is in: every issue, not the first
    if (pass.pattern !== '1:1') passAggregateIssues(pass, schemas).forEach(add)
    else if (pass.aggregate)
      add({
        pass: pass.name,
        code: 'unexpected_aggregate',
        message: 'a 1:1 pass takes no aggregate',
        suggestion: 'use pattern 1:N, N:1 or N:M for group sums',
      })
    const stray = PROBABILISTIC_FIELDS.filter((f) => pass[f] !== undefined)
    if (stray.length)
      add({
        pass: pass.name,
        code: 'invalid_pass',
        message: `${stray.join(', ')} belong to probabilistic passes, which name their comparisons in "compare"`,
        suggestion: '"compare": [{ "name": "memo", "text": ["l.memo", "r.memo"] }]',
      })
    if (pass.when === undefined) {
      add({
        pass: pass.name,
        code: 'missing_when',
        message: `pass "${pass.name}" has no "when": say which pairs match, or make it probabilistic with "compare"`,
        suggestion: 'l.reference = r.ref AND ABS(l.amount - r.amount) <= 0.01',
      })
      continue
    }
    const expr = conditionIssues(pass.name, pass.when, schemas, add)
    if (!expr) continue
    const plan = planPass(expr, pass.when, (side, c) => schemas[side].find((x) => x.name === c)?.type)
    if (plan.keys.length === 0 && plan.bands.length === 0) {
      add({
        pass: pass.name,
        code: 'no_usable_join',
        message: `pass "${pass.name}" has no equality and no range between an l and an r column, so every pair would be compared`,
        suggestion:
          "add an equality such as l.reference = r.ref, or a range such as r.date BETWEEN l.date - INTERVAL '3 days' AND l.date",
      })
    }
    preferIssue(pass, plan, compared).forEach(add)
    if (pass.pattern === 'N:M' && plan.keys.length === 0) {
      add({
        pass: pass.name,
        code: 'no_usable_join',
        message: 'an N:M pass groups records by equality keys; it has none',
        suggestion: 'group by keys such as l.customer = r.customer',
      })
    }
  }
  const warnings = (['left', 'right'] as const).flatMap((side) =>
    filterWarnings(schemas[side === 'left' ? 'l' : 'r'], recipe[side].scope ?? []).map((w) => ({ side, ...w })),
  )
  return { valid: issues.length === 0, issues, suggestions: [...suggestions], warnings }
}

const PROBABILISTIC_FIELDS = ['block', 'threshold', 'model', 'train'] as const

/** Parses and type-checks a condition (positions in `text`); the expression when it is a valid condition. */
function conditionIssues(
  pass: string,
  text: string,
  schemas: Schemas,
  add: (i: ValidationIssue) => void,
  what = '',
): ReturnType<typeof parsePredicate> | undefined {
  const checker = new TypeChecker(schemas)
  let expr: ReturnType<typeof parsePredicate>
  try {
    expr = parsePredicate(text)
  } catch (err) {
    if (!(err instanceof PredicateError)) throw err
    add({
      pass,
      code: err.code,
      message: `${what}${err.message}`,
      position: what ? undefined : err.pos,
      suggestion: err.suggestion,
    })
    return undefined
  }
  const type = checker.check(expr)
  for (const i of checker.issues)
    add({
      pass,
      code: i.code,
      message: `${what}${i.message}`,
      position: what ? undefined : i.pos,
      suggestion: i.suggestion,
    })
  if (checker.issues.length) return undefined
  if (type.kind !== 'boolean') {
    add({
      pass,
      code: 'type_mismatch',
      message: `${what || '"when" '}must be a condition, not a ${type.kind} value`,
      position: what ? undefined : expr.pos,
    })
    return undefined
  }
  return expr
}

/** A probabilistic pass: its blocking rules, comparisons, threshold and model. */
function probabilisticIssues(pass: RecipePass, schemas: Schemas, compared: ComparedColumns): ValidationIssue[] {
  const out: ValidationIssue[] = []
  const add = (i: ValidationIssue) => out.push(i)
  if (pass.pattern !== '1:1')
    add({
      pass: pass.name,
      code: 'invalid_pass',
      message: `a probabilistic pass assigns records one to one: its pattern is 1:1, not ${pass.pattern}`,
    })
  if (pass.aggregate)
    add({ pass: pass.name, code: 'unexpected_aggregate', message: 'a probabilistic pass takes no aggregate' })
  if (!pass.block?.length)
    add({
      pass: pass.name,
      code: 'missing_blocking',
      message: `probabilistic pass "${pass.name}" needs blocking rules ("block"): comparing every pair is quadratic`,
      suggestion:
        '"block": ["shares_token(l.memo, r.memo)", "r.amount BETWEEN l.amount * 0.9 AND l.amount * 1.1 AND r.date BETWEEN l.date AND l.date + 21"]',
    })
  const types = (side: 'l' | 'r', c: string) => schemas[side].find((x) => x.name === c)?.type
  for (const [n, rule] of (pass.block ?? []).entries()) {
    const what = `blocking rule ${n + 1} (${rule}): `
    if (!conditionIssues(pass.name, rule, schemas, add, what)) continue
    if (!blockingJoin(rule, types))
      add({
        pass: pass.name,
        code: 'no_usable_join',
        message: `${what}no equality, range or shares_token() between l and r columns, so every pair would be a candidate`,
        suggestion: 'shares_token(l.memo, r.memo), l.postcode = r.postcode, or r.date BETWEEN l.date AND l.date + 7',
      })
  }
  if (pass.when !== undefined) conditionIssues(pass.name, pass.when, schemas, add)
  const problem = pass.prefer ? preferenceProblem(pass.prefer, compared) : null
  if (problem) add({ pass: pass.name, code: 'invalid_prefer', message: problem })
  const names = new Set<string>()
  for (const c of pass.compare ?? []) {
    if (names.has(c.name))
      add({ pass: pass.name, code: 'invalid_comparison', message: `two comparisons are named "${c.name}"` })
    names.add(c.name)
    for (const i of comparisonIssues(c, schemas)) add({ pass: pass.name, ...i })
  }
  if (pass.model && !out.length) {
    for (const c of pass.compare ?? []) {
      const given = pass.model.comparisons.find((x) => x.name === c.name)
      const levels = comparisonLabels(c).length
      if (!given) add({ pass: pass.name, code: 'invalid_model', message: `the model has no comparison "${c.name}"` })
      else if (given.m.length !== levels || given.u.length !== levels)
        add({
          pass: pass.name,
          code: 'invalid_model',
          message: `the model's "${c.name}" needs ${levels} m and u values (one per level, "else" last), not ${given.m.length} and ${given.u.length}`,
        })
    }
  }
  return out
}

/** `prefer` resolves 1:1 ties, by a date or an amount the pass compares (else the recipe's). */
function preferIssue(pass: Recipe['passes'][number], plan: PassPlan, compared: ComparedColumns): ValidationIssue[] {
  if (!pass.prefer) return []
  if (pass.pattern !== '1:1')
    return [
      {
        pass: pass.name,
        code: 'unexpected_prefer',
        message: `prefer resolves ties between 1:1 candidates; pass "${pass.name}" is ${pass.pattern}`,
        suggestion: 'remove prefer, or make the pass 1:1',
      },
    ]
  const problem = preferenceProblem(pass.prefer, scoredPairs(plan, compared))
  return problem
    ? [
        {
          pass: pass.name,
          code: 'invalid_prefer',
          message: problem,
          suggestion: '"prefer": "first_key" needs no compared column',
        },
      ]
    : []
}

function passAggregateIssues(pass: Recipe['passes'][number], schemas: Schemas): ValidationIssue[] {
  if (!pass.aggregate)
    return [
      {
        pass: pass.name,
        code: 'missing_aggregate',
        message: `a ${pass.pattern} pass needs an aggregate`,
        suggestion: '"aggregate": { "sum": "SUM(r.amount)", "equals": "l.amount", "tolerance": 0.01, "max_group": 5 }',
      },
    ]
  return aggregateIssues(pass.aggregate, pass.pattern, schemas).map((e) => ({
    pass: pass.name,
    code: e.code,
    message: e.message,
    field: e.field,
    ...(e.pos ? { position: e.pos } : {}),
    ...(e.suggestion ? { suggestion: e.suggestion } : {}),
  }))
}
