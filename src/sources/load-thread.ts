// File sources of the built-in types parsed off the service's event loop. A CSV of a million rows
// took 0.5–0.7 s to load for POST /api/sources, a preview or a scoped load, in chunks that held
// the loop 100–250 ms each while cold; here one worker thread (load-worker.ts) parses it and hands
// the table's column buffers over without copying them. Small files are parsed where they are
// asked for: the round trip would cost more than the parse. Started at the first large file, kept
// while the process runs, and idle it does not hold the process open (request-thread.ts).

import { isMainThread } from 'node:worker_threads'
import type { Table } from '../engine/data/table.js'
import { RequestThread, revived, type ThreadError } from '../runs/request-thread.js'
import type { ThreadLoader } from './file-loaders.js'

/** Files smaller than this are parsed on the calling thread (a few milliseconds at most). */
export const OFF_THREAD_MIN_BYTES = 4 * 1024 * 1024

export interface LoadRequest {
  id: number
  loader: ThreadLoader
  path: string
}

export type LoadReply = { id: number; value: Table } | { id: number; error: ThreadError }

let thread: RequestThread<LoadReply> | undefined
let enabled = false

/** Files parsed on the load thread so far in this process (tests read it). */
export const offThreadLoads = { count: 0 }

/**
 * Large files are parsed on the load thread from now on (buildApp: the service). `concord
 * reconcile` does not: its main thread has nothing else to serve, and the thread's start would
 * only add to the command's time.
 */
export function loadFilesOffThread(): void {
  enabled = true
}

/**
 * Whether a file of `size` bytes is parsed on the load thread: in the service, on its main thread
 * (a run's worker is already off the loop and parses where it is).
 */
export function loadsOffThread(size: number): boolean {
  return enabled && isMainThread && size >= OFF_THREAD_MIN_BYTES
}

/**
 * Parses the file on the load thread. It takes no signal: the parse runs to its end and the file
 * cache keeps it for whoever asked meanwhile; a caller that gives up stops waiting on its own
 * (`abortable` in files.ts), so one client going away does not fail another's load.
 */
export async function loadOffThread(loader: ThreadLoader, path: string): Promise<Table> {
  thread ??= new RequestThread<LoadReply>(
    'load-worker',
    'file load thread',
    (reply) => ('value' in reply ? { value: reply.value } : { error: revived(reply.error) }),
    import.meta.url,
  )
  offThreadLoads.count++
  return (await thread.ask({ loader, path })) as Table
}
