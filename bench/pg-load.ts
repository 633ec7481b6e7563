// PostgreSQL load benchmark: Concord's scoped load of a 1,000,000-row, 5-column table into typed
// columns vs `COPY (SELECT …) TO STDOUT` of the same rows read by psql. Local server, database test.
//   npm run bench:pg [-- --rows 1000000]

import { execFileSync } from 'node:child_process'
import pg from 'pg'
import { postgresConnector } from '../connectors/postgres.js'
import { EngineContext } from '../src/sources/connector.js'

const url = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test'
const rows = Number(process.argv[process.argv.indexOf('--rows') + 1] || 1_000_000) || 1_000_000
const table = `bench_bank_${rows}`

const admin = new pg.Client({ connectionString: url })
await admin.connect()
const exists = await admin.query('SELECT 1 FROM pg_class WHERE relname = $1', [table])
if (exists.rowCount === 0) {
  // Seeded by generate_series and hash functions: the same rows on every machine.
  await admin.query(`CREATE TABLE ${table} AS
    SELECT i AS txn_id,
           'ACC-' || lpad((abs(hashint4(i)) % 5000)::text, 5, '0') AS account,
           round(((abs(hashint4(i * 7)) % 5000000) + 100) / 100.0, 2)::numeric(12,2) AS amount,
           DATE '2024-01-01' + (abs(hashint4(i * 13)) % 366) AS txn_date,
           'REF-' || lpad(i::text, 8, '0') AS reference
      FROM generate_series(1, ${rows}) AS i`)
  await admin.query(`VACUUM ANALYZE ${table}`)
}
await admin.end()

const connector = postgresConnector({ statementTimeoutMs: 600_000, poolMax: 1 })
const source = { alias: 'bank', type: 'postgres', config: await connector.prepare({ connection_string: url, table }) }
const time = async (fn: () => Promise<unknown> | unknown) => {
  let best = Number.POSITIVE_INFINITY
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now()
    await fn()
    best = Math.min(best, performance.now() - t0)
  }
  return best
}
let loaded = 0
const ours = await time(async () => {
  const scoped = await connector.registerScoped(new EngineContext(), 'bank', source, [])
  loaded = scoped.table.length
})
await connector.close?.()
const copy = await time(() =>
  execFileSync(
    'psql',
    [url, '-q', '-c', `COPY (SELECT txn_id, account, amount, txn_date, reference FROM ${table}) TO STDOUT`],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
      maxBuffer: 1 << 30,
    },
  ),
)
console.log(`\nPostgreSQL load, ${rows.toLocaleString('en')} rows × 5 columns (best of 3)\n`)
console.log('| path | rows | time | rows/s |')
console.log('|---|---|---|---|')
console.log(
  `| concord scoped load (COPY text → typed columns) | ${loaded} | ${ours.toFixed(0)} ms | ${Math.round(rows / (ours / 1000)).toLocaleString('en')} |`,
)
console.log(
  `| psql COPY … TO STDOUT (text, discarded) | ${rows} | ${copy.toFixed(0)} ms | ${Math.round(rows / (copy / 1000)).toLocaleString('en')} |`,
)
