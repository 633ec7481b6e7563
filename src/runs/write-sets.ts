// A run's four result sets written on two threads: the Arrow files a run stores, or the CSV files
// of `concord reconcile --out`. Gathering a set's columns and encoding them is most of the work
// after matching (1M × 1M: ~1.1 s of ~2.3 s on one thread), and the four sets do not depend on each
// other. So a helper thread (write-sets-worker.ts) takes sets from the same queue as the calling
// thread, costliest first: each thread claims the next set with an atomic add on a shared counter,
// so the helper goes on while the calling thread is busy with its own work (a run's exceptions)
// and cannot answer messages. The loaded columns sit in shared memory (the CSV
// loader allocates them there), so the helper reads them without a copy; the result's own arrays
// are copied with the message, pruned to what the sets it may claim need. A helper that fails costs
// time, not output: a set it claimed and did not write goes back to the calling thread, which
// writes the file again from the start.

import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import type { Worker } from 'node:worker_threads'
import type { Table as ArrowTable } from 'apache-arrow'
import { CsvWriter } from './csv.js'
import { moduleWorker } from './module-worker.js'
import type { EarlyMatches } from '../engine/reconcile.js'
import { type ResultSet, type ResultsInput, resultSlice, resultTables, sourceRows, writeArrowSet } from './results.js'

/** Below this many result rows one thread writes everything: a helper takes ~0.1 s to start. */
const HELPER_MIN_ROWS = 100_000

/** Costliest first (matches: two key lists to gather), so the last set to finish is a small one. */
const ORDER: ResultSet[] = ['matches', 'unmatched-left', 'unmatched-right', 'ambiguous']

export type SetFormat = 'csv' | 'arrow'

export interface SetJob {
  input: ResultsInput
  set: ResultSet
  out: string
  format: SetFormat
  /** Source records per slice of a CSV set (SLICE_ROWS; tests set fewer). */
  sliceRows?: number
}

/**
 * What the helper is sent: sets to write, in order. With `claim`, a shared counter, each set is
 * first claimed (Atomics.add: the index it returns is the set to write), as the calling thread
 * claims them too; without, every set listed is the helper's.
 */
export interface HelperJob {
  id: number
  input: ResultsInput
  sets: ResultSet[]
  claim: Int32Array | null
  out: string
  format: SetFormat
  sliceRows?: number
}

/** The helper's answer to a job: the sets it wrote, and the one it failed (the caller writes it again). */
export interface HelperReply {
  id: number
  wrote: ResultSet[]
  failed: ResultSet | null
}

/** Runs a helper job on the thread it is called on (the helper's message handler). */
export async function helperJob(job: HelperJob): Promise<HelperReply> {
  const wrote: ResultSet[] = []
  for (;;) {
    const k = job.claim ? Atomics.add(job.claim, 0, 1) : wrote.length
    const set = job.sets[k]
    if (set === undefined) return { id: job.id, wrote, failed: null }
    try {
      await writeSet({ input: job.input, set, out: job.out, format: job.format, sliceRows: job.sliceRows })
    } catch {
      // the calling thread writes the set again and reports what goes wrong there
      return { id: job.id, wrote, failed: set }
    }
    wrote.push(set)
  }
}

/** One set's file in `out`: the Arrow file and its key index, or CSV. */
export async function writeSet(job: SetJob): Promise<void> {
  if (job.format === 'arrow') await writeArrowSet(job.out, job.input, job.set)
  else writeCsvSet(job)
}

/**
 * One set's CSV file, written through one reused buffer with synchronous writes, a slice of
 * SLICE_ROWS source records at a time (resultSlice): the slice's gathered columns are garbage once
 * it is encoded, so the whole set's never exist at once (see resultSlice for what that saved).
 */
function writeCsvSet({ input, set, out, sliceRows = SLICE_ROWS }: SetJob): void {
  const rows = sourceRows(input.result, set)
  const fd = openSync(join(out, `${set}.csv`), 'w')
  try {
    let csv: CsvWriter | null = null
    for (let from = 0; from === 0 || from < rows; from += sliceRows) {
      const to = Math.min(rows, from + sliceRows)
      const slice = from === 0 && to === rows ? input : resultSlice(input, set, from, to)
      const table = resultTables(slice ?? input, [set], { views: true, firstMatch: from + 1 })[set] as ArrowTable
      if (csv === null) {
        csv = new CsvWriter(table.schema, set, (chunk) => {
          for (let at = 0; at < chunk.length;) at += writeSync(fd, chunk, at)
        })
        csv.header()
      }
      for (const batch of table.batches) csv.rows(batch)
      if (slice === null) break
    }
    csv!.flush()
  } finally {
    closeSync(fd)
  }
}

/** Source records per slice of a CSV set (writeCsvSet). */
const SLICE_ROWS = 65_536

export interface SetsOptions {
  /**
   * The calling thread's own work to do while a helper writes the first set (a run's exceptions,
   * ~1.2 s on 477,000 of them): Arrow files are then written on two threads too, when the loaded
   * columns are shared memory (nothing large to copy to the helper).
   */
  alongside?: () => void
  /** Results smaller than this are written on one thread (tests set 0 to use the helper). */
  helperMinRows?: number
  /** Starts the helper (tests hand in one that fails). */
  helper?: () => Worker
  /** The matches set, already given to the helper by startMatches. */
  early?: StartedMatches
  /** Source records per slice of a CSV set (SetJob). */
  sliceRows?: number
}

/**
 * The matches set handed to the helper before the rest of the result exists: the engine gives a
 * run's matches as soon as its passes are done, and then spends a fifth of the run explaining
 * the unmatched records and totalling the sides on one thread, with the other core idle. Then
 * writeSets (handed this) leaves the matches out of its queue; the helper goes on with the other
 * sets once it is done. Undefined when the sets would be written on one thread anyway.
 */
export interface StartedMatches {
  helper: Worker
  /** Whether the helper wrote the set. */
  done: Promise<boolean>
}

/**
 * Starts writing the matches set on the helper (see StartedMatches). `input` holds the matches, the
 * passes and the loaded sides (the unmatched sets are not known yet); `alongside`: the caller will
 * have work of its own to do while the sets are written (writeSets' option of that name).
 */
export function startMatches(
  early: EarlyInput,
  out: string,
  format: SetFormat,
  { alongside = false, helperMinRows }: { alongside?: boolean; helperMinRows?: number } = {},
): StartedMatches | undefined {
  // the unmatched sets are not known yet: pruned as for any helper that writes only the matches
  const input = forSets(early as unknown as ResultsInput, ['matches'])
  const { matches, left, right } = early.result
  // every record not in a match is unmatched: the rows the whole result will have
  const rows =
    matches.count + left.length - matches.leftStart[matches.count] + right.length - matches.rightStart[matches.count]
  if (rows < minRowsFor(input, format, alongside, helperMinRows)) return undefined
  const helper = takeHelper()
  const done = onWorker(helper, { input, sets: ['matches'], claim: null, out, format })
  return { helper, done: done.then((reply) => reply.wrote.includes('matches')) }
}

/** What startMatches is given: the result as far as the engine has it (RunOptions.onMatches). */
export type EarlyInput = Omit<ResultsInput, 'result'> & { result: EarlyMatches }

/**
 * Writes a run's sets into `out` (created if needed): a job's `write`. Its `matches` starts the
 * matches set as soon as the engine has it (startMatches); `abandon` lets go of that when the run
 * ends without writing. `alongside`: the job will hand writeSets its own work to do meanwhile.
 */
export interface ResultsWriter {
  (results: ResultsInput, alongside?: () => void): Promise<void>
  matches?: (early: EarlyInput) => void
  abandon?: () => Promise<void>
}

export function setsWriter(out: string, format: SetFormat, { alongside = false } = {}): ResultsWriter {
  let early: StartedMatches | undefined
  const write = async (results: ResultsInput, work?: () => void) => {
    await mkdir(out, { recursive: true })
    const started = early
    early = undefined
    await writeSets(results, out, format, { alongside: work, early: started })
  }
  return Object.assign(write, {
    matches: (input: EarlyInput) => {
      mkdirSync(out, { recursive: true })
      early = startMatches(input, out, format, { alongside })
    },
    abandon: async () => {
      const started = early
      early = undefined
      if (started) await dropMatches(started)
    },
  })
}

/**
 * Waits for an early matches set that writeSets will not be called for (the run failed after its
 * passes), and lets the helper go.
 */
export async function dropMatches(early: StartedMatches): Promise<void> {
  const ok = await early.done
  release(early.helper, ok)
}

/**
 * Results smaller than this are written on one thread. Arrow files are cheaper to write than CSV
 * and gained nothing from a helper (1M × 1M: 2.0-2.3 s either way, the helper's start and the
 * copied arrays eating the overlap): one thread, unless a test asks, or the caller has its own work
 * alongside and the loaded columns are shared memory (nothing large to copy to the helper).
 */
function minRowsFor(input: ResultsInput, format: SetFormat, alongside: boolean, asked?: number): number {
  return asked ?? (format === 'csv' || (alongside && sharedColumns(input)) ? HELPER_MIN_ROWS : Infinity)
}

/** A helper of our own goes back for the next call unless it failed; any other is ended. */
function release(helper: Worker, ok: boolean): Promise<number> | undefined {
  if (helper === kept && ok) {
    giveBack()
    return undefined
  }
  if (helper === kept) kept = null
  return helper.terminate()
}

/** The four sets as files in `out` (which exists). */
export async function writeSets(
  input: ResultsInput,
  out: string,
  format: SetFormat,
  opts: SetsOptions = {},
): Promise<void> {
  const { matches, unmatchedLeft, unmatchedRight } = input.result
  const rows = matches.count + unmatchedLeft.rows.length + unmatchedRight.rows.length
  const early = opts.early
  const sets = ORDER.filter((set) => !(early && set === 'matches'))
  const alongside = opts.alongside
  if (!early && rows < minRowsFor(input, format, alongside !== undefined, opts.helperMinRows)) {
    alongside?.()
    for (const set of sets) await writeSet({ input, set, out, format, sliceRows: opts.sliceRows })
    return
  }
  const helper = early ? early.helper : opts.helper ? opts.helper() : takeHelper()
  // sets go to whichever thread claims them first; the helper is sent its job before the work
  // alongside starts, and after an early matches set it goes straight on to claim the next
  const claim = new Int32Array(new SharedArrayBuffer(4))
  const { sliceRows } = opts
  const onHelper = onWorker(helper, { input: forSets(input, sets), sets, claim, out, format, sliceRows })
  const failed: ResultSet[] = []
  const mine: ResultSet[] = []
  const onThisThread = async () => {
    alongside?.()
    for (let set = sets[Atomics.add(claim, 0, 1)]; set; set = sets[Atomics.add(claim, 0, 1)]) {
      mine.push(set)
      await writeSet({ input, set, out, format, sliceRows })
    }
  }
  try {
    const [reply] = await Promise.all([
      onHelper,
      onThisThread(),
      early?.done.then((ok) => ok || failed.push('matches')),
    ])
    // what the helper claimed and did not write (it failed one, or stopped) is written here again
    const helpers = sets.filter((set) => !mine.includes(set))
    failed.push(...helpers.filter((set) => !reply.wrote.includes(set)))
    for (const set of failed) await writeSet({ input, set, out, format, sliceRows })
  } finally {
    // a test's helper is ended
    await release(helper, !failed.length)
  }
}

/**
 * The helper, kept for the next call once it has written its sets: a service's run worker writes
 * one run after another, and a fresh helper takes ~0.1 s to start and writes its first set with
 * code not yet optimized. Idle, it does not keep the process alive. One that failed a set is
 * ended, and the next call starts another; a call made while it is busy gets one of its own.
 */
let kept: Worker | null = null
let keptBusy = false

function takeHelper(): Worker {
  if (kept && keptBusy) return moduleWorker('write-sets-worker')
  if (!kept) {
    const worker = moduleWorker('write-sets-worker')
    // an idle helper that fails just exits and is dropped; a busy one's error reaches onWorker
    worker.on('error', () => {})
    worker.once('exit', () => {
      if (kept === worker) kept = null
    })
    kept = worker
  }
  keptBusy = true
  kept.ref()
  return kept
}

/**
 * Starts the helper ahead of a run's writing, so it boots while the run matches (on the core
 * matching leaves idle) instead of delaying its first set: `concord reconcile --out` calls it with
 * the larger side's row count once the sides are loaded. The same threshold as writeSets', on an
 * estimate: a result has a row per unmatched record and per match, as many as the side's records
 * under 1:1 passes (fewer where a match groups records; a helper started then is unused, idle).
 */
export function warmHelper(loadedRows: number): void {
  if (kept || loadedRows < HELPER_MIN_ROWS) return
  takeHelper()
  giveBack()
}

function giveBack(): void {
  keptBusy = false
  kept?.unref()
}

let jobs = 0

/** Posts a job and resolves with the helper's reply to it; a helper that errors or exits wrote nothing. */
function onWorker(worker: Worker, job: Omit<HelperJob, 'id'>): Promise<HelperReply> {
  const id = ++jobs
  return new Promise((done) => {
    const settle = (reply: HelperReply) => {
      worker.off('message', onMessage).off('error', onStop).off('exit', onStop)
      done(reply)
    }
    const onMessage = (reply: HelperReply) => {
      if (reply.id === id) settle(reply)
    }
    const onStop = () => settle({ id, wrote: [], failed: null })
    worker.on('message', onMessage).on('error', onStop).on('exit', onStop)
    worker.postMessage({ ...job, id })
  })
}

/** Whether both sides' loaded columns are in shared memory (the CSV loader's): a helper reads them in place. */
function sharedColumns(input: ResultsInput): boolean {
  if (input.records) return false
  const shared = (a: { buffer: ArrayBufferLike } | null) => a === null || a.buffer instanceof SharedArrayBuffer
  return [input.result.left, input.result.right].every((t) =>
    t.data.every((c) =>
      c.type === 'string'
        ? shared(c.offsets) && shared(c.data) && shared(c.valid)
        : shared(c.values) && shared(c.valid),
    ),
  )
}

const NO_MATCHES = { count: 0 }
const NO_UNMATCHED = { rows: new Int32Array(0) }

/** The input with only what `sets` read: the rest of the result's arrays need not be copied over. */
function forSets(input: ResultsInput, sets: ResultSet[]): ResultsInput {
  const result = { ...input.result, summary: undefined }
  if (!sets.includes('matches') && !sets.includes('ambiguous')) Object.assign(result, { matches: NO_MATCHES })
  if (!sets.includes('unmatched-left')) Object.assign(result, { unmatchedLeft: NO_UNMATCHED })
  if (!sets.includes('unmatched-right')) Object.assign(result, { unmatchedRight: NO_UNMATCHED })
  return { ...input, result: result as unknown as ResultsInput['result'] }
}
