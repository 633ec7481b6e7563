#!/usr/bin/env node
// Compiles the TypeScript that runs (src/, connectors/, plugins/) into plain JavaScript in dist/,
// file by file, keeping the layout: dist/src/cli.js imports ../connectors/csv.js as the sources do.
// The service, the CLI, the run workers and the Docker image start from dist/, so no process
// transpiles at start-up. Types are checked by `npm run check` (tsc), not here: esbuild strips
// them, which is safe because tsconfig sets isolatedModules and verbatimModuleSyntax.
// Incremental: when no source is newer than the last build (and none was added or removed), it
// does nothing (a few ms), so `npm start` and `npm test` can call it every time.
//   node scripts/build.js [--force]

import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const DIRS = ['src', 'connectors', 'plugins']
const dist = join(root, 'dist')
const stampFile = join(dist, '.build.json')

/** Every TypeScript module under the compiled folders (declaration files aside). */
function sources() {
  const out = []
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (/\.(ts|mts)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(path)
    }
  }
  for (const d of DIRS) walk(join(root, d))
  return out.sort()
}

/** What the last build saw: the list of sources and the newest modification time among them. */
function stamp(files) {
  let newest = 0
  for (const f of files) newest = Math.max(newest, statSync(f).mtimeMs)
  return { files: files.map((f) => relative(root, f)), newest }
}

const files = sources()
const now = stamp(files)
if (!process.argv.includes('--force') && existsSync(stampFile)) {
  try {
    const last = JSON.parse(readFileSync(stampFile, 'utf8'))
    if (last.newest >= now.newest && JSON.stringify(last.files) === JSON.stringify(now.files)) process.exit(0)
  } catch {
    // an unreadable stamp: build again
  }
}

const esbuild = await import('esbuild')
// built beside dist/ and swapped in whole, so a process starting meanwhile sees the old or the new
// build, never half of one, and a removed source leaves no stale module behind
const next = `${dist}.${process.pid}.tmp`
rmSync(next, { recursive: true, force: true })
await esbuild.build({
  entryPoints: files,
  outdir: next,
  outbase: root,
  bundle: false,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: 'linked',
  logLevel: 'warning',
})
writeFileSync(join(next, '.build.json'), JSON.stringify(now))
const old = `${dist}.${process.pid}.old`
if (existsSync(dist)) renameSync(dist, old)
renameSync(next, dist)
rmSync(old, { recursive: true, force: true })
