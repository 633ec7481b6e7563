// One filter semantics everywhere: the same generated rows loaded as CSV, as JSON, as Arrow, as
// Parquet and as a real PostgreSQL table must give identical row sets for random condition lists.

import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import fc from 'fast-check'
import pg from 'pg'
import t from 'tap'
import { tableToIPC } from 'apache-arrow'
import { arrowConnector } from '../connectors/arrow.js'
import { csvConnector } from '../connectors/csv.js'
import { jsonConnector } from '../connectors/json.js'
import { parquetConnector } from '../connectors/parquet.js'
import { postgresConnector } from '../connectors/postgres.js'
import { toArrowTable } from '../src/engine/data/arrow.js'
import { jsonValue } from '../src/engine/data/builder.js'
import { loadCsv } from '../src/engine/load/csv/index.js'
import type { FilterCondition, FilterOp } from '../src/engine/data/types.js'
import { formatDecimal } from '../src/engine/data/values.js'
import { EngineContext, type SourceConnector } from '../src/sources/connector.js'
import { parquetFile } from './helpers/parquet-writer.js'
import { testDatabase } from './helpers/pg.js'

interface Row {
  id: number
  amount: number | null // units at scale 2
  qty: number | null
  ratio: number | null
  name: string | null
  day: number | null // days since epoch
  at: number | null // ms
  flag: boolean | null
}

const DAY = 86_400_000
const day0 = Date.UTC(2023, 11, 20) / DAY
const nameChars = fc.constantFrom(
  'a',
  'B',
  'z',
  'é',
  '%',
  '_',
  '\\',
  "'",
  '"',
  ',',
  ';',
  ' ',
  '\n',
  '-',
  '1',
  'ß',
  '😀',
)
const nameArb = fc.array(nameChars, { maxLength: 6 }).map((cs) => `n${cs.join('')}`.trimEnd())
const rowArb = (id: number) =>
  fc.record({
    id: fc.constant(id),
    amount: fc.option(fc.integer({ min: -100_000, max: 100_000 }), { freq: 5 }),
    qty: fc.option(fc.integer({ min: -5, max: 20 }), { freq: 5 }),
    ratio: fc.option(fc.double({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true }), { freq: 5 }),
    name: fc.option(nameArb, { freq: 5 }),
    day: fc.option(fc.integer({ min: day0, max: day0 + 60 }), { freq: 5 }),
    at: fc.option(fc.integer({ min: day0 * DAY, max: (day0 + 60) * DAY }), { freq: 5 }),
    flag: fc.option(fc.boolean(), { freq: 5 }),
  })

// The first row pins every column's type (no NULLs; a float with an exponent; a 2-digit scale).
const anchor: Row = {
  id: 0,
  amount: 1,
  qty: 1,
  ratio: 1e-10,
  name: 'nanchor',
  day: day0,
  at: day0 * DAY + 1,
  flag: true,
}
const rowsArb = fc
  .integer({ min: 0, max: 25 })
  .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => rowArb(i + 1))))

const text = {
  amount: (v: number) => formatDecimal(v, 2),
  day: (v: number) => new Date(v * DAY).toISOString().slice(0, 10),
  at: (v: number) => new Date(v).toISOString(),
}

// Two more columns repeat `amount` and `at` with the types PostgreSQL may declare them as:
// unconstrained `numeric` (no scale in the catalog) and `timestamp` without a zone.
type Column = keyof Row | 'raw' | 'local_at'
const base = { raw: 'amount', local_at: 'at' } as const

function valueFor(col: Column, rows: Row[]) {
  const column: keyof Row = col === 'raw' || col === 'local_at' ? base[col] : col
  const seen = rows.map((r) => r[column]).filter((v) => v !== null)
  const pick = fc.constantFrom(...(seen.length ? seen : [anchor[column]]))
  switch (column) {
    case 'id':
    case 'qty':
      return fc.oneof(pick, fc.integer({ min: -5, max: 30 }), fc.constantFrom('2.5', '-0.5', 3.0))
    case 'amount':
      return fc.oneof(
        pick.map((v) => text.amount(v as number)),
        fc.constantFrom('0.005', '-1.999', 12, '100.10'),
      )
    case 'ratio':
      return fc.oneof(pick, fc.double({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true }))
    case 'name':
      return fc.oneof(pick, nameArb)
    case 'day':
      return fc.oneof(
        pick.map((v) => text.day(v as number)),
        fc.constantFrom('2024-01-01', '2023-12-31'),
      )
    case 'at':
      return fc.oneof(
        pick.map((v) => text.at(v as number)),
        fc.constantFrom('2024-01-01', '2024-01-05T12:00:00Z', '2024-01-05T12:00:00+05:30'),
      )
    case 'flag':
      return fc.boolean()
  }
}

function conditionArb(rows: Row[]): fc.Arbitrary<FilterCondition> {
  const columns: Column[] = ['id', 'amount', 'qty', 'ratio', 'name', 'day', 'at', 'flag', 'raw', 'local_at']
  return fc.constantFrom(...columns).chain((column) => {
    const ops: FilterOp[] =
      column === 'flag'
        ? ['eq', 'neq', 'in']
        : column === 'name'
          ? ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'between', 'in', 'like']
          : ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'between', 'in']
    const value = valueFor(column, rows) as fc.Arbitrary<string | number | boolean>
    return fc.constantFrom(...ops).chain((op): fc.Arbitrary<FilterCondition> => {
      if (op === 'between') return fc.tuple(value, value).map((v) => ({ column, op, value: v }))
      if (op === 'in') return fc.array(value, { minLength: 1, maxLength: 4 }).map((v) => ({ column, op, value: v }))
      if (op === 'like') {
        return (value as fc.Arbitrary<string>).chain((s) =>
          fc
            .constantFrom(
              `${s.slice(0, 2)}%`,
              `%${s.slice(-1)}`,
              s.replace(/[%_\\]/g, '\\$&'),
              `${s.slice(0, 1)}_%`,
              s.replace(/[%_\\]/g, '_'),
              `${s.toUpperCase().replace(/\\/g, '')}%`,
            )
            .map((p) => ({ column, op, value: p })),
        )
      }
      return value.map((v) => ({ column, op, value: v }))
    })
  })
}

function csvOf(rows: Row[]): string {
  const q = (v: string | null) => (v === null ? '' : `"${v.replace(/"/g, '""')}"`)
  const lines = ['id,amount,qty,ratio,name,day,at,flag,raw,local_at']
  for (const r of rows) {
    lines.push(
      [
        String(r.id),
        r.amount === null ? '' : text.amount(r.amount),
        r.qty === null ? '' : String(r.qty),
        r.ratio === null ? '' : String(r.ratio),
        q(r.name),
        r.day === null ? '' : text.day(r.day),
        r.at === null ? '' : text.at(r.at),
        r.flag === null ? '' : String(r.flag),
        r.amount === null ? '' : text.amount(r.amount),
        r.at === null ? '' : text.at(r.at),
      ].join(','),
    )
  }
  return `${lines.join('\r\n')}\r\n`
}

/**
 * The rows as Parquet, a few per row group so statistics prune often: decimals as INT64 and as
 * fixed-length bytes, timestamps in milliseconds and (no zone) microseconds.
 */
function parquetOf(rows: Row[]): Promise<Buffer> {
  const opt = { repetition_type: 'OPTIONAL' }
  const big = (v: number | null) => (v === null ? null : BigInt(v))
  return parquetFile(
    [
      { name: 'id', data: rows.map((r) => BigInt(r.id)) },
      { name: 'amount', data: rows.map((r) => big(r.amount)) },
      { name: 'qty', data: rows.map((r) => r.qty) },
      { name: 'ratio', data: rows.map((r) => r.ratio) },
      { name: 'name', data: rows.map((r) => r.name) },
      { name: 'day', data: rows.map((r) => r.day) },
      { name: 'at', data: rows.map((r) => big(r.at)) },
      { name: 'flag', data: rows.map((r) => r.flag) },
      { name: 'raw', data: rows.map((r) => big(r.amount)) },
      { name: 'local_at', data: rows.map((r) => (r.at === null ? null : BigInt(r.at) * 1000n)) },
    ],
    [
      { name: 'id', type: 'INT64', repetition_type: 'REQUIRED' },
      { name: 'amount', type: 'INT64', converted_type: 'DECIMAL', scale: 2, precision: 12, ...opt },
      { name: 'qty', type: 'INT32', ...opt },
      { name: 'ratio', type: 'DOUBLE', ...opt },
      { name: 'name', type: 'BYTE_ARRAY', converted_type: 'UTF8', ...opt },
      { name: 'day', type: 'INT32', converted_type: 'DATE', ...opt },
      { name: 'at', type: 'INT64', converted_type: 'TIMESTAMP_MILLIS', ...opt },
      { name: 'flag', type: 'BOOLEAN', ...opt },
      {
        name: 'raw',
        type: 'FIXED_LEN_BYTE_ARRAY',
        type_length: 8,
        converted_type: 'DECIMAL',
        scale: 2,
        precision: 18,
        ...opt,
      },
      {
        name: 'local_at',
        type: 'INT64',
        logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: false, unit: 'MICROS' },
        ...opt,
      },
    ],
    1 + (rows.length % 4),
  )
}

function jsonOf(rows: Row[]): string {
  return JSON.stringify(
    rows.map((r) => ({
      id: r.id,
      amount: r.amount === null ? null : text.amount(r.amount),
      qty: r.qty,
      ratio: r.ratio,
      name: r.name,
      day: r.day === null ? null : text.day(r.day),
      at: r.at === null ? null : text.at(r.at),
      flag: r.flag,
      raw: r.amount === null ? null : text.amount(r.amount),
      local_at: r.at === null ? null : text.at(r.at),
    })),
  )
}

t.test('CSV, JSON, Arrow IPC, Parquet and PostgreSQL select the same rows for random conditions', async (t) => {
  const db = await testDatabase(t)
  const dir = t.testdir()
  const admin = new pg.Client({ connectionString: db.url })
  await admin.connect()
  t.teardown(() => admin.end())
  const schema = db.schema
  const sources: [string, SourceConnector, Record<string, unknown>][] = [
    ['csv', csvConnector(dir), { path: 'rows.csv' }],
    ['json', jsonConnector(dir), { path: 'rows.json' }],
    // the CSV's typed columns written as an Arrow IPC file (Decimal128, Int64, Date32, Timestamp…)
    ['arrow', arrowConnector(dir), { path: 'rows.arrow' }],
    // written from the generated values, 1–4 rows per row group (pruned by statistics)
    ['parquet', parquetConnector(dir), { path: 'rows.parquet' }],
    [
      'postgres',
      postgresConnector({ statementTimeoutMs: 30_000, poolMax: 1 }),
      { connection_string: db.url, schema, table: 'rows' },
    ],
  ]
  t.teardown(() => Promise.all(sources.map(([, c]) => c.close?.())))

  let checked = 0
  let nonEmpty = 0
  let errors = 0
  await fc.assert(
    fc.asyncProperty(
      rowsArb.chain((generated) => {
        const rows = [anchor, ...generated]
        return fc.tuple(
          fc.constant(rows),
          fc.array(fc.array(conditionArb(rows), { minLength: 1, maxLength: 3 }), { minLength: 6, maxLength: 6 }),
        )
      }),
      async ([rows, conditionLists]) => {
        await writeFile(join(dir, 'rows.csv'), csvOf(rows))
        await writeFile(join(dir, 'rows.json'), jsonOf(rows))
        const typed = await loadCsv(join(dir, 'rows.csv'))
        await writeFile(join(dir, 'rows.arrow'), tableToIPC(toArrowTable(typed.table), 'file'))
        await writeFile(join(dir, 'rows.parquet'), await parquetOf(rows))
        await admin.query(`DROP TABLE IF EXISTS "${schema}".rows`)
        await admin.query(
          `CREATE TABLE "${schema}".rows (id int, amount numeric(12,2), qty int, ratio float8, name text, day date, at timestamptz, flag boolean, raw numeric, local_at timestamp)`,
        )
        for (const r of rows) {
          await admin.query(`INSERT INTO "${schema}".rows VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)`, [
            r.id,
            r.amount === null ? null : text.amount(r.amount),
            r.qty,
            r.ratio,
            r.name,
            r.day === null ? null : text.day(r.day),
            r.at === null ? null : text.at(r.at),
            r.flag,
            r.amount === null ? null : text.amount(r.amount),
            r.at === null ? null : text.at(r.at),
          ])
        }
        for (const conditions of conditionLists) {
          const results: Record<string, string> = {}
          for (const [name, connector, config] of sources) {
            const source = { alias: 'rows', type: name, config: await connector.prepare(config) }
            try {
              const scoped = await connector.registerScoped(new EngineContext(), 'rows', source, conditions)
              const idCol = scoped.table.columns.findIndex((c) => c.name === 'id')
              const ids = Array.from(
                { length: scoped.table.length },
                (_, i) => jsonValue(scoped.table.data[idCol], i) as number,
              )
              results[name] = JSON.stringify(ids.sort((a, b) => a - b))
            } catch (err) {
              results[name] = `error ${(err as { code?: string }).code ?? (err as Error).message}`
            }
          }
          if (Object.values(results).some((r) => r !== results.csv)) {
            throw new Error(`connectors disagree for ${JSON.stringify(conditions)}: ${JSON.stringify(results)}`)
          }
          checked++
          if (results.csv.startsWith('error')) errors++
          else if (results.csv !== '[]') nonEmpty++
        }
      },
    ),
    { numRuns: 150 },
  )
  t.ok(checked >= 900, `compared ${checked} condition lists`)
  t.ok(nonEmpty > checked / 4, `${nonEmpty} of them selected rows: the property is not vacuous`)
  t.ok(errors < checked / 10, `${errors} were refused alike by all five`)
})
