// Parquet file sources (.parquet): the footer is read once per file version (kept in a small
// cache), row groups whose statistics rule out every selected row are not read at all, and the
// rows of the groups read are filtered in the engine with the same semantics as every connector.
// The load-scoped reply's native query says how many groups were read.

import { describeConditions, resolveConditions, selectRows } from '../src/engine/load/filter.js'
import type { ParquetFile } from '../src/engine/load/parquet/index.js'
import { sliceRows, takeRows } from '../src/engine/data/table.js'
import type { EngineContext, LoadOptions, ScopedTable, Source, SourceConnector } from '../src/sources/connector.js'
import { confinedPath, FileCache, fileConfig, type FileSourceConfig } from '../src/sources/files.js'
import type { ConnectorContext } from '../src/sources/registry.js'

// The reader (hyparquet's ~30 modules) is loaded when a Parquet file is first read: a command or a
// service that reads none does not load it.
let reader: Promise<typeof import('../src/engine/load/parquet/index.js')> | undefined
const parquet = () => (reader ??= import('../src/engine/load/parquet/index.js'))

export function parquetConnector(dataDir: string): SourceConnector<FileSourceConfig> {
  const footers = new FileCache<ParquetFile>(16)
  const fileOf = async (source: Source<FileSourceConfig>, signal?: AbortSignal) => {
    const { openParquet } = await parquet()
    return footers.get(await confinedPath(dataDir, source.config.path), openParquet, signal)
  }
  return {
    type: 'parquet',
    extensions: ['parquet'],
    ...fileConfig(dataDir),
    async describe(source) {
      return (await fileOf(source)).columns.map((c) => c.info)
    },
    async registerScoped(ctx: EngineContext, alias: string, source, conditions, opts: LoadOptions = {}) {
      const file = await fileOf(source, opts.signal)
      const { pruneRowGroups, readRowGroups } = await parquet()
      const resolved = resolveConditions(
        file.columns.map((c) => c.info),
        conditions,
      )
      const pruning = pruneRowGroups(file, resolved)
      let table
      let totalRows
      if (resolved.length === 0) {
        // every row of the file is in scope: count from the footer, decode only what the limit keeps
        table = await readRowGroups(file, pruning.groups, { limit: opts.limit, signal: opts.signal })
        totalRows = pruning.rows
      } else {
        const read = await readRowGroups(file, pruning.groups, { signal: opts.signal })
        const selected = takeRows(read, selectRows(read, resolved))
        table = opts.limit === undefined ? selected : sliceRows(selected, opts.limit)
        totalRows = selected.length
      }
      opts.signal?.throwIfAborted()
      const scoped: ScopedTable = {
        alias,
        conditions,
        table,
        totalRows,
        nativeQuery: {
          language: 'engine',
          description: `${describeConditions(resolved)} (row groups read: ${pruning.groups.length} of ${file.groups.length})`,
        },
        loadedAt: new Date(),
      }
      ctx.register(scoped)
      return scoped
    },
    translate(_source, columns, conditions) {
      return { language: 'engine', description: describeConditions(resolveConditions(columns, conditions)) }
    },
    async close() {
      footers.clear()
    },
  }
}

export default (ctx: ConnectorContext) => parquetConnector(ctx.dataDir)
