// What users run, as whole processes (issue 17): `concord reconcile --left L --right R --recipe
// bench/recipes/recon-keyed.json --out DIR` writing the CSV result sets, against a DuckDB script
// that loads the same files typed, joins them and writes matches and both unmatched sets as CSV
// (bench/recon-duckdb.ts); the two alternated BENCH_RUNS times (3) on the keyed workload of
// bench/gen-recon.ts. Also `concord --help`, the start-up a shell user meets. Wall time as seen
// from here, peak RSS as GNU time reports it; medians. Concord runs from dist/ (npm run build) with
// the start script's GLIBC_TUNABLES.
//   npm run bench:command [-- --rows 100000,1000000]

import { spawnSync } from 'node:child_process'
import { existsSync, rmSync } from 'node:fs'
import { resolve } from 'node:path'
import { reconFiles, writeRecon } from './gen-recon.js'
import { AS_NPM_START, median, type Timed, timed } from './whole-process.js'

const arg = process.argv.indexOf('--rows')
const sizes = (arg >= 0 ? process.argv[arg + 1] : '1000000').split(',').map(Number)
const runs = Number(process.env.BENCH_RUNS ?? 3)
const recipe = resolve('bench/recipes/recon-keyed.json')

if (spawnSync(process.execPath, ['scripts/build.js']).status !== 0) throw new Error('npm run build failed')
const help = Array.from({ length: 5 }, () => timed([process.execPath, 'bin/concord.js', '--help'], AS_NPM_START))
console.log(`concord --help: median ${median(help.map((h) => h.ms)).toFixed(0)} ms of 5`)

const rows: string[] = []
for (const n of sizes) {
  const files = reconFiles(n)
  if (!existsSync(files.right)) await writeRecon(n)
  const outs = {
    concord: resolve(`bench/data/out-command-concord-${n}`),
    duckdb: resolve(`bench/data/out-command-duckdb-${n}`),
  }
  const concord: Timed[] = []
  const duckdb: Timed[] = []
  for (let k = 0; k < runs; k++) {
    for (const out of Object.values(outs)) rmSync(out, { recursive: true, force: true })
    concord.push(
      timed(
        [
          process.execPath,
          'bin/concord.js',
          'reconcile',
          '--left',
          files.left,
          '--right',
          files.right,
          '--recipe',
          recipe,
          '--out',
          outs.concord,
          '--json',
        ],
        AS_NPM_START,
      ),
    )
    duckdb.push(
      timed(
        [process.execPath, '--import', 'tsx', 'bench/recon-duckdb.ts', files.left, files.right, outs.duckdb],
        process.env,
      ),
    )
    console.error(`${n}: run ${k + 1}: concord ${concord[k].ms.toFixed(0)} ms, duckdb ${duckdb[k].ms.toFixed(0)} ms`)
  }
  const c = median(concord.map((x) => x.ms))
  const d = median(duckdb.map((x) => x.ms))
  rows.push(
    `| ${n.toLocaleString('en')} | ${c.toFixed(0)} ms | ${d.toFixed(0)} ms | ${(c / d).toFixed(2)}× | ` +
      `${Math.max(...concord.map((x) => x.rssMiB)).toFixed(0)} / ${Math.max(...duckdb.map((x) => x.rssMiB)).toFixed(0)} MiB |`,
  )
}
console.log(
  '\n| rows per side | `concord reconcile … --out` (CSV), median | DuckDB script, median | ratio | peak RSS Concord / DuckDB |',
)
console.log('| --- | --- | --- | --- | --- |')
for (const r of rows) console.log(r)
