// Worker threads for runs, kept warm: loading the engine's modules in a fresh thread takes a second
// or two (TypeScript through tsx, Arrow, TypeBox), far more than a small run. A worker runs one job
// at a time and returns to the pool afterwards; a cancelled run's worker is terminated instead
// (that is how a cancel stops it at once), and a worker that has run many jobs is retired.

import { Worker } from 'node:worker_threads'
import { moduleWorker } from './module-worker.js'

const JOBS_PER_WORKER = 50

interface PooledWorker {
  worker: Worker
  jobs: number
}

export class WorkerPool {
  private readonly idle: PooledWorker[] = []
  private closed = false

  constructor(private readonly maxIdle: number) {}

  private spawn(): PooledWorker {
    const worker = moduleWorker('worker')
    // an idle worker that dies (it should not) just leaves the pool
    worker.once('exit', () => {
      const at = this.idle.findIndex((w) => w.worker === worker)
      if (at >= 0) this.idle.splice(at, 1)
    })
    return { worker, jobs: 0 }
  }

  acquire(): PooledWorker {
    return this.idle.pop() ?? this.spawn()
  }

  /** Back to the pool after a job that ended normally (its listeners removed by the caller). */
  release(w: PooledWorker): void {
    w.jobs++
    if (this.closed || w.jobs >= JOBS_PER_WORKER || this.idle.length >= this.maxIdle) void w.worker.terminate()
    else this.idle.push(w)
  }

  async close(): Promise<void> {
    this.closed = true
    await Promise.all(this.idle.splice(0).map((w) => w.worker.terminate()))
  }
}
