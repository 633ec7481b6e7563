// Random and hostile input (fast-check) against filters, recipe predicates and files: every request
// answers 2xx or a coded 4xx, never a 500; SQL carries values only as bound parameters and names
// only as checked identifiers; the source table is intact afterwards; a refused file leaves
// nothing registered.

import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import fc from 'fast-check'
import t from 'tap'
import { parsePredicate } from '../src/language/predicate.js'
import { SqlCompiler } from '../connectors/postgres/sql.js'
import { testApp } from './helpers/app.js'
import { testDatabase } from './helpers/pg.js'

const nasty = fc.oneof(
  fc.constantFrom(
    "'; DROP TABLE bank; --",
    'amount; DROP TABLE x',
    '"amount"',
    "O'Brien",
    'back\\slash',
    '\\',
    '%',
    '_',
    '$1',
    '${x}',
    '\u0000',
    'ü',
    '😀',
    '',
    ' ',
    '1e309',
    'NaN',
    '-0',
    '2024-02-30',
    '9999999999999999999999',
  ),
  fc.string({ maxLength: 12 }),
  // binary: any code point, NUL and control characters included
  fc.string({ unit: 'binary', maxLength: 8 }),
  fc.constantFrom('a\u0000b', 'txn_id\u0000', '\u0000\u0001\u007f\ufffe'),
  fc.integer(),
  fc.double(),
  fc.boolean(),
)
const value = fc.oneof(nasty, fc.array(nasty, { maxLength: 3 }), fc.constant(null), fc.dictionary(fc.string(), nasty))
const condition = fc.record({
  column: fc.oneof(fc.constantFrom('txn_id', 'amount', 'booked', 'note'), nasty),
  op: fc.oneof(fc.constantFrom('eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'between', 'in', 'like'), nasty),
  value,
})

// (a body with a "__proto__" key is refused earlier, by the JSON parser, with its own code)
const hasNul = (x: unknown) => JSON.stringify(x).includes('\\u0000') && !JSON.stringify(x).includes('"__proto__"')

/** A request carrying a NUL anywhere answers 400 nul_character with a hint, whatever else it holds. */
const nulRefused = (status: number, body: { error?: string; suggestion?: string }) =>
  status === 400 && body.error === 'nul_character' && /U\+0000/.test(body.suggestion ?? '')

// many requests a minute, by design: the rate limit is tested in operations.test.ts
const env = { RATE_LIMIT_PER_MINUTE: '1000000' }

const okOrCoded = (status: number, body: { error?: string; message?: string }) =>
  (status >= 200 && status < 300) || (status >= 400 && status < 500 && typeof body.error === 'string' && !!body.message)

t.test('random conditions on a PostgreSQL source: a coded answer, bound values, the table intact', async (t) => {
  const db = await testDatabase(t)
  await db.query('CREATE TABLE bank (txn_id text PRIMARY KEY, amount numeric(10,2), booked date, note text)')
  await db.query(`INSERT INTO bank VALUES ('T1', 10.00, '2024-01-02', 'a'), ('T2', 99.99, '2024-01-20', NULL)`)
  const { app } = await testApp(t, {
    env,
    files: { 'bank.csv': 'txn_id,amount,booked,note\nT1,10.00,2024-01-02,a\nT2,99.99,2024-01-20,\n' },
  })
  await app.inject({
    method: 'POST',
    url: '/api/sources',
    payload: { alias: 'pg', type: 'postgres', connection_string: db.url, schema: db.schema, table: 'bank' },
  })
  await app.inject({ method: 'POST', url: '/api/sources', payload: { alias: 'csv', type: 'csv', path: 'bank.csv' } })
  let accepted = 0
  await fc.assert(
    fc.asyncProperty(fc.array(condition, { maxLength: 3 }), async (conditions) => {
      const answers = []
      for (const alias of ['pg', 'csv']) {
        const res = await app.inject({
          method: 'POST',
          url: `/api/sources/${alias}/load-scoped`,
          payload: { conditions },
        })
        const body = res.json()
        if (!okOrCoded(res.statusCode, body)) throw new Error(`${alias}: ${res.statusCode} ${res.body}`)
        if (hasNul(conditions) && !nulRefused(res.statusCode, body))
          throw new Error(`${alias}: a NUL answered ${res.statusCode} ${res.body}`)
        answers.push(res.statusCode)
        if (alias === 'pg' && res.statusCode === 200) {
          accepted++
          const sql: string = body.native_query.sql
          // names only as the schema's quoted columns (and the fixed "C" collation the connector
          // writes for byte-order comparisons), values only as parameters
          const outside = sql
            .replace(/"(txn_id|amount|booked|note|t_[0-9a-f]+|bank|C)"/g, '')
            .replace(/\$\d+::\w+/g, '')
          if (/['"\\;]/.test(outside)) throw new Error(`unexpected text in ${sql}`)
        }
      }
      // both connectors refuse or accept the same conditions
      if (answers[0] !== answers[1])
        throw new Error(`pg ${answers[0]} vs csv ${answers[1]} for ${JSON.stringify(conditions)}`)
    }),
    { numRuns: 120 },
  )
  t.ok(accepted > 10, `some random conditions were valid (${accepted})`)
  t.equal((await db.query('SELECT count(*)::int AS n FROM bank')).rows[0].n, 2, 'the table is intact')
})

t.test('random and mangled predicates: validation answers with issues, runs answer coded errors', async (t) => {
  const { app } = await testApp(t, {
    env,
    files: {
      'a.csv': 'id,ref,amount,day\n1,R1,10.00,2024-01-01\n',
      'b.csv': 'id,ref,total,day\n1,R1,10.00,2024-01-01\n',
    },
  })
  for (const alias of ['a', 'b'])
    await app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type: 'csv', path: `${alias}.csv` } })
  const pieces = fc.constantFrom(
    'l.ref = r.ref',
    'ABS(l.amount - r.total) <= 0.01',
    "r.day BETWEEN l.day - INTERVAL '3 days' AND l.day",
    'AND',
    'OR',
    'NOT',
    '(',
    ')',
    "'",
    ';',
    'DROP TABLE a',
    'l.nope',
    'r.',
    'pg_sleep(10)',
    'UPPER(',
    '1/0',
    "INTERVAL 'x'",
    '= =',
    'SELECT 1',
    '--',
    "l.ref = 'a\u0000b'",
    'l.ref\u0000 = r.ref',
  )
  const when = fc.oneof(
    fc.array(pieces, { minLength: 1, maxLength: 6 }).map((p) => p.join(' ')),
    fc.string({ maxLength: 40 }),
    fc.string({ unit: 'binary', maxLength: 40 }),
  )
  await fc.assert(
    fc.asyncProperty(when, async (w) => {
      const recipe = {
        name: 'x',
        left: { source: 'a', key: ['id'] },
        right: { source: 'b', key: ['id'] },
        passes: [{ name: 'p', pattern: '1:1', when: w }],
      }
      const v = await app.inject({ method: 'POST', url: '/api/recipes/validate', payload: recipe })
      if (w.includes('\u0000')) {
        const r = await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe, dry_run: true } })
        if (!nulRefused(v.statusCode, v.json()) || !nulRefused(r.statusCode, r.json()))
          throw new Error(`a NUL in a predicate: validate ${v.statusCode} ${v.body}, run ${r.statusCode} ${r.body}`)
        return
      }
      if (v.statusCode !== 200 || typeof v.json().valid !== 'boolean')
        throw new Error(`validate: ${v.statusCode} ${v.body}`)
      const r = await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe, dry_run: true } })
      if (!okOrCoded(r.statusCode, r.json())) throw new Error(`run: ${r.statusCode} ${r.body}`)
      if (v.json().valid !== (r.statusCode === 202))
        throw new Error(`validate said ${v.json().valid} but the run answered ${r.statusCode}`)
    }),
    { numRuns: 150 },
  )
  t.pass('every predicate got a coded answer')
})

t.test('literals of a predicate reach PostgreSQL only as parameters', async (t) => {
  const schemas = {
    l: [
      { name: 'ref', type: 'string' as const, nullable: true },
      { name: 'amount', type: 'decimal' as const, nullable: true, scale: 2 },
    ],
    r: [
      { name: 'ref', type: 'string' as const, nullable: true },
      { name: 'total', type: 'decimal' as const, nullable: true, scale: 2 },
    ],
  }
  fc.assert(
    fc.property(fc.string({ minLength: 1, maxLength: 20 }), fc.string({ minLength: 1, maxLength: 20 }), (a, b) => {
      const quote = (s: string) => `'${s.replace(/'/g, "''")}'`
      const when = `l.ref = r.ref AND (l.ref LIKE ${quote(a)} OR r.ref IN (${quote(b)}, 'x')) AND COALESCE(r.ref, ${quote(a)}) <> ${quote(b)}`
      let expr
      try {
        expr = parsePredicate(when)
      } catch {
        return // not a predicate: it never reaches SQL
      }
      const compiler = new SqlCompiler(schemas, { l: 'l', r: 'r' })
      const sql = compiler.sql(expr)
      if (sql.includes("'")) throw new Error(`a quote in the SQL text: ${sql}`)
      if (!compiler.params.includes(a) || !compiler.params.includes(b))
        throw new Error('the literals are not parameters')
    }),
    { numRuns: 300 },
  )
  t.pass('no literal in the SQL text')
})

t.test('random CSV and JSON files: registered or refused with a code, never half-registered', async (t) => {
  const { app, dataDir } = await testApp(t, { env })
  const cell = fc.oneof(
    fc.constantFrom(
      '',
      '"',
      '""',
      '"a,b"',
      'x\ny',
      '1.5',
      '2024-01-01',
      '\ufeff',
      ';',
      '\t',
      '{',
      ']',
      'null',
      '\u0000',
      'a\u0000b',
    ),
    fc.string({ maxLength: 6 }),
  )
  const csvDoc = fc
    .array(fc.array(cell, { minLength: 1, maxLength: 4 }), { minLength: 0, maxLength: 6 })
    .map((rows) => rows.map((r) => r.join(',')).join('\n'))
  const jsonDoc = fc.oneof(
    fc.json(),
    fc
      .array(fc.dictionary(fc.constantFrom('a', 'b', ' c'), fc.jsonValue()), { maxLength: 5 })
      .map((x) => JSON.stringify(x)),
    fc.string({ maxLength: 30 }),
  )
  let n = 0
  let registered = 0
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        csvDoc.map((d) => ['csv', Buffer.from(d)] as const),
        jsonDoc.map((d) => ['json', Buffer.from(d)] as const),
        // raw bytes: NULs, invalid UTF-8, half a multi-byte character
        fc
          .tuple(fc.constantFrom('csv', 'json'), fc.uint8Array({ maxLength: 64 }))
          .map(([type, bytes]) => [type, Buffer.from(bytes)] as const),
      ),
      async ([type, doc]) => {
        const alias = `f${n++}`
        const boundary = '----hostile'
        const head = [
          `--${boundary}`,
          'Content-Disposition: form-data; name="alias"',
          '',
          alias,
          `--${boundary}`,
          `Content-Disposition: form-data; name="file"; filename="x.${type}"`,
          '',
          '',
        ].join('\r\n')
        const payload = Buffer.concat([Buffer.from(head), doc, Buffer.from(`\r\n--${boundary}--\r\n`)])
        const res = await app.inject({
          method: 'POST',
          url: '/api/sources',
          headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
          payload,
        })
        if (!okOrCoded(res.statusCode, res.json()))
          throw new Error(`${type}: ${res.statusCode} ${res.body} for ${JSON.stringify(doc.toString('latin1'))}`)
        const listed = (await app.inject({ method: 'GET', url: `/api/sources/${alias}` })).statusCode === 200
        if (listed !== (res.statusCode === 201)) throw new Error(`answered ${res.statusCode} but registered: ${listed}`)
        if (res.statusCode === 201) {
          registered++
          const load = await app.inject({ method: 'POST', url: `/api/sources/${alias}/load-scoped`, payload: {} })
          if (!okOrCoded(load.statusCode, load.json())) throw new Error(`load: ${load.statusCode} ${load.body}`)
        }
      },
    ),
    { numRuns: 150 },
  )
  const uploads = await readdir(join(dataDir, 'uploads', 'default'))
  t.equal(uploads.length, registered, 'a refused upload leaves no file behind')
})

t.test('a NUL character in a filter value, a column name or a predicate: 400 nul_character with a hint', async (t) => {
  const { app } = await testApp(t, {
    env,
    files: { 'a.csv': 'id,ref\n1,R1\n', 'b.csv': 'id,ref\n1,R1\n' },
  })
  for (const alias of ['a', 'b'])
    await app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type: 'csv', path: `${alias}.csv` } })
  const recipe = (when: string) => ({
    name: 'x',
    left: { source: 'a', key: ['id'] },
    right: { source: 'b', key: ['id'] },
    passes: [{ name: 'p', pattern: '1:1', when }],
  })
  const cases: [string, string, unknown, RegExp][] = [
    [
      '/api/sources/a/load-scoped',
      'value',
      { conditions: [{ column: 'ref', op: 'eq', value: 'R\u00001' }] },
      /body\.conditions\[0\]\.value/,
    ],
    [
      '/api/sources/a/load-scoped',
      'column',
      { conditions: [{ column: 'ref\u0000', op: 'eq', value: 'R1' }] },
      /body\.conditions\[0\]\.column/,
    ],
    ['/api/recipes/validate', 'predicate', recipe("l.ref = 'R\u00001'"), /body\.passes\[0\]\.when/],
    ['/api/runs', 'predicate', { recipe: recipe('l.ref\u0000 = r.ref') }, /body\.recipe\.passes\[0\]\.when/],
  ]
  for (const [url, what, payload, where] of cases) {
    const res = await app.inject({ method: 'POST', url, payload: payload as object })
    t.equal(res.statusCode, 400, `${what}: ${res.body}`)
    t.match(res.json(), { error: 'nul_character', message: where, suggestion: /U\+0000/ }, what)
  }
  t.equal(app.sources.engine('default').get('a'), undefined, 'nothing was loaded')
})
