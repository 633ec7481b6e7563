// Measuring a whole command as its own process, shared by the benchmarks that run what users run
// (bench/link.ts, bench/command.ts).

import { spawnSync } from 'node:child_process'
import { buildSync } from 'esbuild'
import { mkdirSync } from 'node:fs'
import { basename, delimiter, dirname, resolve } from 'node:path'

// Concord as `npm start` runs it (see bench/recon.ts): glibc backs large arrays with huge pages
export const AS_NPM_START = {
  ...process.env,
  GLIBC_TUNABLES: process.env.GLIBC_TUNABLES || 'glibc.malloc.hugetlb=1',
}

// A shell user's environment: the `concord` command sets huge pages for itself (its shebang line,
// bin/concord.js), so it is measured without the tunable set for it. The `node` it finds first on
// the PATH is the one running the benchmark.
export const AS_A_USER = {
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'GLIBC_TUNABLES')),
  PATH: [dirname(process.execPath), process.env.PATH].join(delimiter),
} as NodeJS.ProcessEnv

/** `concord ARGS` as a shell user starts it: the bin file itself, through its shebang line. */
export const concordCommand = (...args: string[]) => [resolve('bin/concord.js'), ...args]

/**
 * A reference script (bench/*-duckdb.ts) compiled to JavaScript once, so that its process starts
 * as Concord's does, without transpiling TypeScript (tsx adds 0.15-0.3 s to each start).
 */
export function compiledScript(script: string): string {
  const outfile = resolve('bench/data/compiled', basename(script).replace(/\.ts$/, '.mjs'))
  mkdirSync(dirname(outfile), { recursive: true })
  buildSync({ entryPoints: [script], outfile, format: 'esm', platform: 'node', logLevel: 'warning' })
  return outfile
}

export interface Timed {
  ms: number
  rssMiB: number
  /** user + system CPU seconds of the process and its threads, as GNU time counts them */
  cpuS: number
  stdout: string
}

/**
 * Runs a command under GNU time: wall time as seen from here, peak RSS and CPU time as the kernel
 * counts them.
 */
export function timed(command: string[], env: NodeJS.ProcessEnv): Timed {
  const t0 = performance.now()
  const res = spawnSync('/usr/bin/time', ['-f', 'maxrss %M cpu %U %S', ...command], {
    encoding: 'utf8',
    env,
    maxBuffer: 1 << 26,
  })
  const ms = performance.now() - t0
  if (res.status !== 0) throw new Error(`${command.join(' ')} failed (${res.status}):\n${res.stderr}`)
  const rss = /maxrss (\d+)/.exec(res.stderr)
  const cpu = /cpu ([\d.]+) ([\d.]+)/.exec(res.stderr)
  return {
    ms,
    rssMiB: rss ? Number(rss[1]) / 1024 : Number.NaN,
    cpuS: cpu ? Number(cpu[1]) + Number(cpu[2]) : Number.NaN,
    stdout: res.stdout,
  }
}

/** `concord reconcile … --out DIR --json` as its own process, as a user runs it (CSV results). */
export function timedReconcile(left: string, right: string, recipe: string, out: string): Timed {
  return timed(
    concordCommand('reconcile', '--left', left, '--right', right, '--recipe', recipe, '--out', out, '--json'),
    AS_A_USER,
  )
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
