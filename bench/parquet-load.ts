// Parquet load benchmark: Concord's parquet connector vs DuckDB's read_parquet (2 threads) on the
// same file, the whole file and one month of it (row groups pruned by their statistics). The file
// is the CSV benchmark's bank data written by DuckDB, sorted by date, in its default row groups,
// once with Snappy (DuckDB's and pyarrow's default) and once with ZSTD. Each load runs in its own
// child process, alternated with the reference, so peak RSS is its own; medians of BENCH_RUNS (3).
//   npm run bench:parquet [-- --rows 1000000]

import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import { writeBankCsv } from './gen-data.js'
import { median } from './whole-process.js'

const rows = Number(process.argv[process.argv.indexOf('--rows') + 1] || 1_000_000) || 1_000_000
const runs = Number(process.env.BENCH_RUNS || 3)
const csv = resolve(`bench/data/bank-${rows}.csv`)
if (!existsSync(csv)) await writeBankCsv(csv, rows)

const files: Record<string, string> = {}
for (const codec of ['snappy', 'zstd']) {
  const file = resolve(`bench/data/bank-${rows}-${codec}.parquet`)
  if (!existsSync(file)) {
    const duck = await DuckDBInstance.create(':memory:', { threads: '2' })
    const db = await duck.connect()
    await db.run(
      `COPY (SELECT txn_id, account, amount::DECIMAL(12,2) AS amount, txn_date::DATE AS txn_date, reference
             FROM read_csv('${csv}') ORDER BY txn_date) TO '${file}' (FORMAT parquet, COMPRESSION ${codec})`,
    )
    db.closeSync()
    duck.closeSync()
  }
  files[codec] = file
}

interface Load {
  ms: number
  rss: number
  rows: number
  groups: string
}
const child = (engine: string, file: string, scope: string): Load => {
  const out = execFileSync(
    process.execPath,
    ['--import', 'tsx', resolve('bench/parquet-load-child.ts'), engine, file, scope],
    { encoding: 'utf8' },
  )
  return JSON.parse(out.trim().split('\n').pop()!) as Load
}

console.log(`\nParquet load, ${rows.toLocaleString('en')} rows × 5 columns, medians of ${runs} alternated runs\n`)
console.log('| file | scope | Concord | DuckDB read_parquet | ratio | peak RSS Concord / DuckDB | row groups read |')
console.log('|---|---|---|---|---|---|---|')
for (const [codec, file] of Object.entries(files)) {
  for (const scope of ['all', 'month']) {
    const concord: Load[] = []
    const duck: Load[] = []
    for (let i = 0; i < runs; i++) {
      concord.push(child('concord', file, scope))
      duck.push(child('duckdb', file, scope))
    }
    if (concord[0].rows !== duck[0].rows) throw new Error(`rows differ: ${concord[0].rows} vs ${duck[0].rows}`)
    const c = median(concord.map((r) => r.ms))
    const d = median(duck.map((r) => r.ms))
    const rss = (xs: Load[]) => (Math.max(...xs.map((r) => r.rss)) / 1024).toFixed(0)
    console.log(
      `| ${codec} | ${scope === 'all' ? `all ${concord[0].rows.toLocaleString('en')} rows` : `one month (${concord[0].rows.toLocaleString('en')} rows)`} | ${c.toFixed(0)} ms | ${d.toFixed(0)} ms | ${(c / d).toFixed(2)}× | ${rss(concord)} / ${rss(duck)} MiB | ${concord[0].groups.replace('row groups read: ', '')} |`,
    )
  }
}
