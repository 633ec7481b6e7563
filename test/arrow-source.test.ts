// Arrow IPC files as sources (issue 19 item 3, in part): registered by path like any file, typed
// as the file says, read the same as the CSV they were written from; integers beyond 2^53 are
// refused rather than rounded. (The filters' semantics across connectors, Arrow included, are
// checked property-based in filter-differential.test.ts.)

import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { makeVector, Table as ArrowTable, tableFromIPC, tableToIPC } from 'apache-arrow'
import t from 'tap'
import { toArrowTable } from '../src/engine/data/arrow.js'
import { loadCsv } from '../src/engine/load/csv/index.js'
import { testApp } from './helpers/app.js'

const CSV =
  'id,amount,day,at,qty,ok,memo\n' +
  'A1,10.50,2024-01-02,2024-01-02T10:00:00Z,3,true,first\n' +
  'A2,-0.01,2024-01-31,2024-01-31T23:59:59Z,,false,\n' +
  'A3,1234567.89,2024-02-01,2024-02-01T00:00:00Z,7,true,"with, comma"\n'

t.test('an Arrow IPC file registers, previews and loads a scope as the CSV it came from', async (t) => {
  const { app, dataDir } = await testApp(t, { files: { 'rows.csv': CSV } })
  const typed = await loadCsv(join(dataDir, 'rows.csv'))
  await writeFile(join(dataDir, 'rows.arrow'), tableToIPC(toArrowTable(typed.table), 'file'))
  const register = (alias: string, path: string, type: string) =>
    app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type, path } })
  t.equal((await register('fromcsv', 'rows.csv', 'csv')).statusCode, 201)
  const arrow = await register('fromarrow', 'rows.arrow', 'arrow')
  t.equal(arrow.statusCode, 201, arrow.body)
  const csvColumns = (await app.inject({ method: 'GET', url: '/api/sources/fromcsv' })).json().columns
  t.same(
    arrow.json().columns.map((c: { name: string; type: string }) => [c.name, c.type]),
    csvColumns.map((c: { name: string; type: string }) => [c.name, c.type]),
    'the types the CSV was read with',
  )
  const preview = async (alias: string) =>
    (await app.inject({ method: 'GET', url: `/api/sources/${alias}/preview` })).json().rows
  t.same(await preview('fromarrow'), await preview('fromcsv'))
  const scope = async (alias: string) =>
    (
      await app.inject({
        method: 'POST',
        url: `/api/sources/${alias}/load-scoped`,
        payload: {
          conditions: [
            { column: 'amount', op: 'gte', value: '0' },
            { column: 'day', op: 'lt', value: '2024-02-01' },
          ],
        },
      })
    ).json()
  const [a, c] = [await scope('fromarrow'), await scope('fromcsv')]
  t.equal(a.total_rows, 1)
  t.same(a.rows, c.rows)
})

t.test('an integer beyond 2^53 is refused, not rounded', async (t) => {
  const { app, dataDir } = await testApp(t)
  const big = new ArrowTable({ id: makeVector(BigInt64Array.from([1n, 9007199254740993n])) })
  await writeFile(join(dataDir, 'big.arrow'), tableToIPC(big, 'file'))
  await writeFile(join(dataDir, 'junk.arrow'), 'not arrow at all')
  const res = await app.inject({
    method: 'POST',
    url: '/api/sources',
    payload: { alias: 'big', type: 'arrow', path: 'big.arrow' },
  })
  t.equal(res.statusCode, 400)
  t.match(res.json(), { error: 'source_data_error', message: /column "id", row 2/ })
  const junk = await app.inject({
    method: 'POST',
    url: '/api/sources',
    payload: { alias: 'junk', type: 'arrow', path: 'junk.arrow' },
  })
  t.equal(junk.statusCode, 400)
  t.equal(junk.json().error, 'malformed_file')
  t.equal((await app.inject({ method: 'GET', url: '/api/sources' })).json().sources.length, 0, 'nothing registered')
})

t.test('a loaded scope is handed out as an Arrow IPC stream, batch by batch', async (t) => {
  const rows = Array.from(
    { length: 80_000 },
    (_, i) => `R${i},${(i % 1000) / 100},2024-01-${String((i % 28) + 1).padStart(2, '0')}`,
  )
  const { app } = await testApp(t, { files: { 'big.csv': `id,amount,day\n${rows.join('\n')}\n` } })
  await app.inject({ method: 'POST', url: '/api/sources', payload: { alias: 'big', type: 'csv', path: 'big.csv' } })
  const none = await app.inject({ method: 'GET', url: '/api/sources/big/scoped' })
  t.equal(none.statusCode, 409)
  t.equal(none.json().error, 'scope_not_loaded')
  t.equal((await app.inject({ method: 'GET', url: '/api/sources/nope/scoped' })).statusCode, 404)

  const loaded = await app.inject({
    method: 'POST',
    url: '/api/sources/big/load-scoped',
    payload: { conditions: [{ column: 'amount', op: 'gte', value: '1.00' }] },
  })
  const total = loaded.json().total_rows
  t.ok(total > 65_536, `${total} rows: more than one batch`)
  const res = await app.inject({ method: 'GET', url: '/api/sources/big/scoped' })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], 'application/vnd.apache.arrow.stream')
  const table = tableFromIPC(res.rawPayload)
  t.equal(table.numRows, total)
  t.ok(table.batches.length >= 2)
  t.same(
    table.schema.fields.map((f) => [f.name, String(f.type)]),
    [
      ['id', 'Utf8'],
      ['amount', 'Decimal[38e+2]'],
      ['day', 'Date32<DAY>'],
    ].map(([n, ty]) => [n, ty]),
  )
  t.equal(String(table.getChild('id')!.get(total - 1)), 'R79999', 'every batch, in order')
  t.equal(String(table.getChild('amount')!.get(0)), '100', 'R100: 1.00 as 100 units at scale 2')

  // an empty scope is a stream with the schema and no rows
  await app.inject({
    method: 'POST',
    url: '/api/sources/big/load-scoped',
    payload: { conditions: [{ column: 'amount', op: 'gt', value: '100' }] },
  })
  const empty = tableFromIPC((await app.inject({ method: 'GET', url: '/api/sources/big/scoped' })).rawPayload)
  t.equal(empty.numRows, 0)
  t.same(
    empty.schema.fields.map((f) => f.name),
    ['id', 'amount', 'day'],
  )
})

t.test(
  'a loaded scope is an apache-arrow Table whose batches share the engine’s string, date and float arrays',
  async (t) => {
    const n = 70_000
    const lines = Array.from(
      { length: n },
      (_, i) =>
        `K${i},${i % 3 === 0 ? '' : ((i % 9000) - 4500) / 100},2024-0${(i % 9) + 1}-1${i % 10},${i / 7},${i % 5},${i % 2 === 0}`,
    )
    const dir = t.testdir({ 'rows.csv': `key,amount,day,ratio,qty,ok\n${lines.join('\n')}\n` })
    const { table } = await loadCsv(join(dir, 'rows.csv'))
    const arrow = toArrowTable(table, 32_768)
    t.equal(arrow.numRows, n)
    t.equal(arrow.batches.length, 3, '32,768-row record batches')
    t.same(
      arrow.schema.fields.map((f) => `${f.name}:${String(f.type)}`),
      ['key:Utf8', 'amount:Decimal[38e+2]', 'day:Date32<DAY>', 'ratio:Float64', 'qty:Int64', 'ok:Bool'],
    )
    const [key, , day, ratio] = table.data
    for (const batch of arrow.batches) {
      // zero-copy: the batch's buffers are the loaded columns' own memory
      t.equal(batch.getChildAt(0)!.data[0].values.buffer, key.type === 'string' && key.data.buffer, 'strings shared')
      t.equal(batch.getChildAt(2)!.data[0].values.buffer, day.type === 'date' && day.values.buffer, 'dates shared')
      t.equal(
        batch.getChildAt(3)!.data[0].values.buffer,
        ratio.type === 'float' && ratio.values.buffer,
        'floats shared',
      )
    }
    // every row reads back as the engine holds it, across batch boundaries
    const mismatches: string[] = []
    for (const i of [0, 1, 32_767, 32_768, 32_769, 65_535, 65_536, n - 1]) {
      const row = arrow.get(i)!
      const got = [row.key, row.amount === null ? null : String(row.amount), row.day, row.ratio, row.qty, row.ok]
      const want = [
        `K${i}`,
        i % 3 === 0 ? null : String((i % 9000) - 4500),
        Date.UTC(2024, i % 9, 10 + (i % 10)),
        i / 7,
        BigInt(i % 5),
        i % 2 === 0,
      ]
      if (got.some((v, k) => v !== want[k])) mismatches.push(`${i}: ${got.map(String).join(',')}`)
    }
    t.same(mismatches, [])
    t.equal(
      toArrowTable({ ...table, length: 0, data: table.data.map((c) => ({ ...c, length: 0 })) as never }).numRows,
      0,
    )
  },
)
