// engine "postgres" against the in-process engine, on generated tables in a real PostgreSQL (the
// local server, or PGlite over the wire): for random data and a recipe exercising hash keys
// (plain and wrapped), bands, tolerances, intervals, casts, LIKE with a built pattern, a 1:N pass
// and ties, both engines must give the same matches (pass by pass) and the same unmatched sets.
// A second test pins fixed seeds of larger tables with twin records (ties), NULL refs and
// amounts, and amounts exactly at the tolerances (99.99 vs 100.00; 1000.00 vs 1001.00 at 0.1%).

import fc from 'fast-check'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { testApp } from './helpers/app.js'
import { type TestDatabase, testDatabase } from './helpers/pg.js'
import { waitForRun } from './helpers/runs.js'

const recArb = fc.record({
  ref: fc.option(fc.constantFrom('a1', 'A1', ' b2', 'b2 ', 'C3', 'c3', 'D-4', 'e5'), { nil: null, freq: 6 }),
  account: fc.constantFrom('ACC-1', 'ACC-2', 'ACC-3'),
  cents: fc.integer({ min: -2000, max: 20000 }),
  day: fc.integer({ min: 0, max: 20 }),
  hour: fc.integer({ min: 0, max: 23 }),
})

/** Right records derived from left ones (exact, off by a little, split in parts) plus noise. */
const dataArb = fc.array(recArb, { minLength: 1, maxLength: 25 }).chain((left) =>
  fc
    .array(
      fc.oneof(
        recArb.map((r) => [r]),
        fc
          .record({
            n: fc.nat(left.length - 1),
            dc: fc.constantFrom(0, 0, 1, -3, 5, 40),
            dd: fc.integer({ min: -2, max: 6 }),
            upper: fc.boolean(),
          })
          .map(({ n, dc, dd, upper }) => [
            {
              ...left[n],
              ref: upper && left[n].ref ? left[n].ref.trim().toUpperCase() : left[n].ref,
              cents: left[n].cents + dc,
              day: Math.max(0, left[n].day + dd),
            },
          ]),
        fc.record({ n: fc.nat(left.length - 1), parts: fc.integer({ min: 2, max: 3 }) }).map(({ n, parts }) => {
          const share = Math.trunc(left[n].cents / parts)
          return Array.from({ length: parts }, (_, k) => ({
            ...left[n],
            ref: `${left[n].ref ?? 'x'}-P${k}`,
            cents: k === 0 ? left[n].cents - share * (parts - 1) : share,
          }))
        }),
      ),
      { minLength: 1, maxLength: 25 },
    )
    .map((groups) => ({ left, right: groups.flat() })),
)

// CONCORD_DIFF_RUNS raises the number of generated cases when hunting for a difference, SEED picks
// other cases; the default seed is fixed so that CI runs the same cases every time (a seed from the
// clock once gave only 8 of 12 cases with a match and failed the guard below at random)
const RUNS = Number(process.env.CONCORD_DIFF_RUNS ?? 12)
const SEED = Number(process.env.SEED ?? 20261123)

const recipe = {
  name: 'differential',
  left: { source: 'bank', key: ['txn_id'], scope: [{ column: 'amount', op: 'gt', value: -10 }] },
  right: { source: 'invoices', key: ['invoice_id'] },
  passes: [
    { name: 'exact', pattern: '1:1', when: 'l.ref = r.ref AND l.amount = r.total' },
    {
      name: 'wrapped',
      pattern: '1:1',
      when: "UPPER(TRIM(l.ref)) = UPPER(TRIM(r.ref)) AND ABS(l.amount - r.total) <= 0.05 AND r.day BETWEEN l.day - INTERVAL '1 day' AND l.day + 3",
    },
    {
      name: 'band',
      pattern: '1:1',
      when: "ABS(l.amount - r.total) <= 0.01 AND CAST(r.at AS date) BETWEEN l.day AND l.day + INTERVAL '2 days' AND COALESCE(l.ref, '') <> 'e5'",
    },
    {
      name: 'split',
      pattern: '1:N',
      when: "l.account = r.customer AND r.ref LIKE COALESCE(l.ref, 'x') || '-P%' AND r.day >= l.day - 2",
      aggregate: { sum: 'r.total', equals: 'l.amount', tolerance: '0.01', max_group: 3 },
    },
  ],
}

/** Registers PostgreSQL tables of the test schema as sources, [alias, table] each. */
async function registerTables(t: Test, app: FastifyInstance, db: TestDatabase, pairs: [string, string][]) {
  for (const [alias, table] of pairs) {
    const res = await app.inject({
      method: 'POST',
      url: '/api/sources',
      payload: { alias, type: 'postgres', connection_string: db.url, schema: db.schema, table },
    })
    t.equal(res.statusCode, 201, res.body)
  }
}

/** Runs a recipe on both engines and returns the two completed runs (memory, postgres). */
async function bothEngines(app: FastifyInstance, recipe: object) {
  const runs = []
  for (const engine of ['memory', 'postgres']) {
    const started = await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe, engine } })
    if (started.statusCode !== 202) throw new Error(started.body)
    const run = await waitForRun(app, started.json().id)
    if (run.status !== 'completed') throw new Error(`${engine}: ${JSON.stringify(run.error)}`)
    runs.push(run)
  }
  return runs
}

interface Unmatched {
  record_key: string
  closest_candidate: string | null
  failed: { pass: string; conjunct: string } | null
  tied_with: string | null
}

async function everything(app: FastifyInstance, id: string) {
  const get = async (url: string) => {
    const items = []
    for (let offset = 0; ; offset += 1000) {
      const page = (
        await app.inject({ method: 'GET', url: `${url}${url.includes('?') ? '&' : '?'}offset=${offset}&limit=1000` })
      ).json()
      items.push(...page.items)
      if (offset + 1000 >= page.total) return items
    }
  }
  const matches = (await get(`/api/runs/${id}/matches`)).map(
    (m: { pass: string; left_keys: string[]; right_keys: string[]; ambiguous: boolean; deltas: { amount: string } }) =>
      `${m.pass} ${m.left_keys.join('+')}|${m.right_keys.join('+')}${m.ambiguous ? ' ambiguous' : ''} ${m.deltas.amount}`,
  )
  // an unmatched record with its evidence: the closest candidate, the pass and the conjunct it failed
  const unmatched = (u: Unmatched) =>
    `${u.record_key} ~ ${u.closest_candidate ?? '-'}${u.failed ? ` ${u.failed.pass}: ${u.failed.conjunct}` : ''}${u.tied_with ? ` tied ${u.tied_with}` : ''}`
  const left = (await get(`/api/runs/${id}/unmatched/left`)).map(unmatched)
  const right = (await get(`/api/runs/${id}/unmatched/right`)).map(unmatched)
  return { matches: matches.sort(), left: left.sort(), right: right.sort() }
}

t.test('the PostgreSQL engine matches exactly what the in-process engine matches', async (t) => {
  const db = await testDatabase(t)
  const { app } = await testApp(t)
  await db.query(
    'CREATE TABLE bank (txn_id text PRIMARY KEY, ref text, account text NOT NULL, amount numeric(12,2) NOT NULL, day date NOT NULL)',
  )
  await db.query(
    'CREATE TABLE invoices (invoice_id text PRIMARY KEY, ref text, customer text NOT NULL, total numeric(12,2) NOT NULL, day date NOT NULL, at timestamptz NOT NULL)',
  )
  await registerTables(t, app, db, [
    ['bank', 'bank'],
    ['invoices', 'invoices'],
  ])
  let compared = 0
  let matchedSomething = 0
  await fc.assert(
    fc.asyncProperty(dataArb, async ({ left, right }) => {
      await db.query('TRUNCATE bank, invoices')
      const date = (d: number) => `2024-03-${String(d + 1).padStart(2, '0')}`
      for (const [n, r] of left.entries())
        await db.query('INSERT INTO bank VALUES ($1, $2, $3, $4, $5)', [
          `T${String(n).padStart(3, '0')}`,
          r.ref,
          r.account,
          (r.cents / 100).toFixed(2),
          date(r.day),
        ])
      for (const [n, r] of right.entries())
        await db.query('INSERT INTO invoices VALUES ($1, $2, $3, $4, $5, $6)', [
          `I${String(n).padStart(3, '0')}`,
          r.ref,
          r.account,
          (r.cents / 100).toFixed(2),
          date(r.day),
          `${date(r.day)}T${String(r.hour).padStart(2, '0')}:30:00Z`,
        ])
      const results = []
      for (const run of await bothEngines(app, recipe))
        results.push({ summary: run.summary, ...(await everything(app, run.id)) })
      const [memory, postgres] = results
      if (JSON.stringify(memory.matches) !== JSON.stringify(postgres.matches))
        throw new Error(
          `matches differ:\n memory   ${memory.matches.join('\n          ')}\n postgres ${postgres.matches.join('\n          ')}`,
        )
      if (JSON.stringify([memory.left, memory.right]) !== JSON.stringify([postgres.left, postgres.right]))
        throw new Error(
          `unmatched differ: ${JSON.stringify([memory.left, memory.right])} vs ${JSON.stringify([postgres.left, postgres.right])}`,
        )
      for (const k of ['left', 'right'] as const)
        if (JSON.stringify(memory.summary[k]) !== JSON.stringify(postgres.summary[k]))
          throw new Error(
            `${k} summary differs: ${JSON.stringify(memory.summary[k])} vs ${JSON.stringify(postgres.summary[k])}`,
          )
      compared++
      if (memory.matches.length) matchedSomething++
    }),
    { numRuns: RUNS, seed: SEED },
  )
  t.equal(compared, RUNS)
  t.ok(
    matchedSomething >= RUNS * 0.75,
    `most generated cases match something (${matchedSomething} of ${RUNS}, seed ${SEED})`,
  )
})

t.test('engine "postgres" is refused where it cannot run, with the reason', async (t) => {
  const { app } = await testApp(t, { files: { 'a.csv': 'id,x\n1,2\n', 'b.csv': 'id,x\n1,2\n' } })
  for (const alias of ['a', 'b'])
    await app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type: 'csv', path: `${alias}.csv` } })
  const res = await app.inject({
    method: 'POST',
    url: '/api/runs',
    payload: {
      engine: 'postgres',
      recipe: {
        name: 'files',
        left: { source: 'a', key: ['id'] },
        right: { source: 'b', key: ['id'] },
        passes: [{ name: 'p', pattern: '1:1', when: 'l.x = r.x' }],
      },
    },
  })
  t.equal(res.statusCode, 400)
  t.match(res.json(), { error: 'pushdown_unavailable', message: /needs both sources to be postgres sources/ })
})

/** A small seeded generator (mulberry32): the same seed gives the same tables on every machine. */
function seeded(seed: number) {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let x = Math.imul(a ^ (a >>> 15), 1 | a)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]
  return { next, pick }
}

// amounts at the tolerance edges: 0.01 apart (99.99 vs 100.00) and 0.1% of 1000.00 = 1.00 apart
const EDGE_CENTS = [10000, 9999, 10001, 9998, 0, -1, 100000, 99900, 100100, 99899, 100101]
const DELTAS = [0, 0, 1, -1, 2, -2, 100, -100, 101, -101]

/** Tables with ties (twin records), NULL refs and amounts, and amounts exactly at the tolerances. */
function edgeTables(seed: number) {
  const { next, pick } = seeded(seed)
  const cents = () => (next() < 0.1 ? null : next() < 0.6 ? pick(EDGE_CENTS) : Math.floor(next() * 200000) - 1000)
  const money = (c: number | null) => (c === null ? null : (c / 100).toFixed(2))
  const left: (string | number | null)[][] = []
  const right: (string | number | null)[][] = []
  for (let n = 0; n < 120; n++) {
    const ref = next() < 0.15 ? null : `R${Math.floor(next() * 40)}`
    const account = pick(['A1', 'A2', 'A3'])
    const c = cents()
    const day = Math.floor(next() * 10)
    left.push([`T${String(n).padStart(3, '0')}`, ref, account, money(c), day])
    const copies = next() < 0.6 ? (next() < 0.2 ? 2 : 1) : 0
    for (let k = 0; k < copies; k++) {
      const rc = c === null || next() < 0.05 ? null : c + pick(DELTAS)
      right.push([null, ref, account, money(rc), Math.max(0, day + pick([0, 1, 2, 3, -1]))])
    }
  }
  for (let n = 0; n < 30; n++)
    right.push([null, next() < 0.2 ? null : `R${Math.floor(next() * 40)}`, pick(['A1', 'A2', 'A3']), money(cents()), 5])
  right.forEach((r, n) => (r[0] = `I${String(n).padStart(3, '0')}`))
  return { left, right }
}

const edgeRecipe = {
  name: 'edges',
  left: { source: 'bank_e', key: ['txn_id'] },
  right: { source: 'invoices_e', key: ['invoice_id'] },
  passes: [
    { name: 'exact', pattern: '1:1', when: 'l.ref = r.ref AND l.amount = r.total' },
    { name: 'cent', pattern: '1:1', when: 'l.ref = r.ref AND ABS(l.amount - r.total) <= 0.01' },
    {
      name: 'permille',
      pattern: '1:1',
      when: "l.account = r.customer AND ABS(l.amount - r.total) <= ABS(l.amount) * 0.001 AND r.day BETWEEN l.day AND l.day + INTERVAL '2 days'",
    },
  ],
}

t.test('both engines agree on fixed seeds with ties, NULLs and amounts at the tolerance edges', async (t) => {
  const db = await testDatabase(t)
  const { app } = await testApp(t)
  await db.query(
    'CREATE TABLE bank_e (txn_id text PRIMARY KEY, ref text, account text, amount numeric(12,2), day date)',
  )
  await db.query(
    'CREATE TABLE invoices_e (invoice_id text PRIMARY KEY, ref text, customer text, total numeric(12,2), day date)',
  )
  await registerTables(t, app, db, [
    ['bank_e', 'bank_e'],
    ['invoices_e', 'invoices_e'],
  ])
  const date = (d: number | string | null) => `2024-05-${String(Number(d) + 1).padStart(2, '0')}`
  for (const seed of [1, 7, 2024]) {
    const { left, right } = edgeTables(seed)
    await db.query('TRUNCATE bank_e, invoices_e')
    for (const r of left)
      await db.query('INSERT INTO bank_e VALUES ($1, $2, $3, $4, $5)', [...r.slice(0, 4), date(r[4])])
    for (const r of right)
      await db.query('INSERT INTO invoices_e VALUES ($1, $2, $3, $4, $5)', [...r.slice(0, 4), date(r[4])])
    const results = []
    for (const run of await bothEngines(app, edgeRecipe))
      results.push({ summary: run.summary, ...(await everything(app, run.id)) })
    const [memory, postgres] = results
    t.same(postgres.matches, memory.matches, `seed ${seed}: the same matches, pass by pass`)
    t.same([postgres.left, postgres.right], [memory.left, memory.right], `seed ${seed}: the same unmatched records`)
    t.same(
      [postgres.summary.left, postgres.summary.right],
      [memory.summary.left, memory.summary.right],
      `seed ${seed}: the same totals`,
    )
    // the data does reach the edges: every pass matches, and some ties are held as ambiguous
    for (const pass of ['exact', 'cent', 'permille'])
      t.ok(
        memory.matches.some((m: string) => m.startsWith(`${pass} `)),
        `seed ${seed}: pass ${pass} matches something`,
      )
    t.ok(memory.summary.ambiguous > 0, `seed ${seed}: ${memory.summary.ambiguous} ambiguous ties`)
    t.ok(
      memory.matches.some((m: string) => /^cent .* -?0\.01$/.test(m)),
      `seed ${seed}: a pair exactly one cent apart matches in pass cent`,
    )
    t.ok(
      memory.matches.some((m: string) => /^permille .* -?1\.00$/.test(m)),
      `seed ${seed}: a pair exactly 0.1% of 1000.00 apart matches in pass permille`,
    )
  }
})

t.test('prefer resolves the same ties in both engines, and both report the assignment', async (t) => {
  const db = await testDatabase(t)
  const { app } = await testApp(t)
  await db.query(
    'CREATE TABLE bank_p (txn_id text PRIMARY KEY, ref text, account text, amount numeric(12,2), day date)',
  )
  await db.query(
    'CREATE TABLE invoices_p (invoice_id text PRIMARY KEY, ref text, customer text, total numeric(12,2), day date)',
  )
  await registerTables(t, app, db, [
    ['bank_e', 'bank_p'],
    ['invoices_e', 'invoices_p'],
  ])
  const date = (d: number | string | null) => `2024-05-${String(Number(d) + 1).padStart(2, '0')}`
  const { left, right } = edgeTables(7)
  for (const r of left) await db.query('INSERT INTO bank_p VALUES ($1, $2, $3, $4, $5)', [...r.slice(0, 4), date(r[4])])
  for (const r of right)
    await db.query('INSERT INTO invoices_p VALUES ($1, $2, $3, $4, $5)', [...r.slice(0, 4), date(r[4])])
  const recipe = {
    ...edgeRecipe,
    passes: edgeRecipe.passes.map((p) => ({ ...p, prefer: p.name === 'permille' ? 'earliest' : 'first_key' })),
  }
  const results = []
  for (const run of await bothEngines(app, recipe)) {
    const unmatched = (side: string) =>
      app
        .inject({ method: 'GET', url: `/api/runs/${run.id}/unmatched/${side}?limit=1000` })
        .then((r) =>
          r.json().items.map((u: { record_key: string; tied_with: string | null }) => [u.record_key, u.tied_with]),
        )
    results.push({ run, ...(await everything(app, run.id)), tied: [await unmatched('left'), await unmatched('right')] })
  }
  const [memory, postgres] = results
  t.same(postgres.matches, memory.matches, 'the same matches, pass by pass')
  t.same(postgres.tied, memory.tied, 'the same records passed over, tied with the same records')
  t.same(
    postgres.run.summary.passes.map((p: { assignment: unknown }) => p.assignment),
    memory.run.summary.passes.map((p: { assignment: unknown }) => p.assignment),
    'the same assignment reports',
  )
  t.equal(memory.run.summary.ambiguous, 0, 'every tie resolved')
  t.ok(memory.run.summary.passes.some((p: { assignment: { ties_resolved: number } }) => p.assignment.ties_resolved > 0))
  t.ok(
    memory.tied.flat().some(([, tied]: [string, string | null]) => tied !== null),
    'some record was passed over',
  )
})

t.test(
  'both engines explain a record with 40 candidates alike: every candidate counts, ties go to the lowest record',
  async (t) => {
    const db = await testDatabase(t)
    const { app } = await testApp(t)
    await db.query('CREATE TABLE bank_w (txn_id text PRIMARY KEY, ref text, amount numeric(12,2), day date)')
    await db.query('CREATE TABLE invoices_w (invoice_id text PRIMARY KEY, ref text, total numeric(12,2), day date)')
    await registerTables(t, app, db, [
      ['bank_w', 'bank_w'],
      ['invoices_w', 'invoices_w'],
    ])
    // T1 shares its ref with 40 invoices: the first 34 fail two conjuncts, I034 and I035 only the
    // date (a tie: I034 is the lower record), the rest two again. T2 has no ref partner: the band
    // pass explains it within its first band (the day window), though the join runs on the
    // narrower amount band; I040 and I041 are in the window and fail only the amount.
    await db.query(`INSERT INTO bank_w VALUES ('T1', 'K', 100.00, '2024-06-01'), ('T2', 'Z', 777.77, '2024-06-10')`)
    for (let n = 0; n < 40; n++) {
      const near = n === 34 || n === 35
      await db.query('INSERT INTO invoices_w VALUES ($1, $2, $3, $4)', [
        `I${String(n).padStart(3, '0')}`,
        'K',
        near ? '100.00' : '50.00',
        near ? '2024-06-20' : '2024-07-30',
      ])
    }
    await db.query(
      `INSERT INTO invoices_w VALUES ('I040', 'Y', 700.00, '2024-06-12'), ('I041', 'Y', 701.00, '2024-06-11'), ('I042', 'Y', 777.77, '2024-09-01')`,
    )
    const recipe = {
      name: 'wide',
      left: { source: 'bank_w', key: ['txn_id'] },
      right: { source: 'invoices_w', key: ['invoice_id'] },
      passes: [
        {
          name: 'keyed',
          pattern: '1:1',
          when: "l.ref = r.ref AND ABS(l.amount - r.total) <= 0.01 AND r.day BETWEEN l.day AND l.day + INTERVAL '2 days'",
        },
        {
          name: 'window',
          pattern: '1:1',
          when: "r.day BETWEEN l.day - INTERVAL '5 days' AND l.day + INTERVAL '5 days' AND ABS(l.amount - r.total) <= 0.01",
        },
      ],
    }
    const results = []
    for (const run of await bothEngines(app, recipe)) results.push(await everything(app, run.id))
    const [memory, postgres] = results
    t.same(memory.left, [
      "T1 ~ I034 keyed: r.day BETWEEN l.day AND l.day + INTERVAL '2 days'",
      'T2 ~ I040 window: ABS(l.amount - r.total) <= 0.01',
    ])
    t.same(postgres.left, memory.left, 'the PostgreSQL engine gives the same closest candidates and failed conjuncts')
    t.same(postgres.right, memory.right)
  },
)
