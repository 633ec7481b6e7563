// What users run, as whole processes (issue 17): `concord reconcile --left L --right R --recipe
// bench/recipes/recon-keyed.json --out DIR` writing the CSV result sets, against a DuckDB script
// that loads the same files typed, joins them and writes matches and both unmatched sets as CSV
// (bench/recon-duckdb.ts, compiled to JavaScript first as Concord is); the two alternated
// BENCH_RUNS times (3) on the keyed workload of bench/gen-recon.ts. Alternated with them, the same
// reconciliation over REST: a `concord serve` started once (files registered by path), timed from
// POST /api/runs (an inline recipe) to the last byte of its three CSV exports, downloaded together
// with curl; the files' mtime is touched before each run so no cached parse is reused (a new day's
// file). Also `concord --help`, the start-up a shell user meets. Wall time as seen from here, peak
// RSS as GNU time reports it; medians. Concord runs from dist/ (npm run build): the service with
// the start script's GLIBC_TUNABLES, the commands as a shell user starts them, through
// bin/concord.js's shebang line (which sets it for itself).
//   npm run bench:command [-- --rows 100000,1000000]

import { execFile, spawn, spawnSync } from 'node:child_process'
import { existsSync, linkSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { reconFiles, writeRecon } from './gen-recon.js'
import {
  AS_A_USER,
  AS_NPM_START,
  compiledScript,
  concordCommand,
  median,
  type Timed,
  timed,
  timedReconcile,
} from './whole-process.js'

const arg = process.argv.indexOf('--rows')
const sizes = (arg >= 0 ? process.argv[arg + 1] : '1000000').split(',').map(Number)
const runs = Number(process.env.BENCH_RUNS ?? 3)
const recipe = resolve('bench/recipes/recon-keyed.json')

if (spawnSync(process.execPath, ['scripts/build.js']).status !== 0) throw new Error('npm run build failed')
const help = Array.from({ length: 5 }, () => timed(concordCommand('--help'), AS_A_USER))
const reference = compiledScript('bench/recon-duckdb.ts')
console.log(`concord --help: median ${median(help.map((h) => h.ms)).toFixed(0)} ms of 5`)

/**
 * The bytes of a download with curl, as an ops user fetches an export. The client shares the two
 * cores with the service: undici's `fetch` read the three exports (150 MB) with 0.56-0.71 s of CPU
 * and took 0.65-0.75 s, curl 0.45-0.6 s (five rounds each, one run's exports).
 */
function download(url: string): Promise<number> {
  return new Promise((resolve, reject) =>
    execFile('curl', ['-sS', '--fail', '-o', '/dev/null', '-w', '%{size_download}', url], (err, out) =>
      err ? reject(new Error(`curl ${url}: ${err.message}`)) : resolve(Number(out)),
    ),
  )
}

/** A `concord serve` on a data folder holding (hard links to) the workload's two files. */
async function server(files: { left: string; right: string }, n: number) {
  const dataDir = resolve(`bench/data/serve-command-${n}`)
  rmSync(dataDir, { recursive: true, force: true })
  mkdirSync(dataDir, { recursive: true })
  linkSync(files.left, join(dataDir, 'left.csv'))
  linkSync(files.right, join(dataDir, 'right.csv'))
  const port = 18_600 + (n % 100)
  const child = spawn(process.execPath, ['bin/concord.js', 'serve'], {
    env: { ...AS_NPM_START, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    stdio: 'ignore',
  })
  const base = `http://127.0.0.1:${port}`
  for (;;) {
    if ((await fetch(`${base}/ready`).catch(() => undefined))?.ok) break
    await new Promise((r) => setTimeout(r, 50))
  }
  const post = async (path: string, body: unknown) => {
    const res = await fetch(base + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`)
    return (await res.json()) as { id: string }
  }
  await post('/api/sources', { alias: 'bank', type: 'csv', path: 'left.csv' })
  await post('/api/sources', { alias: 'invoices', type: 'csv', path: 'right.csv' })
  const inline = JSON.parse(readFileSync(recipe, 'utf8')) as unknown
  return {
    /** POST /api/runs until the last byte of the three CSV exports; the bytes of each. */
    async run(): Promise<{ ms: number; completedMs: number; bytes: number[] }> {
      const now = new Date()
      for (const f of ['left.csv', 'right.csv']) utimesSync(join(dataDir, f), now, now)
      const t0 = performance.now()
      const { id } = await post('/api/runs', { recipe: inline })
      for (;;) {
        const run = (await (await fetch(`${base}/api/runs/${id}`)).json()) as { status: string }
        if (run.status === 'completed') break
        if (run.status !== 'queued' && run.status !== 'running') throw new Error(`run ${id}: ${run.status}`)
        await new Promise((r) => setTimeout(r, 20))
      }
      const completedMs = performance.now() - t0
      const bytes = await Promise.all(
        ['matches', 'unmatched-left', 'unmatched-right'].map((set) =>
          download(`${base}/api/runs/${id}/export?set=${set}&format=csv`),
        ),
      )
      return { ms: performance.now() - t0, completedMs, bytes }
    },
    stop: () => {
      child.kill('SIGTERM')
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** The bytes of the CSV files a run wrote into `dir`. */
const csvBytes = (dir: string) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.csv'))
    .reduce((sum, f) => sum + statSync(join(dir, f)).size, 0)
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`

const rows: string[] = []
const restRows: string[] = []
for (const n of sizes) {
  const files = reconFiles(n)
  if (!existsSync(files.right)) await writeRecon(n)
  const outs = {
    concord: resolve(`bench/data/out-command-concord-${n}`),
    duckdb: resolve(`bench/data/out-command-duckdb-${n}`),
  }
  const concord: Timed[] = []
  const duckdb: Timed[] = []
  const rest: number[] = []
  const serve = await server(files, n)
  for (let k = 0; k < runs; k++) {
    for (const out of Object.values(outs)) rmSync(out, { recursive: true, force: true })
    concord.push(timedReconcile(files.left, files.right, recipe, outs.concord))
    duckdb.push(timed([process.execPath, reference, files.left, files.right, outs.duckdb], AS_A_USER))
    const viaRest = await serve.run()
    rest.push(viaRest.ms)
    console.error(
      `${n}: run ${k + 1}: concord ${concord[k].ms.toFixed(0)} ms, duckdb ${duckdb[k].ms.toFixed(0)} ms, ` +
        `REST ${viaRest.ms.toFixed(0)} ms (completed at ${viaRest.completedMs.toFixed(0)} ms; ${viaRest.bytes.join(' + ')} bytes)`,
    )
  }
  serve.stop()
  // not the same bytes: Concord's unmatched sets carry each record's evidence (closest candidate,
  // failed pass and conjunct, the reason in words) and its matches the pass, score and deltas
  const written = `${mb(csvBytes(outs.concord))} / ${mb(csvBytes(outs.duckdb))}`
  const c = median(concord.map((x) => x.ms))
  const d = median(duckdb.map((x) => x.ms))
  const r = median(rest)
  // the host's speed drifts by 10-30% within minutes, so each pair's own ratio (the two processes
  // ran back to back) and the CPU time say more than the ratio of the medians alone
  const pairs = median(concord.map((x, k) => x.ms / duckdb[k].ms))
  const wins = concord.filter((x, k) => x.ms < duckdb[k].ms).length
  const cpu = (ts: Timed[]) => median(ts.map((x) => x.cpuS))
  restRows.push(
    `| ${n.toLocaleString('en')} | ${r.toFixed(0)} ms (runs ${rest.map((x) => x.toFixed(0)).join(', ')}) | ${d.toFixed(0)} ms | ${(r / d).toFixed(2)}× |`,
  )
  rows.push(
    `| ${n.toLocaleString('en')} | ${c.toFixed(0)} ms (runs ${concord.map((x) => x.ms.toFixed(0)).join(', ')}) | ` +
      `${d.toFixed(0)} ms (runs ${duckdb.map((x) => x.ms.toFixed(0)).join(', ')}) | ${(c / d).toFixed(2)}× | ` +
      `${pairs.toFixed(2)}×, faster in ${wins} of ${runs} | ${cpu(concord).toFixed(2)} / ${cpu(duckdb).toFixed(2)} s | ` +
      `${Math.max(...concord.map((x) => x.rssMiB)).toFixed(0)} / ${Math.max(...duckdb.map((x) => x.rssMiB)).toFixed(0)} MiB | ${written} |`,
  )
}
console.log(
  '\n| rows per side | `concord reconcile … --out` (CSV), median | DuckDB script, median | ratio of medians | median of pairs | CPU Concord / DuckDB, median | peak RSS Concord / DuckDB | CSV written Concord / DuckDB |',
)
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |')
for (const r of rows) console.log(r)
console.log(
  '\n| rows per side | REST: POST /api/runs to the last byte of 3 CSV exports, median | DuckDB script, median | ratio |',
)
console.log('| --- | --- | --- | --- |')
for (const r of restRows) console.log(r)
