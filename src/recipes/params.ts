// Runtime parameters: a saved recipe declares values it takes when it runs (a period's bounds, an
// account), each adding a condition to the scope of the side(s) it names. The same recipe then
// runs every month with different values, and the run records the values it used.

import { resolveConditions } from '../engine/load/filter.js'
import type { ColumnInfo, FilterCondition } from '../engine/data/types.js'
import { parseDate, parseDecimal, parseTimestamp } from '../engine/data/values.js'
import { ConcordError } from '../errors.js'
import type { ParamType, Recipe, RecipeParam } from './schema.js'

export type ParamValue = string | number | boolean

const EXAMPLE: Record<ParamType, ParamValue> = {
  date: '2000-01-01',
  timestamp: '2000-01-01T00:00:00Z',
  string: 'x',
  integer: 1,
  decimal: '1.5',
  boolean: true,
}

/** Checks a value against its parameter's type; returns the value as it goes into the condition. */
function typed(param: RecipeParam, value: unknown): ParamValue {
  const bad = (why: string) =>
    new ConcordError(
      'invalid_param',
      `parameter "${param.name}" (${param.type}): ${why}`,
      400,
      `e.g. ${JSON.stringify(EXAMPLE[param.type])}`,
    )
  const text = typeof value === 'number' ? String(value) : value
  switch (param.type) {
    case 'date':
      if (typeof text !== 'string' || parseDate(text) === null)
        throw bad(`${JSON.stringify(value)} is not a date YYYY-MM-DD`)
      return text
    case 'timestamp':
      if (typeof text !== 'string' || (parseTimestamp(text) === null && parseDate(text) === null))
        throw bad(`${JSON.stringify(value)} is not a timestamp`)
      return text
    case 'integer':
      if (typeof text !== 'string' || !/^-?\d{1,15}$/.test(text))
        throw bad(`${JSON.stringify(value)} is not an integer`)
      return Number(text)
    case 'decimal':
      if (typeof text !== 'string' || parseDecimal(text) === null)
        throw bad(`${JSON.stringify(value)} is not a decimal`)
      return text
    case 'boolean':
      if (value === true || value === 'true') return true
      if (value === false || value === 'false') return false
      throw bad(`${JSON.stringify(value)} is not true or false`)
    case 'string':
      if (typeof value !== 'string') throw bad(`${JSON.stringify(value)} is not a string`)
      return value
  }
}

/**
 * The recipe with its parameters' conditions added to the sides' scopes, and the values used.
 * A missing required value, an unknown name or an ill-typed value is a 400 that names it.
 */
export function applyParams(
  recipe: Recipe,
  values: Record<string, unknown> = {},
): { recipe: Recipe; used: Record<string, ParamValue> } {
  const params = recipe.params ?? []
  for (const name of Object.keys(values)) {
    if (!params.some((p) => p.name === name)) {
      throw new ConcordError(
        'unknown_param',
        `recipe "${recipe.name}" has no parameter "${name}"`,
        400,
        params.length ? `its parameters: ${params.map((p) => p.name).join(', ')}` : 'it takes no parameters',
      )
    }
  }
  const used: Record<string, ParamValue> = {}
  const scope = { left: [...(recipe.left.scope ?? [])], right: [...(recipe.right.scope ?? [])] }
  for (const p of params) {
    const raw = values[p.name]
    if (raw === undefined || raw === null || raw === '') {
      if (p.required === false) continue
      throw new ConcordError(
        'missing_param',
        `recipe "${recipe.name}" needs a value for "${p.name}" (${p.type})`,
        400,
        `add "params": { "${p.name}": ${JSON.stringify(EXAMPLE[p.type])} }`,
      )
    }
    const value = typed(p, raw)
    used[p.name] = value
    if (p.left) scope.left.push({ column: p.left.column, op: p.left.op, value })
    if (p.right) scope.right.push({ column: p.right.column, op: p.right.op, value })
  }
  return {
    recipe: { ...recipe, left: { ...recipe.left, scope: scope.left }, right: { ...recipe.right, scope: scope.right } },
    used,
  }
}

/** Declaration problems: duplicate names, a parameter on no side, a column or operator that does not fit. */
export function paramIssues(
  recipe: Recipe,
  schemas: { l: ColumnInfo[]; r: ColumnInfo[] },
): { code: string; message: string; suggestion?: string }[] {
  const issues: { code: string; message: string; suggestion?: string }[] = []
  const seen = new Set<string>()
  for (const p of recipe.params ?? []) {
    if (seen.has(p.name)) issues.push({ code: 'duplicate_param', message: `two parameters are named "${p.name}"` })
    seen.add(p.name)
    if (!p.left && !p.right)
      issues.push({
        code: 'invalid_param',
        message: `parameter "${p.name}" filters no side`,
        suggestion: 'give it a left and/or right { column, op }',
      })
    for (const [side, target] of [
      ['left', p.left],
      ['right', p.right],
    ] as const) {
      if (!target) continue
      const cond: FilterCondition = { column: target.column, op: target.op, value: EXAMPLE[p.type] }
      try {
        resolveConditions(side === 'left' ? schemas.l : schemas.r, [cond])
      } catch (err) {
        if (!(err instanceof ConcordError)) throw err
        issues.push({
          code: err.code,
          message: `parameter "${p.name}" on the ${side} side: ${err.message}`,
          suggestion: err.suggestion,
        })
      }
    }
  }
  return issues
}
