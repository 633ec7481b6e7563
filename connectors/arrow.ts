// Arrow IPC file sources (.arrow / .feather v2, or the stream format .arrows): the columns read as
// they are typed in the file, filtered in the engine with the same semantics as every connector.

import { fileLoaders } from '../src/sources/file-loaders.js'
import { fileConnector } from '../src/sources/files.js'
import type { ConnectorContext } from '../src/sources/registry.js'

export const arrowConnector = (dataDir: string) =>
  fileConnector('arrow', dataDir, fileLoaders.arrow, ['arrow', 'feather', 'arrows', 'ipc'], 'arrow')

export default (ctx: ConnectorContext) => arrowConnector(ctx.dataDir)
