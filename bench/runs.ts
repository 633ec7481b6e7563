// Runs benchmark: on the engine benchmark's workload (bench/gen-recon.ts), the cost of a run as a
// service and as a command over the bare engine, all three doing load + match + writing the
// result files; and the PostgreSQL engine next to the in-process engine on the same data in the
// local PostgreSQL (database test).
//   npm run bench:runs [-- --rows 1000000]

import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, dirname, join, resolve } from 'node:path'
import pg from 'pg'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/connect.js'
import { loadCsv } from '../src/engine/load/csv/index.js'
import { reconcile } from '../src/engine/reconcile.js'
import type { Recipe } from '../src/recipes/schema.js'
import { writeSets } from '../src/runs/write-sets.js'
import { reconFiles, writeRecon } from './gen-recon.js'

const arg = process.argv.indexOf('--rows')
const rows = arg >= 0 ? Number(process.argv[arg + 1]) : 1_000_000
const files = reconFiles(rows)
if (!existsSync(files.left) || !existsSync(files.right)) await writeRecon(rows)
const dataDir = resolve(dirname(files.left))
const url = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test'

const recipe: Recipe = {
  name: 'bench',
  left: { source: 'bank', key: ['txn_id'] },
  right: { source: 'invoices', key: ['invoice_id'] },
  passes: [
    {
      name: 'match',
      pattern: '1:1',
      when: "l.reference = r.ref AND ABS(l.amount - r.total_amount) <= 0.01 AND r.invoice_date BETWEEN l.txn_date - INTERVAL '3 days' AND l.txn_date",
    },
  ],
}

const figures: [string, number, string][] = []
const note = (what: string, ms: number, detail = '') => {
  figures.push([what, ms, detail])
  console.error(`${what}: ${ms.toFixed(0)} ms ${detail}`)
}

// 1. the bare engine, in this process: load, match, write the three files
{
  const out = await mkdtemp(join(tmpdir(), 'bench-runs-'))
  const t0 = performance.now()
  const [l, r] = await Promise.all([loadCsv(files.left), loadCsv(files.right)])
  const result = reconcile(recipe, l.table, r.table)
  await writeSets({ result, leftKey: ['txn_id'], rightKey: ['invoice_id'] }, out, 'arrow')
  note('bare engine (load + match + write files)', performance.now() - t0, `${result.summary.matches} matches`)
  await rm(out, { recursive: true, force: true })
}

// 2. concord reconcile, a fresh process (Node start and module loading included)
{
  const dir = await mkdtemp(join(tmpdir(), 'bench-cli-'))
  await writeFile(join(dir, 'recipe.json'), JSON.stringify(recipe))
  const t0 = performance.now()
  execFileSync(process.execPath, [
    'bin/concord.js',
    'reconcile',
    '--left',
    files.left,
    '--right',
    files.right,
    '--recipe',
    join(dir, 'recipe.json'),
    '--out',
    join(dir, 'out'),
    '--format',
    'arrow',
    '--json',
  ])
  note('concord reconcile --out (whole command)', performance.now() - t0)
  await rm(dir, { recursive: true, force: true })
}

// 3. REST: POST /api/runs to completed, first run (worker starts) and second (worker reused)
const runsDir = await mkdtemp(join(tmpdir(), 'bench-rest-'))
const database = await openDatabase({ pgliteDir: 'memory://' })
const app = await buildApp({
  config: loadConfig({ DATA_DIR: dataDir, RUNS_DIR: runsDir, LOG_LEVEL: 'silent', RATE_LIMIT_PER_MINUTE: '1000000' }),
  database,
  logger: false,
})
await app.ready()
const inject = async (method: 'GET' | 'POST', url: string, payload?: unknown) => {
  const res = await app.inject({ method, url, payload: payload as object })
  if (res.statusCode >= 400) throw new Error(`${url}: ${res.body}`)
  return res.json()
}
const timedRun = async (body: unknown): Promise<number> => {
  const t0 = performance.now()
  const { id } = await inject('POST', '/api/runs', body)
  for (;;) {
    const run = await inject('GET', `/api/runs/${id}`)
    if (run.status === 'completed') return performance.now() - t0
    if (run.status !== 'queued' && run.status !== 'running') throw new Error(JSON.stringify(run.error))
    await new Promise((r) => setTimeout(r, 20))
  }
}
await inject('POST', '/api/sources', { alias: 'bank', type: 'csv', path: basename(files.left) })
await inject('POST', '/api/sources', { alias: 'invoices', type: 'csv', path: basename(files.right) })
note('REST run, first (worker starts)', await timedRun({ recipe }))
note('REST run, second (worker reused)', await timedRun({ recipe }))

// 4. the same data in PostgreSQL: in-process engine (loading through the connector) vs engine "postgres"
const admin = new pg.Client({ connectionString: url })
await admin.connect()
const tables = { left: `bench_recon_left_${rows}`, right: `bench_recon_right_${rows}` }
const ddl = {
  left: 'txn_id text, account text, amount numeric(12,2), txn_date date, reference text',
  right: 'invoice_id text, customer text, total_amount numeric(12,2), invoice_date date, ref text',
}
for (const side of ['left', 'right'] as const) {
  const exists = await admin.query('SELECT 1 FROM pg_class WHERE relname = $1', [tables[side]])
  if (exists.rowCount === 0) {
    await admin.query(`CREATE TABLE ${tables[side]} (${ddl[side]})`)
    execFileSync('psql', [url, '-q', '-c', `\\copy ${tables[side]} FROM '${resolve(files[side])}' CSV HEADER`])
    await admin.query(`VACUUM ANALYZE ${tables[side]}`)
  }
}
await admin.end()
const pgRecipe = {
  ...recipe,
  left: { ...recipe.left, source: 'pg_bank' },
  right: { ...recipe.right, source: 'pg_invoices' },
}
await inject('POST', '/api/sources', { alias: 'pg_bank', type: 'postgres', connection_string: url, table: tables.left })
await inject('POST', '/api/sources', {
  alias: 'pg_invoices',
  type: 'postgres',
  connection_string: url,
  table: tables.right,
})
note('REST run on PostgreSQL tables, engine "memory"', await timedRun({ recipe: pgRecipe, engine: 'memory' }))
note('REST run on PostgreSQL tables, engine "postgres"', await timedRun({ recipe: pgRecipe, engine: 'postgres' }))
await app.close()
await database.close()
await rm(runsDir, { recursive: true, force: true })

console.log(`\nRuns, ${rows.toLocaleString('en')} rows per side (one run each; node ${process.version})\n`)
console.log('| what | time | |')
console.log('|---|---|---|')
for (const [what, ms, detail] of figures) console.log(`| ${what} | ${ms.toFixed(0)} ms | ${detail} |`)
