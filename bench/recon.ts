// Engine benchmark: the reconciliation workload (bench/gen-recon.ts) end to end — load
// both CSV files, run the recipe, hold matched / unmatched-left / unmatched-right in memory —
// for Concord and for DuckDB (same predicate as SQL with the tolerance written as BETWEEN,
// DECIMAL amounts, 2 threads), each in its own child process, best of 3. The results must be
// identical (compared by digest); the 1:N pass is measured on its own, and Concord once more with
// transparent huge pages (HUGE_PAGES below).
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

// Concord is also measured with glibc's malloc asking for transparent huge pages (what the
// Dockerfile sets): on this VM a 4 KiB page fault costs about 12 µs, and the engine's arrays are
// large and written once. DuckDB allocates through its own allocator and is unaffected.
const HUGE_PAGES = { ...process.env, GLIBC_TUNABLES: 'glibc.malloc.hugetlb=1' }

const child = (args: string[], env: NodeJS.ProcessEnv = process.env): Out => {
  const out = execFileSync(process.execPath, ['--import', 'tsx', resolve('bench/recon-child.ts'), ...args], {
    encoding: 'utf8',
    maxBuffer: 1 << 26,
    env,
  })
  return JSON.parse(out.trim().split('\n').pop()!)
}

const best = (args: string[], env?: NodeJS.ProcessEnv): Out => {
  const all = Array.from({ length: runs }, () => child(args, env))
  const fastest = all.reduce((a, b) => (b.ms < a.ms ? b : a))
  return { ...fastest, rss: Math.max(...all.map((r) => r.rss)) }
}

const rows: string[] = []
for (const n of sizes) {
  const files = reconFiles(n)
  if (!existsSync(files.left) || !existsSync(files.right)) await writeRecon(n)
  const ours = best(['concord', files.left, files.right])
  const duck = best(['duckdb', files.left, files.right])
  const huge = best(['concord', files.left, files.right], HUGE_PAGES)
  const split = best(['concord', files.left, files.right, 'split'])
  const same =
    JSON.stringify(ours.digests) === JSON.stringify(duck.digests) &&
    JSON.stringify(huge.digests) === JSON.stringify(duck.digests)
  rows.push(
    `| ${n.toLocaleString('en')} | ${ours.ms.toFixed(0)} ms | ${duck.ms.toFixed(0)} ms | ${(ours.ms / duck.ms).toFixed(2)}× | ` +
      `${huge.ms.toFixed(0)} ms (${(huge.ms / duck.ms).toFixed(2)}×, ${(huge.rss / 1024).toFixed(0)} MiB) | ` +
      `${((ours.ms * 1e6) / n).toFixed(0)} ns | ${(ours.rss / 1024).toFixed(0)} MiB | ${(duck.rss / 1024).toFixed(0)} MiB | ` +
      `${ours.matched} / ${ours.unmatchedLeft} / ${ours.unmatchedRight} | ${same ? 'identical' : 'DIFFERENT'} | ` +
      `+${split.split?.ms ?? '?'} ms (${split.split?.matches ?? '?'} groups) |`,
  )
  console.error(`${n}: concord ${JSON.stringify(ours.phases)}`)
  console.error(`${n}: concord, huge pages ${JSON.stringify(huge.phases)}`)
}
console.log(
  '\n| rows per side | Concord | DuckDB | ratio | Concord, huge pages (ratio, peak RSS) | Concord per left row | Concord peak RSS | DuckDB peak RSS | matched / left-only / right-only | results | 1:N pass |',
)
console.log('|---|---|---|---|---|---|---|---|---|---|---|')
for (const r of rows) console.log(r)
