// Engine benchmark: the reconciliation workload (bench/gen-recon.ts) end to end — load
// both CSV files, run the recipe, hold matched / unmatched-left / unmatched-right in memory —
// for Concord and for DuckDB (same predicate as SQL with the tolerance written as BETWEEN,
// DECIMAL amounts, 2 threads), each in its own child process, best of 3. The results must be
// identical (compared by digest); the 1:N pass is measured on its own, and Concord once more with
// glibc's defaults (AS_NPM_START below).
//   npm run bench:recon [-- --rows 100000,1000000,10000000]

import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { reconFiles, writeRecon } from './gen-recon.js'

const arg = process.argv.indexOf('--rows')
const sizes = (arg >= 0 ? process.argv[arg + 1] : '1000000').split(',').map(Number)
const runs = Number(process.env.BENCH_RUNS ?? 3)

interface Out {
  ms: number
  rss: number
  matched: number
  unmatchedLeft: number
  unmatchedRight: number
  digests: Record<string, string>
  split?: { matches: number; ms: number }
  phases?: Record<string, number>
}

// Concord runs as `npm start` runs it: with glibc's malloc asking for transparent huge pages
// (package.json's start script and the Dockerfile set this tunable unless GLIBC_TUNABLES is set
// already). On this VM a 4 KiB page fault costs about 12 µs, and the engine's arrays are large and
// written once. It is measured once more with glibc's defaults. DuckDB runs under both settings
// and its faster result counts.
// `||`, like the start script's ${GLIBC_TUNABLES:-…}: an empty value counts as unset
const AS_NPM_START = { ...process.env, GLIBC_TUNABLES: process.env.GLIBC_TUNABLES || 'glibc.malloc.hugetlb=1' }
const GLIBC_DEFAULTS = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'GLIBC_TUNABLES'))

const child = (args: string[], env: NodeJS.ProcessEnv): Out => {
  const out = execFileSync(process.execPath, ['--import', 'tsx', resolve('bench/recon-child.ts'), ...args], {
    encoding: 'utf8',
    maxBuffer: 1 << 26,
    env,
  })
  return JSON.parse(out.trim().split('\n').pop()!)
}

const best = (args: string[], env: NodeJS.ProcessEnv): Out => {
  const all = Array.from({ length: runs }, () => child(args, env))
  const fastest = all.reduce((a, b) => (b.ms < a.ms ? b : a))
  return { ...fastest, rss: Math.max(...all.map((r) => r.rss)) }
}

const rows: string[] = []
for (const n of sizes) {
  const files = reconFiles(n)
  if (!existsSync(files.left) || !existsSync(files.right)) await writeRecon(n)
  const ours = best(['concord', files.left, files.right], AS_NPM_START)
  // DuckDB's best under either setting (it allocates through its own allocator; the tunable
  // should not matter to it, and this makes sure it is not held back by it)
  const duck = [GLIBC_DEFAULTS, AS_NPM_START]
    .map((env) => best(['duckdb', files.left, files.right], env))
    .reduce((a, b) => (b.ms < a.ms ? b : a))
  const plain = best(['concord', files.left, files.right], GLIBC_DEFAULTS)
  const split = best(['concord', files.left, files.right, 'split'], AS_NPM_START)
  const same =
    JSON.stringify(ours.digests) === JSON.stringify(duck.digests) &&
    JSON.stringify(plain.digests) === JSON.stringify(duck.digests)
  rows.push(
    `| ${n.toLocaleString('en')} | ${ours.ms.toFixed(0)} ms | ${duck.ms.toFixed(0)} ms | ${(ours.ms / duck.ms).toFixed(2)}× | ` +
      `${plain.ms.toFixed(0)} ms (${(plain.ms / duck.ms).toFixed(2)}×, ${(plain.rss / 1024).toFixed(0)} MiB) | ` +
      `${((ours.ms * 1e6) / n).toFixed(0)} ns | ${(ours.rss / 1024).toFixed(0)} MiB | ${(duck.rss / 1024).toFixed(0)} MiB | ` +
      `${ours.matched} / ${ours.unmatchedLeft} / ${ours.unmatchedRight} | ${same ? 'identical' : 'DIFFERENT'} | ` +
      `+${split.split?.ms ?? '?'} ms (${split.split?.matches ?? '?'} groups) |`,
  )
  console.error(`${n}: concord ${JSON.stringify(ours.phases)}`)
  console.error(`${n}: concord, glibc defaults ${JSON.stringify(plain.phases)}`)
}
console.log(
  '\n| rows per side | Concord (as npm start runs it) | DuckDB | ratio | Concord, glibc defaults (ratio, peak RSS) | Concord per left row | Concord peak RSS | DuckDB peak RSS | matched / left-only / right-only | results | 1:N pass |',
)
console.log('|---|---|---|---|---|---|---|---|---|---|---|')
for (const r of rows) console.log(r)
