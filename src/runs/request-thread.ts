// A worker thread that answers requests, one reply per request matched by id: the report's
// figures (report/figures-thread.ts) and the result pages (pages-thread.ts). Started at the first
// request and kept while the service runs; it holds the process open only while a request waits.
// A thread that dies fails the requests it held, and the next request starts another.

import type { Worker } from 'node:worker_threads'
import { ConcordError } from '../errors.js'
import { moduleWorker } from './module-worker.js'

/** An error as it crosses the thread: a ConcordError's reply fields, or a system error's code. */
export interface ThreadError {
  concord: boolean
  code?: string
  message: string
  status?: number
  suggestion?: string
  details?: Record<string, unknown>
}

/** What the worker posts for an error it caught. */
export function crossing(err: unknown): ThreadError {
  if (err instanceof ConcordError)
    return {
      concord: true,
      code: err.code,
      message: err.message,
      status: err.status,
      suggestion: err.suggestion,
      ...(err.details ? { details: err.details } : {}),
    }
  const e = err as Error & { code?: unknown }
  return {
    concord: false,
    message: e?.message ?? String(err),
    ...(typeof e?.code === 'string' ? { code: e.code } : {}),
  }
}

/** The error as the caller would have seen it on its own thread. */
export function revived(e: ThreadError): Error {
  if (e.concord) return new ConcordError(e.code!, e.message, e.status, e.suggestion, e.details)
  return Object.assign(new Error(e.message), e.code ? { code: e.code } : {})
}

export class RequestThread<Reply extends { id: number }> {
  private worker: Worker | undefined
  private readonly pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>()
  private nextId = 1

  /**
   * `module`: the worker's module beside this one, or beside `base` (moduleWorker); `name`: what
   * the thread is, in the error of one that stops; `answer`: a reply's value, or the error to
   * reject with.
   */
  constructor(
    private readonly module: string,
    private readonly name: string,
    private readonly answer: (reply: Reply) => { value: unknown } | { error: Error },
    private readonly base?: string,
  ) {}

  /** True once the thread has been started (and not lost since). */
  get started(): boolean {
    return this.worker !== undefined
  }

  /** Posts `request` with an id of its own; settles with its reply's answer. */
  ask(request: object): Promise<unknown> {
    const worker = this.thread()
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      if (this.pending.size === 1) worker.ref()
      worker.postMessage({ ...request, id })
    })
  }

  async close(): Promise<void> {
    const worker = this.worker
    this.worker = undefined
    this.fail(new Error('the service is shutting down'))
    await worker?.terminate()
  }

  private thread(): Worker {
    if (this.worker) return this.worker
    const worker = moduleWorker(this.module, this.base)
    worker.on('message', (reply: Reply) => {
      const waiting = this.pending.get(reply.id)
      if (!waiting) return
      this.pending.delete(reply.id)
      // an idle thread does not keep the process alive
      if (this.pending.size === 0) worker.unref()
      const answer = this.answer(reply)
      if ('value' in answer) waiting.resolve(answer.value)
      else waiting.reject(answer.error)
    })
    const lost = (err: Error) => {
      if (this.worker !== worker) return
      this.worker = undefined
      this.fail(err)
    }
    worker.on('error', lost)
    worker.on('exit', (code) => lost(new Error(`the ${this.name} stopped (exit code ${code})`)))
    this.worker = worker
    return worker
  }

  private fail(err: Error): void {
    for (const waiting of this.pending.values()) waiting.reject(err)
    this.pending.clear()
  }
}
