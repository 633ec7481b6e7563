// CSV file sources: parsed by the streaming byte loader into typed columns, filtered in the engine.

import { fileLoaders } from '../src/sources/file-loaders.js'
import { fileConnector } from '../src/sources/files.js'
import type { ConnectorContext } from '../src/sources/registry.js'

export const csvConnector = (dataDir: string) => fileConnector('csv', dataDir, fileLoaders.csv, ['csv'], 'csv')

export default (ctx: ConnectorContext) => csvConnector(ctx.dataDir)
