// The embedded database's own thread: PGlite (PostgreSQL compiled to WebAssembly) runs every
// statement on the thread that owns it, about a millisecond even for a trivial one. In the
// service's thread that millisecond is taken from every other request; here it is not. The
// service talks to it over the PostgreSQL wire protocol on a Unix socket (pglite-socket), with the
// same `pg` pool as a real server. Messages from the opener: the first starts the database, then
// 'dump' (its files as a tarball) and 'close'.

import { parentPort } from 'node:worker_threads'
import { PGlite } from '@electric-sql/pglite'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'

export interface EmbeddedStart {
  dir: string
  /** Where to listen: a Unix socket path. */
  socket: string
  /** A dump the database starts from (see `ServiceDatabase.dump`). */
  dump?: ArrayBuffer
}

export type EmbeddedReply =
  | { kind: 'ready' }
  | { kind: 'failed'; message: string; code?: string }
  | { kind: 'dump'; data: ArrayBuffer }
  | { kind: 'closed' }

const port = parentPort!
const reply = (message: EmbeddedReply, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer)

port.once('message', async (start: EmbeddedStart) => {
  let pglite: PGlite
  let server: PGLiteSocketServer
  try {
    pglite = await PGlite.create(start.dir, start.dump ? { loadDataDir: new Blob([start.dump]) } : {})
    // two connections: the pool keeps one, and a reconnect must not be refused while the
    // server is still letting go of the one it replaces
    server = new PGLiteSocketServer({ db: pglite, path: start.socket, maxConnections: 2 })
    await server.start()
  } catch (err) {
    const e = err as { message?: string; code?: string }
    reply({ kind: 'failed', message: e.message ?? String(err), code: e.code })
    port.close()
    return
  }
  reply({ kind: 'ready' })
  port.on('message', async (message: { kind: 'dump' | 'close' }) => {
    // a failure is answered, not thrown: thrown here it would end the thread and the database
    try {
      if (message.kind === 'dump') {
        const data = await ((await pglite.dumpDataDir('none')) as Blob).arrayBuffer()
        reply({ kind: 'dump', data }, [data])
      } else {
        await server.stop()
        await pglite.close()
        reply({ kind: 'closed' })
        port.close()
      }
    } catch (err) {
      const e = err as { message?: string; code?: string }
      reply({ kind: 'failed', message: e.message ?? String(err), code: e.code })
    }
  })
})
