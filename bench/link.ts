// Probabilistic pass benchmark (issue 15), as users run it: two files of transfers with no shared
// key (bench/gen-unkeyed.ts), linked by the whole `concord reconcile … --out DIR` command (start,
// load, block, learn, assign, write the three CSV result sets), against a DuckDB script doing the
// SQL baseline (bench/link-duckdb.ts: band join, jaro_winkler_similarity, the mutually best pair,
// the same three CSV files). Each run is its own process, the two alternated BENCH_RUNS times (3);
// the table shows median wall time, peak RSS (GNU time) and precision / recall against truth.csv;
// per row, the whole command's time and the engine's own (the summary's timings.total_ms, without
// start-up, reading and writing).
//   npm run bench:link [-- --rows 10000,45000,100000,1000000]
// The DuckDB script's join grows with the square of the rows in a window (about 4 minutes at 100k),
// so past BENCH_DUCKDB_MAX_ROWS rows per side (100000) it is not run and its cells say so.

import { existsSync, readFileSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { writeUnkeyed } from './gen-unkeyed.js'
import { scoreUnkeyed } from './score-unkeyed.js'
import { compiledScript, median, type Timed, timed, timedReconcile } from './whole-process.js'

const arg = process.argv.indexOf('--rows')
const sizes = (arg >= 0 ? process.argv[arg + 1] : '10000,45000,100000').split(',').map(Number)
const runs = Number(process.env.BENCH_RUNS ?? 3)
const duckdbMaxRows = Number(process.env.BENCH_DUCKDB_MAX_ROWS ?? 100_000)
const recipe = resolve('bench/recipes/unkeyed-probabilistic.json')
const reference = compiledScript('bench/link-duckdb.ts')
const rows: string[] = []
for (const n of sizes) {
  const dir = resolve(`bench/data/unkeyed-${n}`)
  if (!existsSync(join(dir, 'truth.csv'))) await writeUnkeyed(dir, { rows: n })
  const [sent, received, truth] = ['sent.csv', 'received.csv', 'truth.csv'].map((f) => join(dir, f))
  const outs = { concord: join(dir, 'out-concord'), duckdb: join(dir, 'out-duckdb') }
  const concord: Timed[] = []
  const duckdb: Timed[] = []
  for (let k = 0; k < runs; k++) {
    for (const out of Object.values(outs)) rmSync(out, { recursive: true, force: true })
    concord.push(timedReconcile(sent, received, recipe, outs.concord))
    if (n <= duckdbMaxRows) duckdb.push(timed([process.execPath, reference, sent, received, outs.duckdb], process.env))
    console.error(
      `${n}: run ${k + 1}: concord ${concord[k].ms.toFixed(0)} ms, duckdb ${duckdb[k]?.ms.toFixed(0) ?? 'not run'} ms`,
    )
  }
  const score = (out: string) =>
    scoreUnkeyed(readFileSync(truth, 'utf8'), readFileSync(join(out, 'matches.csv'), 'utf8'))
  const ours = score(outs.concord)
  const c = median(concord.map((x) => x.ms))
  const cRss = Math.max(...concord.map((x) => x.rssMiB)).toFixed(0)
  const engine = median(
    concord.map((x) => (JSON.parse(x.stdout) as { timings: { total_ms: number } }).timings.total_ms),
  )
  const perRow = `${((c * 1e3) / n).toFixed(0)} / ${((engine * 1e3) / n).toFixed(0)} µs`
  const oursPR = `${ours.precision.toFixed(4)} / ${ours.recall.toFixed(4)}`
  if (duckdb.length === 0) {
    rows.push(
      `| ${n.toLocaleString('en')} | ${c.toFixed(0)} ms | not run | | ${perRow} | ${cRss} / – MiB | ${oursPR} | |`,
    )
    continue
  }
  const theirs = score(outs.duckdb)
  const d = median(duckdb.map((x) => x.ms))
  rows.push(
    `| ${n.toLocaleString('en')} | ${c.toFixed(0)} ms | ${d.toFixed(0)} ms | ${(c / d).toFixed(2)}× | ` +
      `${perRow} | ${cRss} / ${Math.max(...duckdb.map((x) => x.rssMiB)).toFixed(0)} MiB | ` +
      `${oursPR} | ${theirs.precision.toFixed(4)} / ${theirs.recall.toFixed(4)} |`,
  )
}
console.log(
  '\n| rows per side | Concord, whole command (median) | DuckDB script (median) | ratio | Concord per row (whole / engine) | peak RSS Concord / DuckDB | Concord precision / recall | DuckDB precision / recall |',
)
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |')
for (const r of rows) console.log(r)
