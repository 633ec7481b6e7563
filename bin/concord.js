#!/usr/bin/env -S GLIBC_TUNABLES=glibc.malloc.hugetlb=1:${GLIBC_TUNABLES} node --initial-old-space-size=128
// The `concord` command. It runs the JavaScript that `npm run build` (scripts/build.js) compiles
// into dist/ — `npm ci` builds it, and `npm start` / `npm test` rebuild what changed — so no
// process transpiles TypeScript at start.
//
// Started as `concord` or `npx concord`, the line above gives node glibc's huge pages (see
// hugePagesEnv in src/runs/cli-args.ts for why), which glibc reads only when a process starts; the
// caller's own tunables come after it, so a GLIBC_TUNABLES that chooses otherwise still wins.
// It also starts V8's old generation at 128 MB (HEAP_FLAG below): a run's JavaScript heap stays
// near 30 MB, but from V8's small initial limit it made eight full collections in a 1M × 1M
// `reconcile` (main thread and helpers, with concurrent marking on the same two cores), two with
// it; the command's CPU 3.49 → 3.29 s (six alternated runs each). A long-running process settles
// at the same limits either way (V8 resizes them after its first full collection).
import module from 'node:module'

// V8 keeps the modules' compiled code between starts (Node ≥ 22.1, in the system's temporary folder;
// NODE_DISABLE_COMPILE_CACHE=1 turns it off), which took about a fifth of the CPU of loading the
// service. Worker threads and child processes find the folder in the environment.
const cache = module.enableCompileCache?.()
if (cache?.directory && !process.env.NODE_COMPILE_CACHE) process.env.NODE_COMPILE_CACHE = cache.directory

// Started as `node bin/concord.js`, where no shebang line set them, a large `concord reconcile`
// starts again with huge pages and the heap flag (src/runs/cli-args.ts, hugePagesEnv): execve
// keeps the process id and leaves no parent waiting. Where Node has no process.execve (before
// 22.15) or it fails, the command runs as it is.
const HEAP_FLAG = '--initial-old-space-size=128'
if (process.argv[2] === 'reconcile' && typeof process.execve === 'function') {
  try {
    const { hugePagesEnv } = await import('../dist/src/runs/cli-args.js')
    const env = hugePagesEnv(process.argv.slice(3), process.env)
    const flags = process.execArgv.some((a) => a.startsWith('--initial-old-space-size'))
      ? process.execArgv
      : [HEAP_FLAG, ...process.execArgv]
    if (env) process.execve(process.execPath, [process.execPath, ...flags, ...process.argv.slice(1)], env)
  } catch {
    // not built yet (reported below), or the new image could not start: run here
  }
}

let cli
try {
  cli = await import('../dist/src/cli.js')
} catch (err) {
  if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !String(err.message).includes('dist/src/cli.js')) throw err
  process.stderr.write('concord: the service is not built yet (dist/ is missing)\nrun `npm run build` first\n')
  process.exit(2)
}
try {
  await cli.main(process.argv.slice(2))
} catch (err) {
  // a refusal with a code (the database in use, a bad configuration) is said plainly, not as a stack
  if (typeof err?.code !== 'string' || typeof err?.suggestion !== 'string') throw err
  process.stderr.write(`concord: ${err.message} (${err.code})\n${err.suggestion}\n`)
  process.exitCode = 1
}
