// A TCP proxy in front of a real PostgreSQL, so a test can make the database "go away" at a chosen
// moment without stopping a server other tests share: cut every connection after N more bytes
// have flowed to the client, refuse new connections, and come back on the same port.

import net from 'node:net'
import type { Test } from 'tap'

export interface TcpProxy {
  /** The URL with host and port replaced by the proxy's. */
  url: string
  /** Cut all connections once this many more bytes have gone to clients (undefined: never). */
  cutAfter(bytes: number | undefined): void
  /** Cuts every connection and stops accepting: the database looks stopped. */
  stop(): Promise<void>
  /** Accepts connections again on the same port: the database is back. */
  start(): Promise<void>
}

export async function tcpProxy(t: Test, target: string): Promise<TcpProxy> {
  const u = new URL(target)
  const host = u.hostname
  const port = Number(u.port || 5432)
  const sockets = new Set<net.Socket>()
  let budget: number | undefined
  const cutAll = () => {
    for (const s of sockets) s.destroy()
    sockets.clear()
  }
  const server = net.createServer((client) => {
    const upstream = net.connect(port, host)
    sockets.add(client).add(upstream)
    client.on('data', (chunk) => upstream.write(chunk))
    upstream.on('data', (chunk: Buffer) => {
      if (budget !== undefined) {
        budget -= chunk.length
        if (budget <= 0) {
          budget = undefined
          cutAll()
          return
        }
      }
      client.write(chunk)
    })
    const end = () => {
      client.destroy()
      upstream.destroy()
      sockets.delete(client)
      sockets.delete(upstream)
    }
    client.on('close', end).on('error', end)
    upstream.on('close', end).on('error', end)
  })
  const listen = (p: number) => new Promise<void>((resolve) => server.listen(p, '127.0.0.1', resolve))
  await listen(0)
  const proxyPort = (server.address() as net.AddressInfo).port
  const stop = () =>
    new Promise<void>((resolve) => {
      cutAll()
      if (!server.listening) return resolve()
      server.close(() => resolve())
    })
  t.teardown(stop)
  u.hostname = '127.0.0.1'
  u.port = String(proxyPort)
  return {
    url: u.toString(),
    cutAfter: (bytes) => {
      budget = bytes
    },
    stop,
    start: () => listen(proxyPort),
  }
}
