// The PostgreSQL connector against a real server: catalog types, the pushed-down WHERE,
// streaming into exact columns, limits, errors, injection attempts and cancellation.

import { createHash } from 'node:crypto'
import t from 'tap'
import { postgresConnector } from '../connectors/postgres.js'
import { rowsAsJson } from '../src/engine/data/table.js'
import type { FilterCondition } from '../src/engine/data/types.js'
import { EngineContext } from '../src/sources/connector.js'
import { testDatabase } from './helpers/pg.js'

t.test('postgres connector', async (t) => {
  const db = await testDatabase(t)
  await db.query(`CREATE TABLE ledger (
    id bigint PRIMARY KEY, account text NOT NULL, amount numeric(12,2), raw numeric, ratio float8,
    booked date, at timestamptz, local_at timestamp, ok boolean, code varchar(10), uid uuid)`)
  await db.query(`INSERT INTO ledger VALUES
    (1, 'ACC-1', 12345.67, 1.5, 0.1, '2024-01-05', '2024-01-05T10:00:00Z', '2024-01-05 10:00:00', true, 'a%b', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'),
    (2, 'ACC-2', 12345.66, 2.25, 0.5, '2024-01-31', '2024-01-31T23:59:59.999Z', '2024-01-31 23:59:59', false, 'a_b', NULL),
    (3, 'acc-3', -0.01, NULL, NULL, '2024-02-01', NULL, NULL, NULL, 'x\\y', NULL),
    (4, 'ACC-4', NULL, 100, 1e300, NULL, '2023-12-31T22:00:00Z', NULL, true, 'it''s', NULL)`)
  const connector = postgresConnector({ statementTimeoutMs: 30_000, poolMax: 2 })
  t.teardown(() => connector.close?.())
  const config = await connector.prepare({ connection_string: db.url, schema: db.schema, table: 'ledger' })
  const source = { alias: 'ledger', type: 'postgres', config }

  t.test('describe maps the catalog types', async (t) => {
    const cols = await connector.describe(source)
    t.same(
      cols.map((c) => [c.name, c.type, c.scale, c.nullable]),
      [
        ['id', 'integer', undefined, false],
        ['account', 'string', undefined, false],
        ['amount', 'decimal', 2, true],
        ['raw', 'decimal', undefined, true],
        ['ratio', 'float', undefined, true],
        ['booked', 'date', undefined, true],
        ['at', 'timestamp', undefined, true],
        ['local_at', 'timestamp', undefined, true],
        ['ok', 'boolean', undefined, true],
        ['code', 'string', undefined, true],
        ['uid', 'string', undefined, true],
      ],
    )
  })

  const load = async (conditions: FilterCondition[], limit?: number) => {
    const ctx = new EngineContext()
    const scoped = await connector.registerScoped(ctx, 'ledger', source, conditions, { limit })
    return { scoped, rows: rowsAsJson(scoped.table), ctx }
  }
  const ids = async (conditions: FilterCondition[]) => (await load(conditions)).rows.map((r) => r.id)

  t.test('rows arrive exact and typed', async (t) => {
    const { rows, scoped } = await load([])
    t.equal(scoped.totalRows, 4)
    t.same(rows[0], {
      id: 1,
      account: 'ACC-1',
      amount: '12345.67',
      raw: '1.50',
      ratio: 0.1,
      booked: '2024-01-05',
      at: '2024-01-05T10:00:00.000Z',
      local_at: '2024-01-05T10:00:00.000Z',
      ok: true,
      code: 'a%b',
      uid: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
    })
    t.equal(rows[3].ratio, 1e300)
    t.same(
      rows.map((r) => r.raw),
      ['1.50', '2.25', null, '100.00'],
      'an unconstrained numeric takes the largest scale seen',
    )
  })

  t.test('the WHERE clause is one parameterized pushdown', async (t) => {
    const q = connector.translate!(source, await connector.describe(source), [
      { column: 'amount', op: 'between', value: ['100', 20000] },
      { column: 'account', op: 'like', value: 'ACC-%' },
      { column: 'booked', op: 'in', value: ['2024-01-05', '2024-01-31'] },
    ])
    t.equal(q.language, 'postgresql')
    t.match(
      q.sql,
      /WHERE "amount" BETWEEN \$1::numeric AND \$2::numeric AND "account" COLLATE "C" LIKE \$3::text AND "booked" IN \(\$4::date, \$5::date\)$/,
    )
    t.same(q.params, ['100', '20000', 'ACC-%', '2024-01-05', '2024-01-31'])
    // Only the WHERE clause: the schema name is random hex and may itself hold "100".
    t.notMatch(q.sql!.slice(q.sql!.indexOf(' WHERE ')), /ACC-|2024|100/, 'no value is spliced into the SQL')
  })

  t.test('every operator, with the engine semantics', async (t) => {
    t.same(await ids([{ column: 'amount', op: 'eq', value: '12345.67' }]), [1])
    t.same(await ids([{ column: 'amount', op: 'gt', value: '12345.665' }]), [1])
    t.same(await ids([{ column: 'amount', op: 'neq', value: '12345.67' }]), [2, 3], 'NULL is not unequal')
    t.same(await ids([{ column: 'id', op: 'gt', value: 2.5 }]), [3, 4])
    t.same(
      await ids([{ column: 'account', op: 'lt', value: 'ACC-9' }]),
      [1, 2, 4],
      'C collation: lowercase sorts after',
    )
    t.same(await ids([{ column: 'code', op: 'like', value: 'a\\%b' }]), [1])
    t.same(await ids([{ column: 'code', op: 'like', value: 'a\\_b' }]), [2])
    t.same(await ids([{ column: 'code', op: 'like', value: 'x\\\\y' }]), [3])
    t.same(await ids([{ column: 'code', op: 'eq', value: "it's" }]), [4])
    t.same(await ids([{ column: 'booked', op: 'between', value: ['2024-01-01', '2024-01-31'] }]), [1, 2])
    t.same(await ids([{ column: 'at', op: 'lt', value: '2024-01-01' }]), [4])
    t.same(await ids([{ column: 'local_at', op: 'gte', value: '2024-01-31T23:59:59Z' }]), [2])
    t.same(await ids([{ column: 'ok', op: 'eq', value: true }]), [1, 4])
    t.same(await ids([{ column: 'ratio', op: 'gt', value: 0.1 }]), [2, 4])
    t.same(await ids([{ column: 'uid', op: 'eq', value: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11' }]), [1])
  })

  t.test('rows come by COPY: every value as stored, whatever the text format escapes', async (t) => {
    await db.query('CREATE TABLE escapes (id int, txt text, n numeric(6,2), big int8, d date)')
    const texts = ['tab\there', 'line\nbreak', 'cr\rlf', 'back\\slash', '\\N', '', ' padded ', 'é ✓ 🧾', 'a\\tb']
    for (const [i, text] of texts.entries())
      await db.query('INSERT INTO escapes VALUES ($1, $2, $3, $4, $5)', [
        i,
        text,
        i % 2 ? '-0.00' : '-12.5',
        i,
        '2024-02-29',
      ])
    await db.query(`INSERT INTO escapes VALUES (99, NULL, NULL, NULL, NULL)`)
    const cfg = await connector.prepare({ connection_string: db.url, schema: db.schema, table: 'escapes' })
    const src = { alias: 'escapes', type: 'postgres', config: cfg }
    const rows = rowsAsJson((await connector.registerScoped(new EngineContext(), 'escapes', src, [])).table)
    t.same(
      rows.map((r) => r.txt),
      [...texts, null],
      "tabs, newlines, backslashes, a literal \\N, '' and NULL all kept apart",
    )
    t.same(
      rows.map((r) => [r.n, r.d]),
      [...texts.map((_, i) => [i % 2 ? '0.00' : '-12.50', '2024-02-29']), [null, null]],
    )
    // a filter value with quotes and backslashes is bound, through the transaction's settings
    const only = await connector.registerScoped(new EngineContext(), 'escapes', src, [
      { column: 'txt', op: 'in', value: ['back\\slash', "'; DROP TABLE escapes; --", 'tab\there'] },
    ])
    t.same(
      rowsAsJson(only.table).map((r) => r.id),
      [0, 3],
    )
    await db.query(`INSERT INTO escapes VALUES (100, 'x', 1, 9007199254740993, '2024-01-01')`)
    await t.rejects(connector.registerScoped(new EngineContext(), 'escapes', src, []), {
      code: 'source_data_error',
      message: /9007199254740993/,
    })
  })

  t.test('a scope larger than a COPY chunk arrives whole, rows cut between chunks put together', async (t) => {
    await db.query(
      `CREATE TABLE wide AS SELECT i AS id, repeat(md5(i::text), 1 + i % 7) AS txt, (i * 0.01)::numeric(12,2) AS amount
         FROM generate_series(1, 30000) AS i`,
    )
    const cfg = await connector.prepare({ connection_string: db.url, schema: db.schema, table: 'wide' })
    const scoped = await connector.registerScoped(
      new EngineContext(),
      'wide',
      { alias: 'wide', type: 'postgres', config: cfg },
      [{ column: 'id', op: 'gt', value: 10 }],
    )
    t.equal(scoped.table.length, 29990)
    const digest = await db.query(
      `SELECT md5(string_agg(id || ',' || txt || ',' || amount, ';' ORDER BY id)) AS h FROM wide WHERE id > 10`,
    )
    const ours = rowsAsJson(scoped.table)
      .map((r) => `${r.id},${r.txt},${r.amount}`)
      .join(';')
    t.equal(createHash('md5').update(ours).digest('hex'), digest.rows[0].h)
  })

  t.test('limit keeps the count of everything in scope', async (t) => {
    const { scoped } = await load([{ column: 'id', op: 'gte', value: 1 }], 2)
    t.equal(scoped.table.length, 2)
    t.equal(scoped.totalRows, 4)
  })

  t.test('bad conditions and injection attempts never reach SQL', async (t) => {
    await t.rejects(load([{ column: 'amount; DROP TABLE ledger', op: 'eq', value: 1 }]), { code: 'unknown_column' })
    await t.rejects(load([{ column: 'amout', op: 'eq', value: 1 }]), { code: 'unknown_column', suggestion: /"amount"/ })
    await t.rejects(load([{ column: 'booked', op: 'eq', value: 'tomorrow' }]), { code: 'invalid_filter' })
    t.same(await ids([{ column: 'account', op: 'eq', value: "'; DROP TABLE ledger; --" }]), [])
    t.same(await ids([{ column: 'account', op: 'in', value: ["ACC-1' OR '1'='1", 'ACC-2\\'] }]), [])
    const count = await db.query('SELECT count(*)::int AS n FROM ledger')
    t.equal(count.rows[0].n, 4, 'the table is intact')
  })

  t.test('hostile column names are validated identifiers, quoted; the tables stay intact', async (t) => {
    await db.query(`CREATE TABLE odd ("amount; DROP TABLE ledger" numeric(10,2), "we""ird" text, "Mixed Case" int)`)
    await db.query(`INSERT INTO odd VALUES (1.50, 'x', 1), (2.25, 'y''s', 2)`)
    const odd = {
      alias: 'odd',
      type: 'postgres',
      config: await connector.prepare({ connection_string: db.url, schema: db.schema, table: 'odd' }),
    }
    t.same(
      (await connector.describe(odd)).map((c) => c.name),
      ['amount; DROP TABLE ledger', 'we"ird', 'Mixed Case'],
    )
    const conditions: FilterCondition[] = [
      { column: 'amount; DROP TABLE ledger', op: 'gt', value: '2' },
      { column: 'we"ird', op: 'eq', value: "y's" },
      { column: 'Mixed Case', op: 'in', value: [2, 3] },
    ]
    const query = connector.translate!(odd, await connector.describe(odd), conditions)
    t.match(
      query.sql,
      `FROM "${db.schema}"."odd" WHERE "amount; DROP TABLE ledger" > $1::numeric AND "we""ird" COLLATE "C" = $2::text AND "Mixed Case" IN ($3::numeric, $4::numeric)`,
    )
    const scoped = await connector.registerScoped(new EngineContext(), 'odd', odd, conditions)
    t.same(rowsAsJson(scoped.table), [{ 'amount; DROP TABLE ledger': '2.25', 'we"ird': "y's", 'Mixed Case': 2 }])
    t.equal((await db.query('SELECT count(*)::int AS n FROM ledger')).rows[0].n, 4, 'ledger intact')
    t.equal((await db.query('SELECT count(*)::int AS n FROM odd')).rows[0].n, 2, 'odd intact')

    // names that look like SQL: " FROM " (the count query was once cut at it), comments, semicolons
    await db.query(
      `CREATE TABLE sly ("note FROM pg_catalog.pg_class --" text, "x'; SELECT 1; --" int, "a""b FROM c" text)`,
    )
    await db.query(`INSERT INTO sly SELECT 'n' || i, i, 'ab' FROM generate_series(1, 5) AS i`)
    const sly = {
      alias: 'sly',
      type: 'postgres',
      config: await connector.prepare({ connection_string: db.url, schema: db.schema, table: 'sly' }),
    }
    const all = await connector.registerScoped(new EngineContext(), 'sly', sly, [], { limit: 2 })
    t.equal(all.table.length, 2, 'a limited load')
    t.equal(all.totalRows, 5, 'counts the table it read, not pg_class')
    const some = await connector.registerScoped(
      new EngineContext(),
      'sly',
      sly,
      [
        { column: "x'; SELECT 1; --", op: 'gte', value: 2 },
        { column: 'note FROM pg_catalog.pg_class --', op: 'neq', value: 'n5' },
        { column: 'a"b FROM c', op: 'eq', value: 'ab' },
      ],
      { limit: 1 },
    )
    t.equal(some.totalRows, 3, 'a filtered count binds its parameters: rows 2, 3 and 4')
    t.same(rowsAsJson(some.table), [
      { 'note FROM pg_catalog.pg_class --': 'n2', "x'; SELECT 1; --": 2, 'a"b FROM c': 'ab' },
    ])
  })

  t.test(
    'closing the connector ends its connections to the source',
    { skip: db.kind === 'pglite' && 'PGlite has no pg_stat_activity' },
    async (t) => {
      await db.query('CREATE TABLE closing_probe (id int)')
      const own = postgresConnector({ statementTimeoutMs: 30_000, poolMax: 2 })
      // the connector's connections carry their own application_name: only they are counted
      const url = `${db.url}${db.url.includes('?') ? '&' : '?'}application_name=closing_probe`
      const config = await own.prepare({ connection_string: url, schema: db.schema, table: 'closing_probe' })
      await own.registerScoped(new EngineContext(), 'probe', { alias: 'probe', type: 'postgres', config }, [])
      const open = async () =>
        (
          await db.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND application_name = $1`,
            ['closing_probe'],
          )
        ).rows[0].n as number
      t.ok((await open()) > 0, 'the load left pooled connections open')
      await own.close!()
      let n = await open()
      for (let i = 0; n > 0 && i < 50; i++) {
        await new Promise((r) => setTimeout(r, 100))
        n = await open()
      }
      t.equal(n, 0, 'no connection of the connector is left on the server')
    },
  )

  t.test('a connection that cannot take its session settings is not used', async (t) => {
    // an out-of-range timeout: the server refuses the SET, and no query may run unbounded
    const strict = postgresConnector({ statementTimeoutMs: -5, poolMax: 1 })
    t.teardown(() => strict.close?.())
    const cfg = await strict.prepare({ connection_string: db.url, schema: db.schema, table: 'ledger' }).catch((e) => e)
    t.match(cfg, { code: 'source_query_failed', message: /statement_timeout/ }, 'refused, with the reason')
  })

  t.test('unknown table and unreachable server are clear errors without the password', async (t) => {
    await t.rejects(connector.prepare({ connection_string: db.url, schema: db.schema, table: 'ledgr' }), {
      code: 'unknown_table',
      suggestion: /"ledger"/,
    })
    const secret = 'hunter2-planted'
    const err = await connector
      .prepare({ connection_string: `postgresql://app:${secret}@127.0.0.1:1/db`, table: 'x' })
      .catch((e) => e)
    t.equal(err.code, 'source_unreachable')
    t.equal(err.status, 502)
    t.notMatch(err.message, secret)
    t.same(connector.redact({ connection_string: `postgresql://app:${secret}@db.example:5432/prod`, table: 'x' }), {
      connection: 'postgresql://app:***@db.example:5432/prod',
      schema: 'public',
      table: 'x',
    })
  })

  t.test('an aborted load registers nothing', async (t) => {
    const ctx = new EngineContext()
    const ac = new AbortController()
    ac.abort()
    await t.rejects(connector.registerScoped(ctx, 'ledger', source, [], { signal: ac.signal }))
    t.same(ctx.aliases(), [])
  })
})
