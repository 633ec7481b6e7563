// Result pages read off the event loop. A page or a `?key=` lookup reads a run's result file whole
// the first time (a million matches: 85 MB, parsed in ~30 ms) and keeps it; on the service's own
// thread that allocation set off collections of its heap that, with the parsing, held the loop for
// 100-200 ms, and the tables kept there made every later collection longer. Here one worker thread
// (pages-worker.ts) holds the open files and answers each call with the page, a few kilobytes of
// plain objects; the loop only posts the call and receives them. Started at the first page, kept
// while the service runs, not holding the process open when idle; a thread that dies fails the
// calls it held and the next call starts another.

import type { Worker } from 'node:worker_threads'
import { ConcordError } from '../errors.js'
import { moduleWorker } from './module-worker.js'
import type { forget, matchesPage, storedSchemas, unmatchedPage } from './pages.js'

/** What the worker can be asked: the functions of pages.ts, by name, with their arguments. */
export type PagesCall =
  | { fn: 'matchesPage'; args: Parameters<typeof matchesPage> }
  | { fn: 'unmatchedPage'; args: Parameters<typeof unmatchedPage> }
  | { fn: 'storedSchemas'; args: Parameters<typeof storedSchemas> }
  | { fn: 'forget'; args: Parameters<typeof forget> }

export type PagesRequest = PagesCall & { id: number }

/** An error as it crosses the thread: a ConcordError's reply fields, or a system error's code. */
export interface PagesError {
  concord: boolean
  code?: string
  message: string
  status?: number
  suggestion?: string
}

export type PagesReply = { id: number; value: unknown } | { id: number; error: PagesError }

export class PagesThread {
  private worker: Worker | undefined
  private readonly pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>()
  private nextId = 1

  matchesPage(...args: Parameters<typeof matchesPage>): ReturnType<typeof matchesPage> {
    return this.ask({ fn: 'matchesPage', args }) as ReturnType<typeof matchesPage>
  }

  unmatchedPage(...args: Parameters<typeof unmatchedPage>): ReturnType<typeof unmatchedPage> {
    return this.ask({ fn: 'unmatchedPage', args }) as ReturnType<typeof unmatchedPage>
  }

  storedSchemas(...args: Parameters<typeof storedSchemas>): ReturnType<typeof storedSchemas> {
    return this.ask({ fn: 'storedSchemas', args }) as ReturnType<typeof storedSchemas>
  }

  /** Forgets a run's files (its folder was deleted); nothing to do before the first page. */
  async forget(dir: string): Promise<void> {
    if (this.worker) await this.ask({ fn: 'forget', args: [dir] })
  }

  async close(): Promise<void> {
    const worker = this.worker
    this.worker = undefined
    this.fail(new Error('the service is shutting down'))
    await worker?.terminate()
  }

  private ask(call: PagesCall): Promise<unknown> {
    const worker = this.thread()
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      if (this.pending.size === 1) worker.ref()
      worker.postMessage({ ...call, id } as PagesRequest)
    })
  }

  private thread(): Worker {
    if (this.worker) return this.worker
    const worker = moduleWorker('pages-worker')
    worker.on('message', (reply: PagesReply) => {
      const waiting = this.pending.get(reply.id)
      if (!waiting) return
      this.pending.delete(reply.id)
      // an idle thread does not keep the process alive
      if (this.pending.size === 0) worker.unref()
      if ('value' in reply) waiting.resolve(reply.value)
      else waiting.reject(revived(reply.error))
    })
    const lost = (err: Error) => {
      if (this.worker !== worker) return
      this.worker = undefined
      this.fail(err)
    }
    worker.on('error', lost)
    worker.on('exit', (code) => lost(new Error(`the result pages thread stopped (exit code ${code})`)))
    worker.unref()
    this.worker = worker
    return worker
  }

  private fail(err: Error): void {
    for (const waiting of this.pending.values()) waiting.reject(err)
    this.pending.clear()
  }
}

/** The error as the caller would have seen it on its own thread. */
function revived(e: PagesError): Error {
  if (e.concord) return new ConcordError(e.code!, e.message, e.status, e.suggestion)
  return Object.assign(new Error(e.message), e.code ? { code: e.code } : {})
}
