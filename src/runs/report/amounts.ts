// Each side's amount column, as the run's summary chose it: the recipe's first compared amount
// (comparedColumns), planned against the types of the stored unmatched records, when it is a
// decimal or integer column (as sideTotals requires). Runs on the service's thread: the planner
// it needs is loaded there already, and the figures thread then never loads it.

import type { Schema } from 'apache-arrow'
import { comparedColumns } from '../../engine/reconcile.js'
import type { Recipe } from '../../recipes/schema.js'
import { resultFile } from '../results.js'
import { columnType, fileSchema, scaleOf } from './batches.js'

/** A side's amount field in its unmatched file (`l.amount`) and its scale; absent: none. */
export interface AmountColumns {
  left?: { field: string; scale: number }
  right?: { field: string; scale: number }
}

export async function amountColumns(dir: string, recipe: Recipe): Promise<AmountColumns> {
  const schemas = {
    left: await fileSchema(resultFile(dir, 'unmatched-left')),
    right: await fileSchema(resultFile(dir, 'unmatched-right')),
  }
  const columns = (schema: Schema | null, prefix: string) =>
    (schema?.fields ?? [])
      .filter((f) => f.name.startsWith(prefix))
      .map((f) => ({ name: f.name.slice(prefix.length), type: columnType(f), nullable: true }))
  const compared = comparedColumns(recipe, {
    l: { columns: columns(schemas.left, 'l.'), data: [], length: 0 },
    r: { columns: columns(schemas.right, 'r.'), data: [], length: 0 },
  })
  const pick = (schema: Schema | null, name: string | undefined, prefix: string) => {
    const field = schema?.fields.find((f) => f.name === `${prefix}${name}`)
    if (!field || name === undefined) return undefined
    const type = columnType(field)
    return type === 'decimal' || type === 'integer' ? { field: field.name, scale: scaleOf(field) } : undefined
  }
  return {
    left: pick(schemas.left, compared.amount?.l, 'l.'),
    right: pick(schemas.right, compared.amount?.r, 'r.'),
  }
}
