// File sources (CSV, JSON, Arrow; Parquet reads its own way, connectors/parquet.ts): paths confined to the data folder, and a small cache of loaded
// tables so previews and repeated scoped loads of an unchanged file do not parse it again.

import { realpath, stat } from 'node:fs/promises'
import { isAbsolute, relative, resolve, sep } from 'node:path'
import { Type } from 'typebox'
import { abortable } from '../engine/load/csv/parallel.js'
import { describeConditions, resolveConditions, selectRows } from '../engine/load/filter.js'
import { describeTable, sliceRows, type Table, takeRows } from '../engine/data/table.js'
import type { ColumnInfo, FilterCondition } from '../engine/data/types.js'
import { ConcordError } from '../errors.js'
import type { EngineContext, LoadOptions, ScopedTable, Source, SourceConnector } from './connector.js'
import type { ThreadLoader } from './file-loaders.js'
import { loadOffThread, loadsOffThread } from './load-thread.js'

export interface FileSourceConfig {
  /** Inside the data folder: relative to it, or absolute. */
  path: string
  [key: string]: unknown
}

export const FileConfigSchema = Type.Object(
  {
    path: Type.String({ minLength: 1, description: 'file path inside the data folder (relative to it, or absolute)' }),
  },
  { additionalProperties: false },
)

/** Resolves `path` against the data folder and refuses anything that ends up outside it (also via symlinks). */
export async function confinedPath(dataDir: string, path: string): Promise<string> {
  const root = await realpath(dataDir).catch(() => resolve(dataDir))
  const candidate = isAbsolute(path) ? path : resolve(root, path)
  let real: string
  try {
    real = await realpath(candidate)
  } catch {
    throw new ConcordError(
      'file_not_found',
      `no file at "${path}" in the data folder`,
      400,
      `put the file under ${dataDir} or upload it`,
    )
  }
  const rel = relative(root, real)
  if (rel === '' || rel.startsWith(`..${sep}`) || rel === '..' || isAbsolute(rel)) {
    throw new ConcordError(
      'path_outside_data_dir',
      `"${path}" is outside the data folder`,
      400,
      `file sources must live under ${dataDir}`,
    )
  }
  const s = await stat(real)
  if (!s.isFile()) throw new ConcordError('file_not_found', `"${path}" is not a file`, 400)
  return real
}

type Loader<T = Table> = (path: string, signal?: AbortSignal) => Promise<T>

/** Keeps the last few things read from files (parsed tables, footers), keyed by path, size and modification time. */
export class FileCache<T> {
  private readonly entries = new Map<string, Promise<T>>()
  constructor(private readonly capacity = 4) {}

  /** Entries held (for tests). */
  get size(): number {
    return this.entries.size
  }

  async get(path: string, load: Loader<T>, signal?: AbortSignal): Promise<T> {
    const s = await stat(path)
    const key = `${path}\0${s.size}\0${s.mtimeMs}`
    let entry = this.entries.get(key)
    if (!entry) {
      // an older version of the file can never be asked for again: its table goes now, not when
      // newer entries push it out (a file rewritten daily held two 1M-row tables, one stale)
      for (const old of [...this.entries.keys()]) if (old.startsWith(`${path}\0`)) this.entries.delete(old)
      entry = load(path, signal)
      this.entries.set(key, entry)
      entry.catch(() => this.entries.delete(key))
      while (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!)
    } else {
      // refresh recency
      this.entries.delete(key)
      this.entries.set(key, entry)
    }
    return entry
  }

  clear(): void {
    this.entries.clear()
  }
}

/** What every file connector does with its config: a path confined to the data folder. */
export function fileConfig(dataDir: string) {
  return {
    configSchema: FileConfigSchema,
    async prepare(config: FileSourceConfig): Promise<FileSourceConfig> {
      const real = await confinedPath(dataDir, config.path)
      return { path: relative(await realpath(dataDir), real) }
    },
    redact: (config: FileSourceConfig) => ({ path: config.path }),
  }
}

/**
 * The shared part of the file connectors: load the whole file (cached), then filter in the
 * engine with the same semantics as every other connector. `offThread` names the loader the
 * file load thread runs for large files (load-thread.ts); without it `load` runs where it is asked.
 */
export function fileConnector(
  type: string,
  dataDir: string,
  load: Loader,
  extensions: readonly string[] = [type],
  offThread?: ThreadLoader,
): SourceConnector<FileSourceConfig> {
  const cache = new FileCache<Table>()
  const loadWhereBest: Loader = offThread
    ? async (path, signal) =>
        loadsOffThread((await stat(path)).size) ? loadOffThread(offThread, path) : load(path, signal)
    : load
  const tableOf = async (source: Source<FileSourceConfig>, signal?: AbortSignal) =>
    abortable(cache.get(await confinedPath(dataDir, source.config.path), loadWhereBest, signal), signal)
  return {
    type,
    extensions,
    ...fileConfig(dataDir),
    async describe(source): Promise<ColumnInfo[]> {
      return describeTable(await tableOf(source))
    },
    async registerScoped(
      ctx: EngineContext,
      alias: string,
      source,
      conditions: FilterCondition[],
      opts: LoadOptions = {},
    ) {
      const table = await tableOf(source, opts.signal)
      const resolved = resolveConditions(describeTable(table), conditions)
      const selected = conditions.length === 0 ? table : takeRows(table, selectRows(table, resolved))
      const limited = opts.limit === undefined ? selected : sliceRows(selected, opts.limit)
      opts.signal?.throwIfAborted()
      const scoped: ScopedTable = {
        alias,
        conditions,
        table: limited,
        totalRows: selected.length,
        nativeQuery: { language: 'engine', description: describeConditions(resolved) },
        loadedAt: new Date(),
      }
      ctx.register(scoped)
      return scoped
    },
    translate(_source, columns, conditions) {
      return { language: 'engine', description: describeConditions(resolveConditions(columns, conditions)) }
    },
    async close() {
      cache.clear()
    },
  }
}
