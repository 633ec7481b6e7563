// lookup('name', 'column', key values…[, as_of value]) as the type checker sees it: the named
// lookup table (a recipe's "lookups", with its source's columns) and the column must exist, one
// value is given per key column (plus one with as_of), each comparable with its key column as `=`
// would compare them; the result has the column's type, decimals with their scale.

import type { Expr, Position } from './predicate.js'
import { nearestNames } from './similarity.js'
import { columnType, compatible, type ExprType, hintFor, type LookupSchema, TEMPORAL } from './types.js'

type Issue = (code: string, message: string, pos?: Position, suggestion?: string) => ExprType

/**
 * lookup('name', 'column', key values…[, as_of value]): the column's type. The values are
 * compared with the key columns as `=` compares (and the last one, with as_of, as `<=`).
 */
export function lookupType(
  e: Extract<Expr, { kind: 'call' }>,
  args: ExprType[],
  declared: Record<string, LookupSchema>,
  issue: Issue,
): ExprType {
  const [nameArg, columnArg] = e.args
  if (nameArg.kind !== 'string')
    return issue(
      'invalid_argument',
      "lookup()'s first argument is the lookup's name, as a literal",
      nameArg.pos,
      "e.g. lookup('fx', 'rate', l.currency, l.booking_date)",
    )
  if (columnArg.kind !== 'string')
    return issue(
      'invalid_argument',
      "lookup()'s second argument is the column to read, as a literal",
      columnArg.pos,
      "e.g. lookup('fx', 'rate', l.currency, l.booking_date)",
    )
  const name = nameArg.value
  const def = declared[name]
  if (!def) {
    const names = Object.keys(declared)
    const near = nearestNames(name, names)
    return issue(
      'unknown_lookup',
      `the recipe has no lookup table "${name}"`,
      nameArg.pos,
      near.length
        ? `did you mean ${near.map((n) => `'${n}'`).join(', ')}?`
        : names.length
          ? `its lookups: ${names.join(', ')}`
          : `declare it: "lookups": { "${name}": { "source": "…", "key": ["…"] } }`,
    )
  }
  const wanted = [...def.key, ...(def.as_of ? [`${def.as_of} (on or before)`] : [])]
  const values = e.args.slice(2)
  if (values.length !== wanted.length)
    issue(
      'wrong_arguments',
      `lookup('${name}', …) takes ${wanted.length} value${wanted.length === 1 ? '' : 's'} after the column (${wanted.join(', ')}), not ${values.length}`,
      e.pos,
    )
  if (!def.columns) return { kind: 'null' }
  const columns = def.columns
  const col = columns.find((c) => c.name === columnArg.value)
  if (!col) {
    const near = nearestNames(
      columnArg.value,
      columns.map((c) => c.name),
    )
    return issue(
      'unknown_column',
      `lookup "${name}" (source "${def.source}") has no column "${columnArg.value}"`,
      columnArg.pos,
      near.length ? `did you mean ${near.map((n) => `'${n}'`).join(', ')}?` : undefined,
    )
  }
  values.forEach((value, n) => {
    const t = args[n + 2]
    const asOf = n === def.key.length
    const target = columns.find((c) => c.name === (asOf ? def.as_of : def.key[n]))
    if (!target || t.kind === 'null') return
    const ok = asOf ? TEMPORAL.has(t.kind) : compatible(t, columnType(target))
    if (!ok)
      issue(
        'type_mismatch',
        asOf
          ? `the last value of lookup('${name}', …) is a date or timestamp (rows on or before it by ${target.name}), not a ${t.kind}`
          : `value ${n + 1} of lookup('${name}', …) is compared with key column ${target.name} (${target.type}), not a ${t.kind}`,
        value.pos,
        asOf ? undefined : hintFor(t, columnType(target)),
      )
  })
  return columnType(col)
}
