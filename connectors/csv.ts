// CSV file sources: parsed by the streaming byte loader into typed columns, filtered in the engine.

import { loadCsv } from '../src/engine/load/csv/index.js'
import { fileConnector } from '../src/sources/files.js'
import type { ConnectorContext } from '../src/sources/registry.js'

export const csvConnector = (dataDir: string) =>
  fileConnector('csv', dataDir, async (path, signal) => (await loadCsv(path, { signal })).table, ['csv'], 'csv')

export default (ctx: ConnectorContext) => csvConnector(ctx.dataDir)
