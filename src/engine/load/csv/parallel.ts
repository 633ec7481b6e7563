// The worker thread that parses the second part of a large CSV file while the loader's own thread
// parses the first (index.ts), and why the result is exactly the sequential one:
// - The split is just after a newline, but that newline may sit inside a quoted field. The
//   loader's thread tokenizes from the start of the file up to the split; the worker's part is
//   used only if the last row ends exactly at the split. The tokenizer keeps no state between
//   rows but the line number, so a sequential parse would have started a row there too.
//   Otherwise the worker is cancelled and the loader's thread parses on to the end.
// - Both parts start from the sampled types and widen on their own; the join widens again
//   (part.ts), and a join whose type is text rereads the file as a sequential load would.
// - The worker counts lines from 1 at the split and the loader adds the split's line. A part's
//   errors count only when everything before it parsed cleanly, so the first error in the file
//   is the one reported.
// The worker starts from the built module (dist/), or, run from the TypeScript sources, from the
// module bundled into JavaScript: tsx registers its loader on the main thread only on Node 20, and
// registering it in a worker costs about 150 ms (../worker-source.ts). If that or the worker
// fails, loads stay on the main thread.

import type { FileHandle } from 'node:fs/promises'
import { Worker } from 'node:worker_threads'
import type { PartJob, PartResult } from './part.js'
import {
  readyWorkerScript,
  siblingModule,
  workerEntry,
  workerInput,
  type WorkerScript,
  workerScript,
} from '../../worker-source.js'

export interface RunningPart {
  /** Offset of the part's first row. */
  readonly start: number
  /** The worker's result; rejects with the signal's reason when it aborts first. */
  whenDone(signal?: AbortSignal): Promise<PartResult>
  /** Stops the worker at its next chunk; its result is not needed any more. */
  cancel(): void
}

const PART_WORKER = workerEntry(siblingModule(import.meta.url, 'part-worker'), 'csv-part-worker')

/** The worker's code, once per process. */
let source: Promise<WorkerScript> | WorkerScript | null = null

type State = 'starting' | 'idle' | 'busy' | 'dead'

/** One worker, reused by later loads; it does not keep the process alive while idle. */
export class PartHelper {
  private state: State = 'starting'
  private worker: Worker | null = null
  private settle: ((result: PartResult) => void) | null = null
  private waiters: ((ok: boolean) => void)[] = []

  constructor() {
    void this.start()
  }

  get idle(): boolean {
    return this.state === 'idle'
  }

  /** Resolves true once the worker is idle, false if it cannot start or has died. */
  ready(): Promise<boolean> {
    if (this.state === 'idle' || this.state === 'dead') return Promise.resolve(this.state === 'idle')
    return new Promise((resolve) => this.waiters.push(resolve))
  }

  /** Starts a part on the worker, or returns null when it is not idle. */
  run(job: PartJob): RunningPart | null {
    if (this.state !== 'idle' || !this.worker) return null
    this.setState('busy')
    const cancel = new Int32Array(new SharedArrayBuffer(4))
    const result = new Promise<PartResult>((resolve) => (this.settle = resolve))
    this.worker.postMessage({ job, cancel })
    return {
      start: job.start,
      whenDone: (signal) => abortable(result, signal),
      cancel: () => Atomics.store(cancel, 0, 1),
    }
  }

  private async start(): Promise<void> {
    try {
      source ??= readyWorkerScript(PART_WORKER) ?? workerScript(PART_WORKER)
      // built or cached, the worker starts before this call returns
      const { input, eval: evaluate } = workerInput(source instanceof Promise ? await source : source)
      const worker = new Worker(input, { eval: evaluate, execArgv: [], name: 'concord csv part' })
      this.worker = worker
      worker.on('message', (m: PartResult | { type: 'ready' }) => {
        if (this.state === 'dead') return
        const settle = this.settle
        this.settle = null
        this.setState('idle')
        if (m.type !== 'ready') settle?.(m)
      })
      worker.on('error', (err) => this.fail(err.message))
      worker.on('exit', (code) => this.fail(`the worker exited with code ${code}`))
    } catch (err) {
      this.fail((err as Error).message)
    }
  }

  /** Ends the worker when it has no part to parse (a later load starts another). */
  end(): void {
    if (this.state === 'idle') this.fail('ended')
  }

  private fail(message: string): void {
    if (this.state === 'dead') return
    if (shared === this) shared = null
    const settle = this.settle
    this.settle = null
    this.setState('dead')
    settle?.({ type: 'failed', message })
    void this.worker?.terminate()
  }

  private setState(state: State): void {
    this.state = state
    if (state === 'busy') this.worker?.ref()
    else this.worker?.unref()
    if (state === 'idle' || state === 'dead') {
      const waiters = this.waiters
      this.waiters = []
      for (const w of waiters) w(state === 'idle')
    }
  }
}

let shared: PartHelper | null = null

/** The process's part worker, started on first use. */
export function partHelper(): PartHelper {
  shared ??= new PartHelper()
  return shared
}

/**
 * Ends the process's part worker if it is idle. A command that has loaded all it will load calls
 * it: the worker's isolate and heap (~10–15 MB) are not held through the match (`concord
 * reconcile`; a service's runs worker keeps its worker for the next run).
 */
export function endPartHelper(): void {
  shared?.end()
}

/** The offset just after the first newline at or after `target`, or null when none is near. */
export async function rowStartAfter(handle: FileHandle, target: number, size: number): Promise<number | null> {
  const buf = Buffer.allocUnsafe(64 * 1024)
  const { bytesRead } = await handle.read(buf, 0, Math.max(0, Math.min(buf.length, size - target)), target)
  const i = buf.subarray(0, bytesRead).indexOf(0x0a)
  return i < 0 ? null : target + i + 1
}

/** `promise`, or the signal's reason as soon as it aborts (the work itself goes on). */
export function abortable<T>(promise: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return promise
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason)
    if (signal.aborted) return onAbort()
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort)
        resolve(v)
      },
      (err) => {
        signal.removeEventListener('abort', onAbort)
        reject(err)
      },
    )
  })
}
