#!/usr/bin/env node
// Compiles the TypeScript that runs (src/, connectors/, plugins/) into plain JavaScript in dist/,
// file by file, keeping the layout: dist/src/cli.js imports ../connectors/csv.js as the sources do.
// The service, the CLI, the run workers and the Docker image start from dist/, so no process
// transpiles at start-up. Types are checked by `npm run check` (tsc), not here: esbuild strips
// them, which is safe because tsconfig sets isolatedModules and verbatimModuleSyntax.
// Packages made of hundreds of small modules are bundled once into dist/vendor/ and the compiled
// modules import them from there: typebox opens ~680 files and apache-arrow ~150, which cost
// ~0.3 s at every start of the CLI, the service and each worker thread (one file each: ~45 ms).
// Only code nothing else in node_modules imports at run time is vendored (the Fastify TypeBox
// provider is used for its types alone), so no package sees two copies of one module.
// Incremental: when no source is newer than the last build (and none was added or removed), it
// does nothing (a few ms), so `npm start` and `npm test` can call it every time.
//   node scripts/build.js [--force]

import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
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

/** Bare specifiers served from dist/vendor/: the file there, and what it exports. */
const VENDOR = {
  typebox: { file: 'typebox.js', exports: '*' },
  'typebox/value': { file: 'typebox-value.js', exports: '*' },
  'typebox/compile': { file: 'typebox-compile.js', exports: '*' },
  'apache-arrow': { file: 'apache-arrow.js', exports: '*' },
  // CommonJS with nearley and moo: named exports of CommonJS are not static, so they are listed
  'pgsql-ast-parser': { file: 'pgsql-ast-parser.js', exports: '{ parse }' },
}

/** A compiled module with its vendored imports pointing into dist/vendor/. */
function vendored(file, text) {
  return text.replace(/(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)"([^"]+)"/g, (whole, head, spec) => {
    if (!Object.hasOwn(VENDOR, spec)) return whole
    let rel = relative(dirname(file), join(next, 'vendor', VENDOR[spec].file))
    if (!rel.startsWith('.')) rel = `./${rel}`
    return `${head}"${rel}"`
  })
}

/** The vendored packages, one module each, their shared code split into common chunks. */
async function buildVendor() {
  const entries = join(next, 'vendor-entries')
  mkdirSync(entries, { recursive: true })
  const entryPoints = Object.entries(VENDOR).map(([spec, { file, exports }]) => {
    const path = join(entries, file)
    writeFileSync(path, `export ${exports} from '${spec}'\n`)
    return path
  })
  await esbuild.build({
    entryPoints,
    outdir: join(next, 'vendor'),
    absWorkingDir: root,
    nodePaths: [join(root, 'node_modules')],
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'warning',
  })
  rmSync(entries, { recursive: true, force: true })
}

const files = sources()
// a dependency's update (package-lock.json) rebuilds the vendored copies
const now = stamp([...files, join(root, 'package-lock.json')])
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
const compiled = await esbuild.build({
  entryPoints: files,
  outdir: next,
  outbase: root,
  bundle: false,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: 'linked',
  logLevel: 'warning',
  write: false,
})
for (const out of compiled.outputFiles) {
  mkdirSync(dirname(out.path), { recursive: true })
  writeFileSync(out.path, out.path.endsWith('.js') ? vendored(out.path, out.text) : out.contents)
}
await buildVendor()
writeFileSync(join(next, '.build.json'), JSON.stringify(now))
const old = `${dist}.${process.pid}.old`
if (existsSync(dist)) renameSync(dist, old)
renameSync(next, dist)
rmSync(old, { recursive: true, force: true })
