// CSV load benchmark: Concord's loader vs DuckDB's read_csv (2 threads) on the same seeded file.
// Each engine runs in its own child process so peak RSS is its own. Best of 3 wall times.
//   npm run bench:csv [-- --rows 1000000]

import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { writeBankCsv } from './gen-data.js'

const rows = Number(process.argv[process.argv.indexOf('--rows') + 1] || 1_000_000) || 1_000_000
const file = resolve(`bench/data/bank-${rows}.csv`)
if (!existsSync(file)) await writeBankCsv(file, rows)

const child = (engine: string): { ms: number; rss: number; rows: number } => {
  const out = execFileSync(process.execPath, ['--import', 'tsx', resolve('bench/csv-load-child.ts'), engine, file], {
    encoding: 'utf8',
  })
  return JSON.parse(out.trim().split('\n').pop()!)
}

const results: Record<string, { ms: number; rss: number; rows: number }> = {}
for (const engine of ['concord', 'duckdb', 'csv-parse']) {
  const runs = [child(engine), child(engine), child(engine)]
  const best = runs.reduce((a, b) => (b.ms < a.ms ? b : a))
  results[engine] = { ms: best.ms, rss: Math.max(...runs.map((r) => r.rss)), rows: best.rows }
}
console.log(`\nCSV load, ${rows.toLocaleString('en')} rows × 5 columns (${file})\n`)
console.log('| engine | rows | time (best of 3) | peak RSS |')
console.log('|---|---|---|---|')
for (const [engine, r] of Object.entries(results)) {
  console.log(`| ${engine} | ${r.rows} | ${r.ms.toFixed(0)} ms | ${(r.rss / 1024).toFixed(0)} MiB |`)
}
