// Group sums with fees on engine "postgres": the database selects the candidate pairs, the
// in-process assignment sums the groups, so the columns the SUM's argument and `equals` read must
// be fetched even when `when` never mentions them (gross_amount, fee_amount below). Both engines
// must give the same matches, deltas, unmatched records and totals: on generated captures with
// fees, rates and one-sided tolerances, and on the payouts dataset when it is there.

import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { testApp } from './helpers/app.js'
import { datasetsDir, datasetsSkip } from './helpers/datasets.js'
import { type TestDatabase, testDatabase } from './helpers/pg.js'
import { waitForRun } from './helpers/runs.js'

async function everything(app: FastifyInstance, id: string) {
  const get = async (url: string) => {
    const items = []
    for (let offset = 0; ; offset += 1000) {
      const page = (await app.inject({ method: 'GET', url: `${url}?offset=${offset}&limit=1000` })).json()
      items.push(...page.items)
      if (offset + 1000 >= page.total) return items
    }
  }
  const matches = (await get(`/api/runs/${id}/matches`)).map(
    // a group's keys in key order: the memory engine lists them in the source's row order, which
    // for a PostgreSQL table is its physical order, and the postgres engine by key
    (m: { pass: string; left_keys: string[]; right_keys: string[]; ambiguous: boolean; deltas: { amount: string } }) =>
      `${m.pass} ${[...m.left_keys].sort().join('+')}|${[...m.right_keys].sort().join('+')}${m.ambiguous ? ' ambiguous' : ''} ${m.deltas.amount}`,
  )
  const left = (await get(`/api/runs/${id}/unmatched/left`)).map((u: { record_key: string }) => u.record_key)
  const right = (await get(`/api/runs/${id}/unmatched/right`)).map((u: { record_key: string }) => u.record_key)
  return { matches: matches.sort(), left: left.sort(), right: right.sort() }
}

/** Runs `recipe` on both engines; returns [memory, postgres]. */
async function bothEngines(t: Test, app: FastifyInstance, recipe: object) {
  const results = []
  for (const engine of ['memory', 'postgres']) {
    const started = await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe, engine } })
    t.equal(started.statusCode, 202, started.body)
    const run = await waitForRun(app, started.json().id)
    t.equal(run.status, 'completed', `${engine}: ${JSON.stringify(run.error)}`)
    results.push({ summary: run.summary, ...(await everything(app, run.id)) })
  }
  return results
}

async function register(t: Test, app: FastifyInstance, db: TestDatabase, tables: string[]) {
  for (const table of tables) {
    const res = await app.inject({
      method: 'POST',
      url: '/api/sources',
      payload: { alias: table, type: 'postgres', connection_string: db.url, schema: db.schema, table },
    })
    t.equal(res.statusCode, 201, res.body)
  }
}

/** Rows inserted in batches of one multi-row INSERT each (values bound). */
async function insert(db: TestDatabase, table: string, rows: (string | null)[][]) {
  for (let k = 0; k < rows.length; k += 500) {
    const batch = rows.slice(k, k + 500)
    const width = batch[0].length
    const values = batch.map(
      (_, r) => `(${Array.from({ length: width }, (_, c) => `$${r * width + c + 1}`).join(', ')})`,
    )
    await db.query(`INSERT INTO ${table} VALUES ${values.join(', ')}`, batch.flat())
  }
}

/** mulberry32: the same seed gives the same tables everywhere. */
function seeded(seed: number) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let x = Math.imul(a ^ (a >>> 15), 1 | a)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

const money = (cents: number) =>
  `${cents < 0 ? '-' : ''}${Math.floor(Math.abs(cents) / 100)}.${String(Math.abs(cents) % 100).padStart(2, '0')}`

/**
 * Captures (gross, fee, net) and payouts of a few shapes: net sum less 0.49; 98 % of the gross
 * sum; a few cents above or below; refunds inside a group; and payouts nothing pays.
 */
function feeTables(seed: number) {
  const next = seeded(seed)
  const captures: (string | null)[][] = []
  const payouts: (string | null)[][] = []
  for (let p = 0; p < 60; p++) {
    const seller = `S${Math.floor(next() * 8)}`
    const day = 1 + Math.floor(next() * 20)
    const n = 1 + Math.floor(next() * 4)
    let net = 0
    let gross = 0
    for (let k = 0; k < n; k++) {
      const g = next() < 0.1 ? -Math.floor(next() * 3000) : 500 + Math.floor(next() * 40_000)
      const fee = Math.round(Math.abs(g) * 0.03)
      const id = `C${String(captures.length).padStart(4, '0')}`
      captures.push([
        id,
        seller,
        `2025-03-${String(day).padStart(2, '0')}T10:00:00Z`,
        money(g),
        money(fee),
        money(g - fee),
      ])
      net += g - fee
      gross += g
    }
    const shape = next()
    // 98 % of the gross, rounded down to the cent (the rate pass allows 0.01 above)
    const cents =
      shape < 0.45
        ? net - 49
        : shape < 0.75
          ? Math.floor((gross * 98) / 100)
          : shape < 0.9
            ? net - 49 + Math.floor(next() * 9) - 4
            : 999_999
    payouts.push([
      `P${String(p).padStart(3, '0')}`,
      seller,
      `2025-03-${String(day + 2).padStart(2, '0')}`,
      money(cents),
    ])
  }
  return { captures, payouts }
}

const feeRecipe = {
  name: 'fees',
  left: { source: 'caps', key: ['capture_id'] },
  right: { source: 'pays', key: ['payout_id'] },
  passes: [
    {
      name: 'net_less_fee',
      pattern: 'N:1',
      when: "l.seller_id = r.seller_id AND r.payout_date BETWEEN CAST(l.captured_at AS date) AND CAST(l.captured_at AS date) + INTERVAL '3 days'",
      // reads gross_amount and fee_amount, which no `when` mentions
      aggregate: {
        sum: 'SUM(l.gross_amount - l.fee_amount) - 0.49',
        equals: 'r.amount',
        tolerance: { below: '0.03' },
        max_group: 4,
      },
    },
    {
      name: 'share_of_gross',
      pattern: 'N:1',
      when: 'l.seller_id = r.seller_id',
      aggregate: {
        sum: 'SUM(l.gross_amount) * 0.98',
        equals: 'r.amount',
        tolerance: { below: 0, above: '0.01' },
        max_group: 4,
      },
    },
  ],
}

t.test('fees, rates and one-sided tolerances: both engines give the same groups and deltas', async (t) => {
  const db = await testDatabase(t)
  const { app } = await testApp(t)
  await db.query(
    'CREATE TABLE caps (capture_id text PRIMARY KEY, seller_id text, captured_at timestamptz, gross_amount numeric(12,2), fee_amount numeric(12,2), net_amount numeric(12,2))',
  )
  await db.query(
    'CREATE TABLE pays (payout_id text PRIMARY KEY, seller_id text, payout_date date, amount numeric(12,2))',
  )
  await register(t, app, db, ['caps', 'pays'])
  for (const seed of [3, 15]) {
    const { captures, payouts } = feeTables(seed)
    await db.query('TRUNCATE caps, pays')
    await insert(db, 'caps', captures)
    await insert(db, 'pays', payouts)
    const [memory, postgres] = await bothEngines(t, app, feeRecipe)
    t.same(postgres.matches, memory.matches, `seed ${seed}: the same groups and deltas, pass by pass`)
    t.same([postgres.left, postgres.right], [memory.left, memory.right], `seed ${seed}: the same unmatched records`)
    t.same([postgres.summary.left, postgres.summary.right], [memory.summary.left, memory.summary.right])
    // the data reaches every pass, exact fits and near ones alike
    for (const pass of ['net_less_fee', 'share_of_gross'])
      t.ok(memory.matches.filter((m: string) => m.startsWith(`${pass} `)).length >= 5, `seed ${seed}: ${pass} matches`)
    t.ok(
      memory.matches.some((m: string) => /^net_less_fee .* -0\.0[1-3]0*$/.test(m)),
      `seed ${seed}: a group below its payout`,
    )
    t.ok(
      memory.matches.some((m: string) => /^share_of_gross .* 0\.00(0[1-9]|[1-9]\d)$/.test(m)),
      `seed ${seed}: a rate leaving a fraction of a cent`,
    )
  }
})

t.test('payouts/ on engine "postgres": the same links as in memory', { skip: datasetsSkip }, async (t) => {
  const db = await testDatabase(t)
  const { app } = await testApp(t)
  const csv = async (file: string) =>
    (await readFile(join(datasetsDir, 'payouts', file), 'utf8'))
      .trim()
      .split(/\r?\n/)
      .slice(1)
      .map((line) => line.split(','))
  await db.query(
    'CREATE TABLE captures (capture_id text PRIMARY KEY, seller_id text, order_id text, captured_at timestamptz, currency text, gross_amount numeric(12,2), fee_amount numeric(12,2), net_amount numeric(12,2), status text)',
  )
  await db.query(
    'CREATE TABLE payouts (payout_id text PRIMARY KEY, seller_id text, payout_date date, currency text, amount numeric(12,2))',
  )
  await insert(db, 'captures', await csv('captures.csv'))
  await insert(db, 'payouts', await csv('payouts.csv'))
  await register(t, app, db, ['captures', 'payouts'])
  const recipe = {
    name: 'captures-vs-payouts',
    left: { source: 'captures', key: ['capture_id'] },
    right: { source: 'payouts', key: ['payout_id'] },
    passes: [
      {
        name: 'payout',
        pattern: 'N:1',
        when: "l.seller_id = r.seller_id AND l.currency = r.currency AND r.payout_date BETWEEN CAST(l.captured_at AS date) AND CAST(l.captured_at AS date) + INTERVAL '7 days'",
        aggregate: { sum: 'SUM(l.net_amount) - 0.49', equals: 'r.amount', tolerance: 0, max_group: 5 },
      },
    ],
  }
  const [memory, postgres] = await bothEngines(t, app, recipe)
  t.same(postgres.matches, memory.matches)
  t.same([postgres.left, postgres.right], [memory.left, memory.right])
  t.equal(memory.matches.length, 855, 'every payout with its captures in the export')
})
