// What a worker thread starts from (the CSV part worker, csv/part-worker.ts; the partitioning
// helper, partition-worker.ts). Built and shipped, the code is JavaScript in dist/ (scripts/
// build.js) and a worker starts from its module file. Run from the TypeScript sources (tests,
// benchmarks under tsx), workers cannot use tsx's loader on Node 20 (see csv/parallel.ts), so the
// worker's module and what it imports are bundled with esbuild. Bundling costs the calling thread
// 30-50 ms (loading esbuild, starting its service), so in that development setting the bundle is
// kept in node_modules/.cache/concord with a hash of each source as esbuild read it; a later
// process whose sources hash the same starts the worker from the cache. The cache is read
// synchronously (a few small files, under a millisecond): the CSV loader's thread is busy parsing
// and would only see each step of an asynchronous read between two chunks, and the engine's
// passes are synchronous. The cache is an optimization only: when it cannot be read or written,
// the bundle is built.

import { createHash } from 'node:crypto'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { dirname, relative, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = fileURLToPath(new URL('../../', import.meta.url))

/** A worker's entry module and the name its bundle is cached under. */
export interface WorkerEntry {
  url: URL
  /** Absolute path of the entry module. */
  path: string
  name: string
  /** True when the module is built JavaScript, which a worker loads as it is. */
  built: boolean
}

/** A worker's code: its module file (built JavaScript) or one bundled CommonJS text. */
export type WorkerScript = { file: URL } | { code: string }

/** `new Worker`'s first argument for the script, and whether it is code to evaluate. */
export function workerInput(script: WorkerScript): { input: URL | string; eval: boolean } {
  return 'file' in script ? { input: script.file, eval: false } : { input: script.code, eval: true }
}

/**
 * A module beside the calling one, by name without extension: `.js` when the caller runs from the
 * build (dist/), `.ts` when it runs from the sources.
 */
export function siblingModule(base: string, name: string): URL {
  return new URL(`./${name}${base.endsWith('.ts') ? '.ts' : '.js'}`, base)
}

export function workerEntry(url: URL, name: string): WorkerEntry {
  const path = fileURLToPath(url)
  return { url, path, name, built: path.endsWith('.js') }
}

/** The worker's code when it is at hand without bundling (built, its build current, or cached), else null. */
export function readyWorkerScript(w: WorkerEntry): WorkerScript | null {
  if (w.built) return { file: w.url }
  const twin = builtTwin(w.url)
  if (twin) return { file: twin }
  const code = cachedWorkerSource(w)
  return code === null ? null : { code }
}

/**
 * The built twin of a source module (src/x/y.ts → dist/src/x/y.js) when the build is current:
 * scripts/build.js records in dist/.build.json the sources it compiled and the newest modification
 * time among them, and none has changed since (a source added since is compiled only once
 * something imports it, and that importer then changed too). Run from the sources (tests,
 * benchmarks), a worker thread starts from the twin rather than through tsx or a bundle: under
 * tap a run worker took 5–7 s to start through tsx, and `npm test` builds first. Null when there
 * is no current build: the caller starts the worker from the sources.
 */
export function builtTwin(source: URL): URL | null {
  const path = fileURLToPath(source)
  const rel = relative(root, path)
  if (rel.startsWith('..') || !/\.m?ts$/.test(rel)) return null
  if (!buildIsCurrent()) return null
  const twin = resolve(root, 'dist', rel.replace(/\.(m?)ts$/, '.$1js'))
  return existsSync(twin) ? pathToFileURL(twin) : null
}

let current: boolean | undefined

/** Whether dist/ holds a build of the sources as they are (checked once per process). */
function buildIsCurrent(): boolean {
  if (current !== undefined) return current
  try {
    const stamp = JSON.parse(readFileSync(resolve(root, 'dist/.build.json'), 'utf8')) as {
      files: string[]
      newest: number
    }
    current = stamp.files.length > 0 && stamp.files.every((f) => statSync(resolve(root, f)).mtimeMs <= stamp.newest)
  } catch {
    current = false
  }
  return current
}

/** The worker's code, bundled from the sources when it is not at hand. */
export async function workerScript(w: WorkerEntry): Promise<WorkerScript> {
  return readyWorkerScript(w) ?? { code: await bundleWorkerSource(w) }
}

const cacheFile = (w: WorkerEntry) => resolve(root, `node_modules/.cache/concord/${w.name}.json`)

interface Cached {
  /** Source path (relative to the project) → sha256 of its text when bundled. */
  sources: Record<string, string>
  code: string
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

/** The cached bundle if its sources have not changed since it was built, else null. */
function cachedWorkerSource(w: WorkerEntry): string | null {
  try {
    const cached = JSON.parse(readFileSync(cacheFile(w), 'utf8')) as Cached
    for (const [path, hash] of Object.entries(cached.sources)) {
      if (sha256(readFileSync(resolve(root, path), 'utf8')) !== hash) return null
    }
    return typeof cached.code === 'string' && Object.keys(cached.sources).length > 0 ? cached.code : null
  } catch {
    return null
  }
}

/** Bundles the worker's module and caches the result for later processes. */
async function bundleWorkerSource(w: WorkerEntry): Promise<string> {
  const esbuild = await import('esbuild')
  const sources: Record<string, string> = {}
  const out = await esbuild.build({
    entryPoints: [w.path],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    write: false,
    logLevel: 'silent',
    plugins: [
      {
        // Reads each source itself, so the hash is of exactly the text that was compiled.
        name: 'hash-sources',
        setup(build) {
          build.onLoad({ filter: /\.[cm]?[jt]s$/ }, async (args) => {
            const contents = await readFile(args.path, 'utf8')
            sources[relative(root, args.path)] = sha256(contents)
            return { contents, loader: /\.[cm]?ts$/.test(args.path) ? 'ts' : 'js' }
          })
        },
      },
    ],
  })
  const code = out.outputFiles[0].text
  void saveCache(cacheFile(w), { sources, code })
  return code
}

async function saveCache(file: string, cached: Cached): Promise<void> {
  try {
    await mkdir(dirname(file), { recursive: true })
    const tmp = `${file}.${process.pid}.tmp`
    await writeFile(tmp, JSON.stringify(cached))
    await rename(tmp, file) // whole or not at all, also with several processes
  } catch {
    // a read-only install: bundle in each process
  }
}
