// The sources API end to end through inject(): registration, description, preview, scoped
// loading, deletion, and the error replies of each.

import { readdir, readFile, symlink } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { offThreadLoads } from '../src/sources/load-thread.js'
import { datasetsDir, datasetsSkip, testApp } from './helpers/app.js'

const invoicesJson = JSON.stringify([
  { id: 'A1', amount: '100.10', booked: '2024-01-05', paid: true, note: null },
  { id: 'A2', amount: 250, booked: '2024-01-20', paid: false, note: 'half "quoted"' },
  { id: 'A3', amount: '99.999', booked: '2024-02-01', paid: true },
  { id: 'A4', amount: '-5', booked: '2023-12-31', paid: false, note: "it's" },
])

t.test('register, describe, preview, scope and delete a JSON file source', async (t) => {
  const { app } = await testApp(t, { files: { 'inv.json': invoicesJson } })
  const created = await app.inject({
    method: 'POST',
    url: '/api/sources',
    payload: { alias: 'inv', type: 'json', path: 'inv.json' },
  })
  t.equal(created.statusCode, 201, created.body)
  const source = created.json()
  t.same(source.config, { path: 'inv.json' })
  t.same(
    source.columns.map((c: { name: string; type: string; scale?: number }) => [c.name, c.type, c.scale]),
    [
      ['id', 'string', undefined],
      ['amount', 'decimal', 3],
      ['booked', 'date', undefined],
      ['paid', 'boolean', undefined],
      ['note', 'string', undefined],
    ],
  )

  const list = await app.inject({ method: 'GET', url: '/api/sources' })
  t.same(
    list.json().sources.map((s: { alias: string }) => s.alias),
    ['inv'],
  )

  const preview = await app.inject({ method: 'GET', url: '/api/sources/inv/preview?limit=2' })
  t.equal(preview.statusCode, 200)
  t.same(preview.json().rows, [
    { id: 'A1', amount: '100.100', booked: '2024-01-05', paid: true, note: null },
    { id: 'A2', amount: '250.000', booked: '2024-01-20', paid: false, note: 'half "quoted"' },
  ])
  t.equal(preview.json().total_rows, 4)

  const scoped = await app.inject({
    method: 'POST',
    url: '/api/sources/inv/load-scoped',
    payload: {
      conditions: [
        { column: 'booked', op: 'between', value: ['2024-01-01', '2024-01-31'] },
        { column: 'amount', op: 'gte', value: '100.1' },
      ],
    },
  })
  t.equal(scoped.statusCode, 200, scoped.body)
  const body = scoped.json()
  t.equal(body.total_rows, 2)
  t.equal(body.loaded_rows, 2)
  t.same(
    body.rows.map((r: { id: string }) => r.id),
    ['A1', 'A2'],
  )
  t.equal(body.native_query.language, 'engine')
  t.equal(app.sources.engine('default').get('inv')?.table.length, 2, 'the scoped table stays registered in the engine')

  const limited = await app.inject({
    method: 'POST',
    url: '/api/sources/inv/load-scoped',
    payload: { conditions: [{ column: 'paid', op: 'eq', value: false }], limit: 1, preview: 0 },
  })
  t.same([limited.json().total_rows, limited.json().loaded_rows, limited.json().preview_rows], [2, 1, 0])

  const del = await app.inject({ method: 'DELETE', url: '/api/sources/inv' })
  t.equal(del.statusCode, 204)
  t.equal(app.sources.engine('default').get('inv'), undefined, 'deleting a source drops its scoped table')
  const gone = await app.inject({ method: 'GET', url: '/api/sources/inv' })
  t.equal(gone.statusCode, 404)
  t.equal(gone.json().error, 'source_not_found')
})

t.test('errors are coded replies and change nothing', async (t) => {
  const { app, dataDir } = await testApp(t, {
    files: { 'inv.json': invoicesJson, 'broken.json': '[{"a": 1},\n{"a": 2,,}]', 'lines.ndjson': '{"a":1}\n{"a":\n' },
  })
  const post = (payload: object) => app.inject({ method: 'POST', url: '/api/sources', payload })
  t.equal((await post({ alias: 'inv', type: 'json', path: 'inv.json' })).statusCode, 201)

  const dup = await post({ alias: 'inv', type: 'json', path: 'inv.json' })
  t.equal(dup.statusCode, 409)
  t.equal(dup.json().error, 'duplicate_alias')

  const broken = await post({ alias: 'broken', type: 'json', path: 'broken.json' })
  t.equal(broken.statusCode, 400)
  t.equal(broken.json().error, 'malformed_file')
  t.match(broken.json().message, /line 2/)

  const lines = await post({ alias: 'lines', type: 'json', path: 'lines.ndjson' })
  t.equal(lines.json().error, 'malformed_file')
  t.match(lines.json().message, /line 2/)

  const missing = await post({ alias: 'nofile', type: 'json', path: 'nope.json' })
  t.equal(missing.json().error, 'file_not_found')

  const outside = await post({ alias: 'escape', type: 'json', path: '../../../etc/passwd' })
  t.equal(outside.statusCode, 400)
  t.match(outside.json().error, /path_outside_data_dir|file_not_found/)
  await symlink('/etc/hostname', join(dataDir, 'link.json'))
  const linked = await post({ alias: 'linked', type: 'json', path: 'link.json' })
  t.equal(linked.json().error, 'path_outside_data_dir', 'a symlink out of the data folder is refused')

  const badType = await post({ alias: 'x', type: 'excel', path: 'inv.json' })
  t.equal(badType.json().error, 'unknown_source_type')
  t.match(badType.json().suggestion, /arrow, csv, json, parquet, postgres/)

  const badAlias = await post({ alias: '1; drop', type: 'json', path: 'inv.json' })
  t.equal(badAlias.statusCode, 400)

  const noPath = await post({ alias: 'nopath', type: 'json' })
  t.equal(noPath.json().error, 'invalid_source_config')

  const list = await app.inject({ method: 'GET', url: '/api/sources' })
  t.same(
    list.json().sources.map((s: { alias: string }) => s.alias),
    ['inv'],
    'failed registrations left nothing',
  )

  const unknown = await app.inject({ method: 'GET', url: '/api/sources/invv' })
  t.equal(unknown.statusCode, 404)
  t.match(unknown.json().suggestion, /"inv"/)

  const load = (payload: object) => app.inject({ method: 'POST', url: '/api/sources/inv/load-scoped', payload })
  const badColumn = await load({ conditions: [{ column: 'amout', op: 'gt', value: 1 }] })
  t.equal(badColumn.statusCode, 400)
  t.same(badColumn.json(), {
    error: 'unknown_column',
    message: 'unknown column "amout"',
    suggestion: 'did you mean "amount"?',
  })

  const badValue = await load({ conditions: [{ column: 'booked', op: 'gt', value: 'yesterday' }] })
  t.equal(badValue.json().error, 'invalid_filter')
  const badOp = await load({ conditions: [{ column: 'amount', op: 'like', value: '1%' }] })
  t.equal(badOp.json().error, 'invalid_filter')
  const badShape = await load({ conditions: [{ column: 'amount', op: 'eq', value: 1, extra: true }] })
  t.equal(badShape.json().error, 'invalid_request', 'unknown fields are refused, not dropped')
  t.equal(app.sources.engine('default').get('inv'), undefined, 'failed loads register nothing')

  const ok = await load({ conditions: [{ column: 'id', op: 'eq', value: "A1' OR '1'='1" }] })
  t.equal(ok.json().total_rows, 0, 'a quoted value is a value')
})

t.test('upload a file via multipart', async (t) => {
  const { app, dataDir } = await testApp(t)
  const boundary = '----concord'
  const payload = [
    `--${boundary}`,
    'Content-Disposition: form-data; name="alias"',
    '',
    'up',
    `--${boundary}`,
    'Content-Disposition: form-data; name="file"; filename="rows.json"',
    'Content-Type: application/json',
    '',
    invoicesJson,
    `--${boundary}--`,
    '',
  ].join('\r\n')
  const res = await app.inject({
    method: 'POST',
    url: '/api/sources',
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    payload,
  })
  t.equal(res.statusCode, 201, res.body)
  t.equal(res.json().type, 'json')
  const path = res.json().config.path as string
  t.match(path, /^uploads\/default\/[^/]+\.json$/, "uploads are kept in the workspace's folder")
  t.equal(await readFile(join(dataDir, path), 'utf8'), invoicesJson)
  const scoped = await app.inject({ method: 'POST', url: '/api/sources/up/load-scoped', payload: { conditions: [] } })
  t.equal(scoped.json().total_rows, 4)
  await app.inject({ method: 'DELETE', url: '/api/sources/up' })
  await t.rejects(readFile(join(dataDir, path)), 'the uploaded file is removed with its source')
})

t.test("the service's own files are not sources: db/, runs/, other workspaces' uploads", async (t) => {
  const csv = 'id,amount\nA1,1.00\n'
  const { app, dataDir } = await testApp(t, {
    dataDir: t.testdir({
      db: { 'pg_data.csv': csv },
      runs: { r1: { 'matches.csv': csv } },
      uploads: { globex: { 'theirs.csv': csv }, default: { 'mine.csv': csv } },
      'ok.csv': csv,
    }),
  })
  await symlink(join(dataDir, 'runs', 'r1', 'matches.csv'), join(dataDir, 'innocent.csv'))
  const register = (alias: string, path: string) =>
    app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type: 'csv', path } })
  for (const path of [
    'db/pg_data.csv',
    'runs/r1/matches.csv',
    join(dataDir, 'runs/r1/matches.csv'),
    'uploads/globex/theirs.csv',
    'uploads/default/../globex/theirs.csv',
    'innocent.csv',
  ]) {
    const res = await register('x', path)
    t.equal(res.statusCode, 400, path)
    t.match(res.json(), { error: 'path_reserved', suggestion: /db\/, runs\// }, path)
  }
  t.equal((await register('mine', 'uploads/default/mine.csv')).statusCode, 201, "the workspace's own upload is fine")
  t.equal((await register('ok', 'ok.csv')).statusCode, 201)
  t.same(
    (await app.inject({ method: 'GET', url: '/api/sources' })).json().sources.map((s: { alias: string }) => s.alias),
    ['mine', 'ok'],
  )
})

t.test('an upload refused by validation, the connector or a duplicate alias leaves no file', async (t) => {
  const { app, dataDir } = await testApp(t, { files: { 'ok.csv': 'id\nA\n' } })
  await app.inject({ method: 'POST', url: '/api/sources', payload: { alias: 'taken', type: 'csv', path: 'ok.csv' } })
  const upload = (alias: string, body: string) => {
    const boundary = '----concord'
    const payload = [
      `--${boundary}`,
      'Content-Disposition: form-data; name="alias"',
      '',
      alias,
      `--${boundary}`,
      'Content-Disposition: form-data; name="file"; filename="rows.json"',
      '',
      body,
      `--${boundary}--`,
      '',
    ].join('\r\n')
    return app.inject({
      method: 'POST',
      url: '/api/sources',
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload,
    })
  }
  t.match((await upload('1bad', invoicesJson)).json(), { error: 'invalid_request' }, 'alias fails validation')
  t.equal((await upload('taken', invoicesJson)).statusCode, 409, 'duplicate alias')
  t.equal((await upload('broken', '[{"a": ')).statusCode, 400, 'not JSON')
  t.same(await readdir(join(dataDir, 'uploads', 'default')), [], 'no file is left behind')
  t.equal((await upload('good', invoicesJson)).statusCode, 201)
  t.equal((await readdir(join(dataDir, 'uploads', 'default'))).length, 1)
})

t.test('acquirer settlement JSON loads with the right types and count', { skip: datasetsSkip }, async (t) => {
  // The datasets folder is the data folder here: files are read in place, never copied.
  const { app } = await testApp(t, { dataDir: datasetsDir })
  const res = await app.inject({
    method: 'POST',
    url: '/api/sources',
    payload: { alias: 'settlement', type: 'json', path: 'acquirer-settlement/acquirer-settlement.json' },
  })
  t.equal(res.statusCode, 201, res.body)
  const types = Object.fromEntries(
    res
      .json()
      .columns.map((c: { name: string; type: string; scale?: number }) => [
        c.name,
        c.scale === undefined ? c.type : `${c.type}(${c.scale})`,
      ]),
  )
  t.equal(types.gross_amount, 'decimal(2)')
  t.equal(types.net_amount, 'decimal(2)')
  t.equal(types.settlement_date, 'date')
  t.equal(types.order_id, 'string')
  const scoped = await app.inject({
    method: 'POST',
    url: '/api/sources/settlement/load-scoped',
    payload: { conditions: [{ column: 'settlement_date', op: 'between', value: ['2026-01-01', '2026-01-31'] }] },
  })
  const all = await app.inject({ method: 'POST', url: '/api/sources/settlement/load-scoped', payload: {} })
  t.equal(all.json().total_rows, 1000)
  t.ok(scoped.json().total_rows > 0 && scoped.json().total_rows < 1000)
})

t.test('kalla CSVs scoped by date range and amount give the expected rows', { skip: datasetsSkip }, async (t) => {
  const { app } = await testApp(t, { dataDir: datasetsDir })
  const { parse } = await import('csv-parse/sync')
  for (const [alias, file, dateCol, amountCol] of [
    ['invoices', 'kalla/invoices.csv', 'invoice_date', 'amount'],
    ['payments', 'kalla/payments.csv', 'payment_date', 'paid_amount'],
  ]) {
    const res = await app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type: 'csv', path: file } })
    t.equal(res.statusCode, 201, res.body)
    const conditions = [
      { column: dateCol, op: 'between', value: ['2024-01-15', '2024-02-20'] },
      { column: amountCol, op: 'gte', value: '5000' },
    ]
    const scoped = await app.inject({
      method: 'POST',
      url: `/api/sources/${alias}/load-scoped`,
      payload: { conditions, preview: 1000 },
    })
    t.equal(scoped.statusCode, 200, scoped.body)
    // An independent reference: csv-parse and plain comparisons on the text.
    const records = parse(await readFile(join(datasetsDir, file)), { columns: true }) as Record<string, string>[]
    const expected = records
      .filter((r) => r[dateCol] >= '2024-01-15' && r[dateCol] <= '2024-02-20' && Number(r[amountCol]) >= 5000)
      .map((r) => Object.values(r)[0])
    t.ok(
      expected.length > 0 && expected.length < records.length,
      `${alias}: the scope selects ${expected.length} of ${records.length}`,
    )
    t.same(
      scoped.json().rows.map((r: Record<string, unknown>) => Object.values(r)[0]),
      expected,
    )
    t.equal(scoped.json().total_rows, expected.length)
  }
})

t.test('a PostgreSQL source over the API: pushdown shown, password never returned', async (t) => {
  const { testDatabase } = await import('./helpers/pg.js')
  const db = await testDatabase(t)
  await db.query('CREATE TABLE bank (txn_id text PRIMARY KEY, amount numeric(10,2), booked date)')
  await db.query(
    `INSERT INTO bank VALUES ('T1', 10.00, '2024-01-02'), ('T2', 99.99, '2024-01-20'), ('T3', 100.00, '2024-02-01')`,
  )
  const { app } = await testApp(t, { env: { CONCORD_SECRET_KEY: 'ab'.repeat(32) } })
  const planted = 'planted-secret-9f2'
  const url = new URL(db.url)
  url.password = planted // trust auth ignores it; it must still never come back
  const res = await app.inject({
    method: 'POST',
    url: '/api/sources',
    payload: { alias: 'bank', type: 'postgres', connection_string: url.toString(), schema: db.schema, table: 'bank' },
  })
  t.equal(res.statusCode, 201, res.body)
  t.notMatch(res.body, planted)
  t.match(res.json().config, { connection: /^postgresql:\/\/postgres@/, password: 'stored encrypted' })
  const scoped = await app.inject({
    method: 'POST',
    url: '/api/sources/bank/load-scoped',
    payload: { conditions: [{ column: 'amount', op: 'between', value: ['10', '99.99'] }], limit: 1 },
  })
  t.equal(scoped.statusCode, 200, scoped.body)
  const body = scoped.json()
  t.same([body.total_rows, body.loaded_rows], [2, 1])
  t.equal(body.native_query.language, 'postgresql')
  t.match(body.native_query.sql, /WHERE "amount" BETWEEN \$1::numeric AND \$2::numeric$/)
  t.same(body.native_query.params, ['10', '99.99'])
  for (const path of ['/api/sources', '/api/sources/bank']) t.notMatch((await app.inject(path)).body, planted)

  const down = await app.inject({
    method: 'POST',
    url: '/api/sources',
    payload: {
      alias: 'down',
      type: 'postgres',
      connection_string: `postgresql://u:${planted}@127.0.0.1:1/x`,
      table: 't',
    },
  })
  t.equal(down.statusCode, 502)
  t.equal(down.json().error, 'source_unreachable')
  t.notMatch(down.body, planted)
})

t.test('a large file is parsed on the load thread: the same table, its errors as coded replies', async (t) => {
  // above OFF_THREAD_MIN_BYTES (4 MiB): parsed by sources/load-worker.ts, its columns moved back
  const n = 150_000
  const lines = ['id,amount,booked,note']
  for (let i = 0; i < n; i++)
    lines.push(
      `R${i},${(i % 1000) + 0.25},2024-01-${String((i % 28) + 1).padStart(2, '0')},${i % 7 ? `n${i}` : 'café ü'}`,
    )
  const big = `${lines.join('\n')}\n`
  t.ok(big.length > 4 * 1024 * 1024, `${big.length} bytes`)
  // an unterminated quote near the end: found by the thread, refused as on any other thread
  const broken = `${big}R-last,1.00,2024-01-01,"open\n`
  const { app } = await testApp(t, { files: { 'big.csv': big, 'broken.csv': broken } })
  const before = offThreadLoads.count
  const created = await app.inject({
    method: 'POST',
    url: '/api/sources',
    payload: { alias: 'big', type: 'csv', path: 'big.csv' },
  })
  t.equal(created.statusCode, 201, created.body)
  t.same(
    created.json().columns.map((c: { name: string; type: string }) => [c.name, c.type]),
    [
      ['id', 'string'],
      ['amount', 'decimal'],
      ['booked', 'date'],
      ['note', 'string'],
    ],
  )
  const scoped = await app.inject({
    method: 'POST',
    url: '/api/sources/big/load-scoped',
    payload: { conditions: [{ column: 'amount', op: 'gte', value: '500' }], preview: 2 },
  })
  t.equal(scoped.statusCode, 200, scoped.body)
  t.equal(scoped.json().total_rows, n / 2, 'every row with amount >= 500')
  t.same(scoped.json().rows, [
    { id: 'R500', amount: '500.25', booked: '2024-01-25', note: 'n500' },
    { id: 'R501', amount: '501.25', booked: '2024-01-26', note: 'n501' },
  ])
  const unicode = await app.inject({
    method: 'POST',
    url: '/api/sources/big/load-scoped',
    payload: { conditions: [{ column: 'note', op: 'eq', value: 'café ü' }], preview: 1 },
  })
  t.equal(unicode.json().total_rows, Math.ceil(n / 7), 'text decoded as it was written')

  const refused = await app.inject({
    method: 'POST',
    url: '/api/sources',
    payload: { alias: 'broken', type: 'csv', path: 'broken.csv' },
  })
  t.equal(refused.statusCode, 400, refused.body)
  t.match(refused.json(), { error: 'malformed_file', message: new RegExp(`^line ${n + 2}: `), suggestion: /quoting/ })
  t.equal((await app.inject({ method: 'GET', url: '/api/sources/broken' })).statusCode, 404, 'nothing registered')
  t.equal(offThreadLoads.count - before, 2, 'both files went to the load thread (the first load is cached)')
})
