// CSV file sources: parsed by the streaming byte loader into typed columns, filtered in the engine.

import fp from 'fastify-plugin'
import { loadCsv } from '../src/engine/csv/index.js'
import { fileConnector } from '../src/sources/files.js'

export const csvConnector = (dataDir: string) =>
  fileConnector('csv', dataDir, async (path, signal) => (await loadCsv(path, { signal })).table)

export default fp(
  async (app) => {
    app.connectors.register(csvConnector(app.config.dataDir))
  },
  { name: 'connector-csv', dependencies: ['connectors'] },
)
