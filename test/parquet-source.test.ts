// Parquet files as sources (issue 19 item 3): every column type read exactly as the file declares
// it, row groups skipped by their statistics (and really not read: a skipped group's bytes are
// garbage here), and a file DuckDB wrote (ZSTD, small row groups) selected the same as DuckDB
// selects it for the same conditions. (The filter semantics across every connector, Parquet with
// tiny row groups included, are checked property-based in filter-differential.test.ts.)

import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import { parquetMetadata } from 'hyparquet'
import t from 'tap'
import { parquetConnector } from '../connectors/parquet.js'
import type { FilterCondition } from '../src/engine/data/types.js'
import { jsonValue } from '../src/engine/data/builder.js'
import { formatDecimal } from '../src/engine/data/values.js'
import { EngineContext } from '../src/sources/connector.js'
import { testApp } from './helpers/app.js'
import { parquetFile as parquet } from './helpers/parquet-writer.js'

t.test('every Parquet type reads as the file declares it, decimals and timestamps exactly', async (t) => {
  const { app, dataDir } = await testApp(t)
  const opt = { repetition_type: 'OPTIONAL' }
  const file = await parquet(
    [
      { name: 'id', data: ['A1', 'A2', 'A3'] },
      { name: 'qty', data: [3, null, -7] },
      { name: 'big', data: [1n, 9007199254740991n, -2n] },
      { name: 'amount', data: [1050n, -1n, 123456789n] },
      { name: 'amount64', data: [21416n, null, -999999999999999n] },
      { name: 'amount_fixed', data: [10n ** 15n + 1n, -5n, 0n] },
      { name: 'day', data: [19724, 19753, null] },
      { name: 'at', data: [1704189600000n, null, -1n] },
      { name: 'at_us', data: [1704189600123999n, 1n, -1n] },
      { name: 'ok', data: [true, false, null] },
      { name: 'ratio', data: [0.1, null, -1e-10] },
      { name: 'memo', data: ['first', null, 'with, comma'] },
    ],
    [
      { name: 'id', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'REQUIRED' },
      { name: 'qty', type: 'INT32', ...opt },
      { name: 'big', type: 'INT64', ...opt },
      { name: 'amount', type: 'INT32', converted_type: 'DECIMAL', scale: 2, precision: 9, ...opt },
      { name: 'amount64', type: 'INT64', converted_type: 'DECIMAL', scale: 2, precision: 18, ...opt },
      {
        name: 'amount_fixed',
        type: 'FIXED_LEN_BYTE_ARRAY',
        type_length: 9,
        converted_type: 'DECIMAL',
        scale: 4,
        precision: 20,
        ...opt,
      },
      { name: 'day', type: 'INT32', converted_type: 'DATE', ...opt },
      { name: 'at', type: 'INT64', converted_type: 'TIMESTAMP_MILLIS', ...opt },
      {
        name: 'at_us',
        type: 'INT64',
        logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MICROS' },
        ...opt,
      },
      { name: 'ok', type: 'BOOLEAN', ...opt },
      { name: 'ratio', type: 'DOUBLE', ...opt },
      { name: 'memo', type: 'BYTE_ARRAY', converted_type: 'UTF8', ...opt },
    ],
  )
  await writeFile(join(dataDir, 'rows.parquet'), file)
  const res = await app.inject({
    method: 'POST',
    url: '/api/sources',
    payload: { alias: 'rows', type: 'parquet', path: 'rows.parquet' },
  })
  t.equal(res.statusCode, 201, res.body)
  t.same(
    res.json().columns.map((c: { name: string; type: string; scale?: number }) => [c.name, c.type, c.scale]),
    [
      ['id', 'string', undefined],
      ['qty', 'integer', undefined],
      ['big', 'integer', undefined],
      ['amount', 'decimal', 2],
      ['amount64', 'decimal', 2],
      ['amount_fixed', 'decimal', 4],
      ['day', 'date', undefined],
      ['at', 'timestamp', undefined],
      ['at_us', 'timestamp', undefined],
      ['ok', 'boolean', undefined],
      ['ratio', 'float', undefined],
      ['memo', 'string', undefined],
    ],
  )
  const scoped = await app.inject({ method: 'POST', url: '/api/sources/rows/load-scoped', payload: { conditions: [] } })
  t.equal(scoped.statusCode, 200, scoped.body)
  t.same(scoped.json().rows, [
    {
      id: 'A1',
      qty: 3,
      big: 1,
      amount: '10.50',
      amount64: '214.16',
      amount_fixed: '100000000000.0001',
      day: '2024-01-02',
      at: '2024-01-02T10:00:00.000Z',
      at_us: '2024-01-02T10:00:00.123Z',
      ok: true,
      ratio: 0.1,
      memo: 'first',
    },
    {
      id: 'A2',
      qty: null,
      big: 9007199254740991,
      amount: '-0.01',
      amount64: null,
      amount_fixed: '-0.0005',
      day: '2024-01-31',
      at: null,
      at_us: '1970-01-01T00:00:00.000Z',
      ok: false,
      ratio: null,
      memo: null,
    },
    {
      id: 'A3',
      qty: -7,
      big: -2,
      amount: '1234567.89',
      amount64: '-9999999999999.99',
      amount_fixed: '0.0000',
      day: null,
      at: '1969-12-31T23:59:59.999Z',
      // -1 µs floors to the millisecond before the epoch, as every loader floors
      at_us: '1969-12-31T23:59:59.999Z',
      ok: null,
      ratio: -1e-10,
      memo: 'with, comma',
    },
  ])
  const amounts = await app.inject({
    method: 'POST',
    url: '/api/sources/rows/load-scoped',
    payload: { conditions: [{ column: 'amount64', op: 'eq', value: '214.16' }] },
  })
  t.same(
    amounts.json().rows.map((r: { id: string }) => r.id),
    ['A1'],
    'a decimal compares exactly',
  )
})

t.test('values a float64 cannot keep are refused; a file that is not Parquet is refused', async (t) => {
  const { app, dataDir } = await testApp(t)
  await writeFile(
    join(dataDir, 'big.parquet'),
    await parquet(
      [{ name: 'id', data: [1n, 9007199254740993n] }],
      [{ name: 'id', type: 'INT64', repetition_type: 'REQUIRED' }],
    ),
  )
  await writeFile(join(dataDir, 'junk.parquet'), 'id,amount\nA1,1.00\n')
  const big = await app.inject({
    method: 'POST',
    url: '/api/sources',
    payload: { alias: 'big', type: 'parquet', path: 'big.parquet' },
  })
  t.equal(big.statusCode, 201, 'the footer alone is read at registration')
  const load = await app.inject({ method: 'POST', url: '/api/sources/big/load-scoped', payload: { conditions: [] } })
  t.equal(load.statusCode, 400)
  t.match(load.json(), { error: 'source_data_error', message: /column "id", row 2: an integer beyond 2\^53/ })
  const junk = await app.inject({
    method: 'POST',
    url: '/api/sources',
    payload: { alias: 'junk', type: 'parquet', path: 'junk.parquet' },
  })
  t.equal(junk.statusCode, 400)
  t.match(junk.json(), { error: 'malformed_file', suggestion: /Parquet/ })
})

t.test('row groups whose statistics rule a condition out are not read at all', async (t) => {
  const dir = t.testdir()
  const n = 1000
  const ids = Array.from({ length: n }, (_, i) => BigInt(i))
  const refs = Array.from({ length: n }, (_, i) => `REF-${String(i).padStart(5, '0')}`)
  const days = Array.from({ length: n }, (_, i) => 19_000 + Math.floor(i / 10))
  // every tenth group's note is NULL throughout
  const notes = Array.from({ length: n }, (_, i) => (Math.floor(i / 100) === 9 ? null : `note ${i % 7}`))
  const bytes = await parquet(
    [
      { name: 'id', data: ids },
      { name: 'ref', data: refs },
      { name: 'day', data: days },
      { name: 'note', data: notes },
    ],
    [
      { name: 'id', type: 'INT64', repetition_type: 'REQUIRED' },
      { name: 'ref', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'REQUIRED' },
      { name: 'day', type: 'INT32', converted_type: 'DATE', repetition_type: 'REQUIRED' },
      { name: 'note', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
    ],
    100,
  )
  // overwrite the pages of row group 3 (rows 300–399) with garbage: reading it fails from now on
  const group = parquetMetadata(new Uint8Array(bytes)).row_groups[3]
  for (const chunk of group.columns) {
    const meta = chunk.meta_data!
    const start = Number(meta.dictionary_page_offset ?? meta.data_page_offset)
    bytes.fill(0xee, start, start + Number(meta.total_compressed_size))
  }
  await writeFile(join(dir, 'ids.parquet'), bytes)
  const connector = parquetConnector(dir)
  t.teardown(() => connector.close?.())
  const source = { alias: 'ids', type: 'parquet', config: await connector.prepare({ path: 'ids.parquet' }) }
  const load = (conditions: FilterCondition[], limit?: number) =>
    connector.registerScoped(new EngineContext(), 'ids', source, conditions, { limit })
  const ids_ = (table: Awaited<ReturnType<typeof load>>['table']) =>
    Array.from({ length: table.length }, (_, i) => jsonValue(table.data[0], i))

  const cases: [FilterCondition[], number, string][] = [
    [[{ column: 'id', op: 'between', value: [500, 520] }], 21, '1 of 10'],
    [[{ column: 'id', op: 'gt', value: 899.5 }], 100, '1 of 10'],
    [[{ column: 'id', op: 'in', value: [5, 105, 705] }], 3, '3 of 10'],
    [[{ column: 'ref', op: 'like', value: 'REF-006%' }], 100, '1 of 10'],
    [[{ column: 'ref', op: 'lt', value: 'REF-00100' }], 100, '1 of 10'],
    [[{ column: 'day', op: 'gte', value: '2022-03-28' }], 210, '3 of 10'],
    [
      [
        { column: 'id', op: 'lt', value: 250 },
        { column: 'day', op: 'gte', value: '2022-01-18' },
      ],
      150,
      '2 of 10',
    ],
    [
      [
        { column: 'id', op: 'gte', value: 400 },
        { column: 'note', op: 'neq', value: 'x' },
      ],
      500,
      '5 of 10', // group 9: its note is NULL throughout
    ],
  ]
  for (const [conditions, rows, read] of cases) {
    const scoped = await load(conditions)
    t.equal(scoped.totalRows, rows, JSON.stringify(conditions))
    t.match(scoped.nativeQuery.description, `(row groups read: ${read})`)
  }
  const first = await load([{ column: 'id', op: 'between', value: [500, 502] }])
  t.same(ids_(first.table), [500, 501, 502])
  await t.rejects(load([{ column: 'id', op: 'eq', value: 350 }]), { code: 'malformed_file' }, 'group 3 is garbage')
  const preview = await load([], 5)
  t.equal(preview.totalRows, n, 'every row counted from the footer')
  t.same(ids_(preview.table), [0, 1, 2, 3, 4])
})

t.test('a file DuckDB wrote (ZSTD, 2,048-row groups) selects what DuckDB selects', async (t) => {
  const dir = t.testdir()
  const path = join(dir, 'duck.parquet')
  const duck = await DuckDBInstance.create(':memory:')
  const db = await duck.connect()
  t.teardown(() => {
    db.closeSync()
    duck.closeSync()
  })
  await db.run(`COPY (
      SELECT i AS id,
             CAST(CAST((i * 7919) % 2000000 - 500000 AS DECIMAL(18,0)) * 0.01 AS DECIMAL(12,2)) AS amount,
             DATE '2024-01-01' + CAST(i / 500 AS INTEGER) AS day,
             TIMESTAMP '2024-01-01 00:00:00' + INTERVAL (i * 37) SECOND AS posted_at,
             CASE WHEN i % 11 = 0 THEN NULL ELSE 'acct-' || (i % 97) END AS account
      FROM range(20000) t(i)
    ) TO '${path}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 2048)`)
  t.equal(await readFile(path).then((b) => b.subarray(0, 4).toString()), 'PAR1')
  const connector = parquetConnector(dir)
  t.teardown(() => connector.close?.())
  const source = { alias: 'duck', type: 'parquet', config: await connector.prepare({ path: 'duck.parquet' }) }
  t.same(
    (await connector.describe(source)).map((c) => c.type),
    ['integer', 'decimal', 'date', 'timestamp', 'string'],
  )
  const cases: [FilterCondition[], string][] = [
    [[], 'TRUE'],
    [[{ column: 'id', op: 'between', value: [4000, 4100] }], 'id BETWEEN 4000 AND 4100'],
    [[{ column: 'amount', op: 'gte', value: '14000.5' }], 'amount >= 14000.5'],
    [[{ column: 'amount', op: 'lt', value: '-4999.995' }], 'amount < -4999.995'],
    [[{ column: 'day', op: 'eq', value: '2024-01-20' }], "day = DATE '2024-01-20'"],
    [
      [{ column: 'posted_at', op: 'between', value: ['2024-01-02T00:00:00Z', '2024-01-02T06:00:00Z'] }],
      "posted_at BETWEEN TIMESTAMP '2024-01-02 00:00:00' AND TIMESTAMP '2024-01-02 06:00:00'",
    ],
    [[{ column: 'account', op: 'like', value: 'acct-9%' }], "account LIKE 'acct-9%'"],
    [[{ column: 'account', op: 'neq', value: 'acct-1' }], "account <> 'acct-1'"],
    [
      [
        { column: 'id', op: 'gte', value: 15000 },
        { column: 'account', op: 'in', value: ['acct-3', 'acct-4'] },
      ],
      "id >= 15000 AND account IN ('acct-3', 'acct-4')",
    ],
  ]
  for (const [conditions, where] of cases) {
    const scoped = await connector.registerScoped(new EngineContext(), 'duck', source, conditions)
    const amountCol = scoped.table.data[1]
    let units = 0
    for (let i = 0; i < scoped.table.length; i++) units += amountCol.type === 'decimal' ? amountCol.values[i] : 0
    const [[count, sum]] = (
      await db.runAndReadAll(
        `SELECT count(*)::INTEGER, coalesce(sum(amount), 0.00)::DECIMAL(18,2)::VARCHAR FROM '${path}' WHERE ${where}`,
      )
    ).getRows() as [[number, string]]
    t.equal(scoped.totalRows, count, `${where}: rows`)
    t.equal(formatDecimal(units, 2), sum, `${where}: sum of amounts, to the cent`)
  }
  const narrow = await connector.registerScoped(new EngineContext(), 'duck', source, [
    { column: 'id', op: 'eq', value: 12345 },
  ])
  t.match(narrow.nativeQuery.description, /row groups read: 1 of 10/)
})

t.test('every codec and page layout DuckDB writes reads back value for value as DuckDB reads it', async (t) => {
  const dir = t.testdir()
  const duck = await DuckDBInstance.create(':memory:')
  const db = await duck.connect()
  t.teardown(() => {
    db.closeSync()
    duck.closeSync()
  })
  // NULLs every few rows, dictionary-friendly and unique strings, every width of integer and
  // decimal, three timestamp units with sub-millisecond parts, a list (read as JSON text)
  const select = `SELECT i::BIGINT AS id,
      CASE WHEN i % 7 = 0 THEN NULL ELSE (i * 37 % 1000) - 500 END::INTEGER AS qty,
      (i * 3)::UINTEGER AS u32,
      (i * 1099511627)::UBIGINT AS u64,
      i * 1099511627 - 2199023255552 AS wide,
      CASE WHEN i % 5 = 0 THEN NULL ELSE ((i * 7919) % 200000 - 100000) * 0.01 END::DECIMAL(12,2) AS amount,
      ((i * 104729) % 100000000 - 50000000) * 0.0001::DECIMAL(30,4) AS big_amount,
      ((i % 300) * 0.1)::DECIMAL(4,1) AS small_amount,
      CASE WHEN i % 9 = 0 THEN NULL ELSE DATE '2023-12-25' + (i % 400)::INTEGER END AS day,
      TIMESTAMP '2024-01-01 00:00:00' + to_microseconds(i * 1000003) AS at_us,
      (TIMESTAMP '2024-01-01 00:00:00' + to_microseconds(i * 999))::TIMESTAMP_MS AS at_ms,
      (TIMESTAMP '2024-01-01 00:00:00' + to_microseconds(i * 1234567))::TIMESTAMP_NS AS at_ns,
      CASE WHEN i % 4 = 0 THEN NULL ELSE i % 3 = 0 END AS flag,
      (i * 0.5)::FLOAT AS ratio,
      (i / 3.0)::DOUBLE AS share,
      CASE WHEN i % 6 = 0 THEN NULL ELSE 'acct-' || (i % 13) END AS account,
      'memo ' || i || ' ' || repeat('x', i % 11) AS memo,
      CASE WHEN i % 8 = 0 THEN NULL ELSE ['t' || (i % 3), 't' || (i % 5)] END AS tags
    FROM range(5000) r(i)`
  const rows = (await db.runAndReadAll(`SELECT * FROM (${select}) ORDER BY id`)).getRowObjectsJson()
  const expected = rows.map((r) => [
    Number(r.id),
    r.qty === null ? null : Number(r.qty),
    Number(r.u32),
    Number(r.u64),
    Number(r.wide),
    r.amount,
    r.big_amount,
    r.small_amount,
    r.day,
    r.at_us,
    r.at_ms,
    r.at_ns,
    r.flag,
    Number(r.ratio),
    Number(r.share),
    r.account,
    r.memo,
    r.tags === null ? null : JSON.stringify(r.tags),
  ])
  const timestampMs = (text: unknown) =>
    text === null ? null : Math.floor(Date.parse(`${String(text).slice(0, 23)}Z`))
  const variants = [
    'COMPRESSION uncompressed',
    'COMPRESSION snappy',
    'COMPRESSION gzip',
    'COMPRESSION zstd',
    'COMPRESSION brotli',
    'COMPRESSION lz4',
    'COMPRESSION zstd, PARQUET_VERSION v2',
    'COMPRESSION snappy, PARQUET_VERSION v2, ROW_GROUP_SIZE 1000',
  ]
  const connector = parquetConnector(dir)
  t.teardown(() => connector.close?.())
  for (const [v, options] of variants.entries()) {
    const path = join(dir, `v${v}.parquet`)
    await db.run(`COPY (${select}) TO '${path}' (FORMAT parquet, ${options})`)
    const source = { alias: 'v', type: 'parquet', config: await connector.prepare({ path: `v${v}.parquet` }) }
    const { table } = await connector.registerScoped(new EngineContext(), 'v', source, [])
    t.equal(table.length, 5000, `${options}: rows`)
    t.same(
      table.columns.map((c) => c.type),
      [
        'integer',
        'integer',
        'integer',
        'integer',
        'integer',
        'decimal',
        'decimal',
        'decimal',
        'date',
        'timestamp',
        'timestamp',
        'timestamp',
        'boolean',
        'float',
        'float',
        'string',
        'string',
        'string',
      ],
      `${options}: types`,
    )
    const mismatches: string[] = []
    for (let i = 0; i < table.length && mismatches.length < 5; i++) {
      const got = table.data.map((col) => {
        const value = jsonValue(col, i)
        return value !== null && col.type === 'timestamp' ? col.values[i] : value
      })
      const want = expected[i].map((x, c) => (c >= 9 && c <= 11 ? timestampMs(x) : x))
      if (JSON.stringify(got) !== JSON.stringify(want))
        mismatches.push(`row ${i}: ${JSON.stringify(got)} != ${JSON.stringify(want)}`)
    }
    t.same(mismatches, [], `${options}: every value as DuckDB reads it`)
    const limited = await connector.registerScoped(new EngineContext(), 'v', source, [], { limit: 2500 })
    t.equal(limited.table.length, 2500, `${options}: a limit across row groups`)
    t.equal(jsonValue(limited.table.data[16], 2499), expected[2499][16], `${options}: the limit's last row`)
  }
})
