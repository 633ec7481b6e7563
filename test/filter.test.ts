import t from 'tap'
import { columnBuilder } from '../src/engine/data/builder.js'
import { decimalBound, likePattern, resolveConditions, selectRows } from '../src/engine/load/filter.js'
import { rowsAsJson, type Table } from '../src/engine/data/table.js'
import type { ColumnInfo, FilterCondition } from '../src/engine/data/types.js'
import type { ConcordError } from '../src/errors.js'

const columns: ColumnInfo[] = [
  { name: 'id', type: 'integer', nullable: false },
  { name: 'amount', type: 'decimal', nullable: true, scale: 2 },
  { name: 'ref', type: 'string', nullable: true },
  { name: 'day', type: 'date', nullable: true },
  { name: 'at', type: 'timestamp', nullable: true },
  { name: 'ok', type: 'boolean', nullable: true },
  { name: 'ratio', type: 'float', nullable: true },
]
const rows: unknown[][] = [
  [1, '12345.67', 'INV-001', '2024-01-05', '2024-01-05T10:00:00Z', 'true', '0.1'],
  [2, '12345.66', 'inv-002', '2024-01-31', '2024-01-31T23:59:59.999Z', 'false', '0.5'],
  [3, '-0.01', 'A_B%C', '2024-02-01', '2024-02-01T00:00:00Z', null, '1e3'],
  [4, null, null, null, null, 'true', null],
  [5, '99.99', 'Zeta', '2023-12-31', '2023-12-31T12:00:00+02:00', 'false', '-2.5'],
  [6, '100.00', 'back\\slash', '2024-01-01', '2024-01-01T00:00:00Z', 'true', '3'],
]

function table(): Table {
  const builders = columns.map((c) => columnBuilder(c))
  for (const r of rows) {
    for (let i = 0; i < r.length; i++) builders[i].append(r[i])
  }
  return { columns, data: builders.map((b) => b.finish()), length: rows.length }
}

function ids(conditions: FilterCondition[]): number[] {
  const tb = table()
  const selected = selectRows(tb, resolveConditions(columns, conditions))
  return Array.from(selected, (r) => rowsAsJson(tb)[r].id as number)
}

t.test('decimals compare exactly, including values between two units', async (t) => {
  t.same(ids([{ column: 'amount', op: 'eq', value: '12345.67' }]), [1])
  t.same(ids([{ column: 'amount', op: 'eq', value: 12345.66 }]), [2])
  t.same(ids([{ column: 'amount', op: 'gt', value: '12345.665' }]), [1])
  t.same(ids([{ column: 'amount', op: 'gte', value: '12345.665' }]), [1])
  t.same(ids([{ column: 'amount', op: 'lt', value: '12345.665' }]), [2, 3, 5, 6])
  t.same(ids([{ column: 'amount', op: 'lte', value: '-0.005' }]), [3])
  t.same(ids([{ column: 'amount', op: 'eq', value: '99.990' }]), [5], 'trailing zeros are the same number')
  t.same(ids([{ column: 'amount', op: 'eq', value: '99.995' }]), [], 'a value between units equals nothing')
  t.same(ids([{ column: 'amount', op: 'neq', value: '99.995' }]), [1, 2, 3, 5, 6], 'neq keeps every non-NULL')
  t.same(ids([{ column: 'amount', op: 'between', value: ['99.99', '100.00'] }]), [5, 6])
  t.same(ids([{ column: 'amount', op: 'in', value: ['100', 99.99, '1.001'] }]), [5, 6])
  t.same(ids([{ column: 'id', op: 'gt', value: 2.5 }]), [3, 4, 5, 6], 'integer > 2.5 is >= 3')
  t.same(ids([{ column: 'id', op: 'lte', value: '-0.5' }]), [])
})

t.test('NULL never satisfies a condition, neq included', async (t) => {
  t.same(ids([{ column: 'ref', op: 'neq', value: 'x' }]), [1, 2, 3, 5, 6])
  t.same(ids([{ column: 'day', op: 'lt', value: '2030-01-01' }]), [1, 2, 3, 5, 6])
  t.same(ids([{ column: 'ok', op: 'neq', value: true }]), [2, 5])
})

t.test('strings compare by UTF-8 bytes (C collation), LIKE is case-sensitive with escapes', async (t) => {
  t.same(ids([{ column: 'ref', op: 'lt', value: 'a' }]), [1, 3, 5], 'uppercase sorts before lowercase')
  t.same(ids([{ column: 'ref', op: 'like', value: 'INV-%' }]), [1])
  t.same(ids([{ column: 'ref', op: 'like', value: 'inv-00_' }]), [2])
  t.same(ids([{ column: 'ref', op: 'like', value: 'A\\_B\\%C' }]), [3])
  t.same(ids([{ column: 'ref', op: 'like', value: 'A\\_B\\%' }]), [])
  t.same(ids([{ column: 'ref', op: 'like', value: 'back\\\\slash' }]), [6])
  t.same(ids([{ column: 'ref', op: 'eq', value: "it's; DROP TABLE x" }]), [])
  t.throws(() => likePattern('abc\\'), { code: 'invalid_filter' })
})

t.test('dates, timestamps, booleans and floats', async (t) => {
  t.same(ids([{ column: 'day', op: 'between', value: ['2024-01-01', '2024-01-31'] }]), [1, 2, 6])
  t.same(ids([{ column: 'day', op: 'between', value: ['2024-01-31', '2024-01-01'] }]), [], 'between is not symmetric')
  t.same(ids([{ column: 'at', op: 'lt', value: '2024-01-01' }]), [5], '+02:00 is converted to UTC')
  t.same(ids([{ column: 'at', op: 'gte', value: '2024-01-31T23:59:59.999Z' }]), [2, 3])
  t.same(ids([{ column: 'ok', op: 'eq', value: 'TRUE' }]), [1, 4, 6])
  t.same(ids([{ column: 'ratio', op: 'gt', value: 0.1 }]), [2, 3, 6])
  t.same(ids([{ column: 'ratio', op: 'eq', value: '1000' }]), [3])
})

t.test('bad conditions are refused with a code, never turned into another filter', async (t) => {
  const bad = (cond: unknown, code: string, name: string) =>
    t.throws(() => resolveConditions(columns, [cond as FilterCondition]), { code }, name)
  bad({ column: 'amout', op: 'eq', value: 1 }, 'unknown_column', 'unknown column')
  bad({ column: 'amount; DROP TABLE x', op: 'eq', value: 1 }, 'unknown_column', 'injection as a column name')
  bad({ column: 'amount', op: 'eq', value: 'abc' }, 'invalid_filter', 'non-number for a decimal')
  bad({ column: 'amount', op: 'like', value: '1%' }, 'invalid_filter', 'like on a number')
  bad({ column: 'amount', op: 'between', value: [1] }, 'invalid_filter', 'between with one value')
  bad({ column: 'amount', op: 'in', value: [] }, 'invalid_filter', 'empty in')
  bad({ column: 'amount', op: 'eq', value: [1, 2] }, 'invalid_filter', 'list for eq')
  bad({ column: 'day', op: 'eq', value: '2024-02-30' }, 'invalid_filter', 'impossible date')
  bad({ column: 'day', op: 'eq', value: 20240105 }, 'invalid_filter', 'number for a date')
  bad({ column: 'ok', op: 'gt', value: true }, 'invalid_filter', 'range on boolean')
  bad({ column: 'ok', op: 'eq', value: 'yes' }, 'invalid_filter', 'non-boolean')
  bad({ column: 'id', op: 'regex', value: 'x' }, 'invalid_filter', 'unknown operator')
  try {
    resolveConditions(columns, [{ column: 'amout', op: 'eq', value: 1 }])
  } catch (err) {
    t.match((err as ConcordError).suggestion, /"amount"/, 'suggests the nearest column')
  }
})

t.test('decimalBound floors toward minus infinity and keeps the canonical text', async (t) => {
  t.same(decimalBound('12.345', 2), { key: 1234, exact: false, text: '12.345' })
  t.same(decimalBound('-12.345', 2), { key: -1235, exact: false, text: '-12.345' })
  t.same(decimalBound('007.50', 2), { key: 750, exact: true, text: '7.5' })
  t.same(decimalBound('.5', 0), { key: 0, exact: false, text: '0.5' })
  t.equal(decimalBound('1e5', 2), null)
})
