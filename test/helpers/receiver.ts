// A webhook receiver on loopback for tests: a real HTTP server that keeps every request it gets
// (headers, body, when) and answers as the test tells it — a status, or no answer at all (the
// request is held open until the test or the sender gives up). It deduplicates by delivery id as
// a careful receiver would: `processed` holds each delivery once, however often it came.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Test } from 'tap'

export interface Received {
  /** The request's path and query. */
  path: string
  id: string
  event: string
  timestamp: string
  signature: string
  body: string
  at: number
}

export interface Receiver {
  url: string
  port: number
  received: Received[]
  /** First arrival of each delivery id, in order. */
  processed: Map<string, Received>
  /** How to answer the next request: a status code, or 'hold' to never answer. */
  answer: (r: Received, n: number) => number | 'hold'
  /** How long to take over each answer. */
  delayMs: number
  /** Resolves once `n` requests have arrived. */
  waitFor(n: number, ms?: number): Promise<void>
}

export async function receiver(t: Test, answer: Receiver['answer'] = () => 200): Promise<Receiver> {
  const held = new Set<ServerResponse>()
  const waiters: { n: number; done: () => void }[] = []
  const r: Receiver = {
    url: '',
    port: 0,
    received: [],
    processed: new Map(),
    answer,
    delayMs: 0,
    waitFor(n, ms = 60_000) {
      if (r.received.length >= n) return Promise.resolve()
      return new Promise((ok, fail) => {
        const timer = setTimeout(() => fail(new Error(`the receiver got ${r.received.length} of ${n} requests`)), ms)
        waiters.push({
          n,
          done: () => {
            clearTimeout(timer)
            ok()
          },
        })
      })
    },
  }
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const got: Received = {
        path: req.url ?? '',
        id: String(req.headers['x-concord-delivery']),
        event: String(req.headers['x-concord-event']),
        timestamp: String(req.headers['x-concord-timestamp']),
        signature: String(req.headers['x-concord-signature']),
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      }
      r.received.push(got)
      const how = r.answer(got, r.received.length)
      if (how === 'hold') held.add(res)
      else
        setTimeout(() => {
          if (how >= 200 && how < 300 && !r.processed.has(got.id)) r.processed.set(got.id, got)
          res.writeHead(how).end()
        }, r.delayMs)
      for (const w of waiters.filter((w) => r.received.length >= w.n)) {
        waiters.splice(waiters.indexOf(w), 1)
        w.done()
      }
    })
  })
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
  r.port = (server.address() as { port: number }).port
  r.url = `http://127.0.0.1:${r.port}/hooks`
  t.teardown(async () => {
    for (const res of held) res.destroy()
    server.closeAllConnections()
    await new Promise((ok) => server.close(ok))
  })
  return r
}
