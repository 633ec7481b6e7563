// Parquet files into the engine: the footer (file.ts), row groups pruned by their statistics
// (prune.ts), the groups kept decoded into columns (read.ts).

import type { Table } from '../../data/table.js'
import { openParquet } from './file.js'
import { readRowGroups } from './read.js'

export { openParquet, type ParquetFile } from './file.js'
export { pruneRowGroups, type Pruning } from './prune.js'
export { readRowGroups } from './read.js'

/** A whole Parquet file as a table of the engine's columns. */
export async function loadParquet(path: string, signal?: AbortSignal): Promise<Table> {
  const file = await openParquet(path, signal)
  return readRowGroups(
    file,
    file.groups.map((_, g) => g),
    { signal },
  )
}
