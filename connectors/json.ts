// JSON file sources (a top-level array or NDJSON): loaded whole, filtered in the engine.

import fp from 'fastify-plugin'
import { loadJson } from '../src/engine/json.js'
import { fileConnector } from '../src/sources/files.js'

export const jsonConnector = (dataDir: string) => fileConnector('json', dataDir, loadJson)

export default fp(
  async (app) => {
    app.connectors.register(jsonConnector(app.config.dataDir))
  },
  { name: 'connector-json', dependencies: ['connectors'] },
)
