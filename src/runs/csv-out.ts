// `concord reconcile --out DIR` as CSV on two threads. Gathering a set's columns and encoding them
// is most of the command after matching (1M × 1M: ~1.1 s of ~2.3 s on one thread), and the four
// sets do not depend on each other. So a helper thread (csv-out-worker.ts) takes sets from the same
// queue as the command's thread, largest first. The loaded columns sit in shared memory (the CSV
// loader allocates them there), so the helper reads them without a copy; the result's own arrays
// are copied with the message, pruned to what the set needs. A helper that fails costs time, not
// output: its set goes back to the command's thread, which writes the file again from the start.

import { closeSync, openSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import type { Worker } from 'node:worker_threads'
import type { Table as ArrowTable } from 'apache-arrow'
import { CsvWriter } from './csv.js'
import { moduleWorker } from './module-worker.js'
import { type ResultSet, type ResultsInput, resultTables } from './results.js'

/** Below this many result rows one thread writes everything: a helper takes ~0.1 s to start. */
const HELPER_MIN_ROWS = 100_000

/** Costliest first (matches: two key lists to gather), so the last set to finish is a small one. */
const ORDER: ResultSet[] = ['matches', 'unmatched-left', 'unmatched-right', 'ambiguous']

export interface CsvSetJob {
  input: ResultsInput
  set: ResultSet
  out: string
}

/** One set's CSV file in `out`, written through one reused buffer with synchronous writes. */
export function writeCsvSet({ input, set, out }: CsvSetJob): void {
  const table = resultTables(input, [set])[set] as ArrowTable
  const fd = openSync(join(out, `${set}.csv`), 'w')
  try {
    const csv = new CsvWriter(table.schema, set, (chunk) => {
      for (let at = 0; at < chunk.length;) at += writeSync(fd, chunk, at)
    })
    csv.header()
    for (const batch of table.batches) csv.rows(batch)
    csv.flush()
  } finally {
    closeSync(fd)
  }
}

export interface CsvSetsOptions {
  /** Results smaller than this are written on one thread (tests set 0 to use the helper). */
  helperMinRows?: number
  /** Starts the helper (tests hand in one that fails). */
  helper?: () => Worker
}

/** The four sets as CSV files in `out` (which exists). */
export async function writeCsvSets(input: ResultsInput, out: string, opts: CsvSetsOptions = {}): Promise<void> {
  const { matches, unmatchedLeft, unmatchedRight } = input.result
  const rows = matches.count + unmatchedLeft.rows.length + unmatchedRight.rows.length
  const queue = [...ORDER]
  const onThisThread = async () => {
    for (let set = queue.shift(); set; set = queue.shift()) {
      writeCsvSet({ input, set, out })
      // the helper's replies are read between two sets
      await new Promise((next) => setImmediate(next))
    }
  }
  if (rows < (opts.helperMinRows ?? HELPER_MIN_ROWS)) return onThisThread()
  const helper = opts.helper ? opts.helper() : moduleWorker('csv-out-worker')
  const failed: ResultSet[] = []
  const onHelper = async () => {
    for (let set = queue.shift(); set; set = queue.shift()) {
      if (!(await onWorker(helper, { input: forSet(input, set), set, out }))) {
        failed.push(set)
        return
      }
    }
  }
  try {
    await Promise.all([onHelper(), onThisThread()])
    for (const set of failed) writeCsvSet({ input, set, out })
  } finally {
    await helper.terminate()
  }
}

/** Posts one set; true when the helper wrote it, false when it failed or stopped. */
function onWorker(worker: Worker, job: CsvSetJob): Promise<boolean> {
  return new Promise((done) => {
    const settle = (ok: boolean) => {
      worker.off('message', onMessage).off('error', onError).off('exit', onExit)
      done(ok)
    }
    const onMessage = (reply: { ok: boolean }) => settle(reply.ok)
    const onError = () => settle(false)
    const onExit = () => settle(false)
    worker.on('message', onMessage).on('error', onError).on('exit', onExit)
    worker.postMessage(job)
  })
}

const NO_MATCHES = { count: 0 }
const NO_UNMATCHED = { rows: new Int32Array(0) }

/** The input with only what `set` reads: the rest of the result's arrays need not be copied over. */
function forSet(input: ResultsInput, set: ResultSet): ResultsInput {
  const result = { ...input.result, summary: undefined }
  if (set !== 'matches' && set !== 'ambiguous') Object.assign(result, { matches: NO_MATCHES })
  if (set !== 'unmatched-left') Object.assign(result, { unmatchedLeft: NO_UNMATCHED })
  if (set !== 'unmatched-right') Object.assign(result, { unmatchedRight: NO_UNMATCHED })
  return { ...input, result: result as unknown as ResultsInput['result'] }
}
