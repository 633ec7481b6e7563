// A second thread for the hash join's partitioning (partition.ts). Before a pass joins, it copies
// the columns it reads on both sides into partition order; on a million rows a side that copy is
// the largest part of the pass, and the two sides do not depend on each other. So the left side
// is partitioned here, on a helper thread, while the engine's thread partitions the right.
//
// Passes run synchronously (a run is one synchronous call, on a runs worker in the service), so
// the helper is driven synchronously as well: the job is posted, the engine's thread does its
// side, then blocks in Atomics.wait until the helper says it is done and takes the reply with
// receiveMessageOnPort, without returning to its event loop. The helper reads the side's columns
// and key hashes in shared memory (shared.ts: the CSV loader and keys.ts allocate them there), so
// nothing is copied and nothing leaves the engine's thread: a helper that fails, stalls or never
// starts costs time, not data — the engine's thread then partitions that side itself, and the
// pass's result is the same either way. A side whose columns are not in shared memory (other
// connectors) is partitioned on the engine's thread: copying it over first costs about what the
// second thread saves (1M rows: 140-190 ms to copy and post, against ~250 ms for the side). The helper's code is a bundle
// (worker-source.ts); until a bundle is at hand (the first process after a source change bundles
// it in the background), passes partition on one thread.

import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads'
import type { Column, StringColumn } from '../data/column.js'
import type { SideKeys } from './keys.js'
import type { PartitionedSide } from './partition.js'
import { BEAT, DONE, type PartitionJob, type PartitionReply, READY } from './partition-job.js'
import { isShared } from '../data/shared.js'
import type { Table } from '../data/table.js'
import {
  readyWorkerScript,
  siblingModule,
  workerEntry,
  workerInput,
  type WorkerScript,
  workerScript,
} from '../worker-source.js'

/**
 * Sides shorter than this are partitioned on the engine's thread: below it, copying the side into
 * shared memory and the two messages cost about what the second thread saves.
 */
export const PARALLEL_MIN_ROWS = 50_000

/** How long a helper may take to start, and to go without finishing a column, before the engine's thread gives up on it. */
const START_LIMIT_MS = 10_000
const STALL_LIMIT_MS = 30_000

const HELPER = workerEntry(siblingModule(import.meta.url, 'partition-worker'), 'partition-worker')

export class PartitionHelper {
  private worker: Worker | null = null
  private port: MessagePort | null = null
  private readonly state = new Int32Array(new SharedArrayBuffer(3 * 4))
  private seq = 0
  private answered = 0
  private dead = false
  private readonly started: Promise<void>

  constructor() {
    const ready = readyWorkerScript(HELPER)
    if (ready !== null) {
      this.start(ready)
      this.started = Promise.resolve()
    } else {
      this.started = workerScript(HELPER).then(
        (script) => this.start(script),
        () => this.stop(),
      )
    }
  }

  /** True when a job posted now would be taken (the worker exists and has not failed). */
  get usable(): boolean {
    return this.worker !== null && !this.dead
  }

  /** Jobs the helper has answered (done or failed). */
  get jobs(): number {
    return this.answered
  }

  /** Resolves once the worker runs (true) or has failed to (false): for tests and warm-up. */
  async ready(): Promise<boolean> {
    await this.started
    if (!this.usable) return false
    while (this.usable && Atomics.load(this.state, READY) === 0) await new Promise((r) => setTimeout(r, 5))
    return this.usable
  }

  /**
   * Starts partitioning one side on the helper, with its key hashes or the one string key column
   * the helper hashes first. The returned function waits for the result; it returns null when the
   * helper failed or stalled, and the caller then partitions the side itself.
   */
  partition(
    table: Table,
    columns: string[],
    keys: SideKeys | { column: StringColumn },
    bits: number,
  ): () => PartitionedSide | null {
    // only the columns the pass reads travel
    const used = table.columns.flatMap((info, k) => (columns.includes(info.name) ? [k] : []))
    const data = used.map((k) => table.data[k])
    const sharedKeys = 'column' in keys ? inSharedMemory(keys.column) : isShared(keys.hash) && isShared(keys.isNull)
    if (!this.usable || !data.every(inSharedMemory) || !sharedKeys) return () => null
    const seq = ++this.seq
    const job: PartitionJob = {
      seq,
      table: { columns: used.map((k) => table.columns[k]), data, length: table.length },
      columns,
      keys,
      bits,
    }
    this.port!.postMessage(job)
    return () => this.wait(seq)
  }

  private wait(seq: number): PartitionedSide | null {
    const { state } = this
    let beat = Atomics.load(state, BEAT)
    let moved = performance.now()
    while (Atomics.load(state, DONE) !== seq) {
      Atomics.wait(state, DONE, seq - 1, 1000)
      const now = performance.now()
      const b = Atomics.load(state, BEAT)
      if (b !== beat) {
        beat = b
        moved = now
      }
      const limit = Atomics.load(state, READY) === 1 ? STALL_LIMIT_MS : START_LIMIT_MS
      if (Atomics.load(state, DONE) !== seq && now - moved > limit) {
        this.stop()
        return null
      }
    }
    // The reply is queued before DONE is set; a short grace covers a queue that is slow to show
    // it. Replies to earlier jobs nobody waited for (a pass that threw on its own side) are dropped.
    let reply: PartitionReply | undefined
    for (let tries = 0; (reply === undefined || reply.seq < seq) && tries < 100; tries++) {
      reply = receiveMessageOnPort(this.port!)?.message as PartitionReply | undefined
      if (reply === undefined) Atomics.wait(state, READY, 1, 1)
    }
    if (!reply || reply.seq !== seq) {
      this.stop()
      return null
    }
    this.answered++
    return 'side' in reply ? reply.side : null
  }

  private start(script: WorkerScript): void {
    if (this.dead) return
    const { port1, port2 } = new MessageChannel()
    const { input, eval: evaluate } = workerInput(script)
    const worker = new Worker(input, {
      eval: evaluate,
      execArgv: [],
      name: 'concord partition',
      workerData: { port: port2, state: this.state },
      transferList: [port2],
    })
    worker.unref()
    port1.unref()
    worker.on('error', () => this.stop())
    worker.on('exit', () => this.stop())
    this.worker = worker
    this.port = port1
  }

  /** Ends the helper; call between jobs (endPartitionHelper). */
  end(): void {
    this.stop()
  }

  /** The helper is not used again (a stale reply could otherwise answer a later job). */
  private stop(): void {
    if (this.dead) return
    this.dead = true
    if (shared_ === this) shared_ = null
    this.port?.close()
    void this.worker?.terminate()
  }
}

let shared_: PartitionHelper | null = null

/** The process's (or runs worker's) helper, started on first use; a failed one is replaced by the next call. */
export function partitionHelper(): PartitionHelper {
  shared_ ??= new PartitionHelper()
  return shared_
}

/**
 * Ends the helper, between passes (a later pass starts another). `concord reconcile` calls it once
 * its run has matched: besides its isolate, the helper's heap still references the shared memory
 * of the side it partitioned (the left's copies, ~35 MB at 1M rows) until it collects garbage,
 * which an idle thread never does, so that memory outlived the match — the command's peak RSS,
 * with the part worker ended too, went from 504–522 to 453–466 MiB (three runs each).
 */
export function endPartitionHelper(): void {
  shared_?.end()
}

function inSharedMemory(c: Column): boolean {
  if (c.valid !== null && !isShared(c.valid)) return false
  return c.type === 'string' ? isShared(c.offsets) && isShared(c.data) : isShared(c.values)
}
