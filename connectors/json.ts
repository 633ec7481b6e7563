// JSON file sources (a top-level array or NDJSON): loaded whole, filtered in the engine.

import { fileLoaders } from '../src/sources/file-loaders.js'
import { fileConnector } from '../src/sources/files.js'
import type { ConnectorContext } from '../src/sources/registry.js'

export const jsonConnector = (dataDir: string) =>
  fileConnector('json', dataDir, fileLoaders.json, ['json', 'ndjson', 'jsonl'], 'json')

export default (ctx: ConnectorContext) => jsonConnector(ctx.dataDir)
