// The built-in file loaders, by the file type they read: the CSV, JSON and Arrow connectors parse
// with them where they are asked, and the file load thread (load-worker.ts) with the same ones.

import type { Table } from '../engine/data/table.js'
import { loadArrow } from '../engine/load/arrow.js'
import { loadCsv } from '../engine/load/csv/index.js'
import { loadJson } from '../engine/load/json.js'

export const fileLoaders = {
  csv: async (path: string, signal?: AbortSignal): Promise<Table> => (await loadCsv(path, { signal })).table,
  json: loadJson,
  arrow: loadArrow,
}

/** The name of a built-in loader, as the load thread is asked for it. */
export type ThreadLoader = keyof typeof fileLoaders
