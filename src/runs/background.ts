// Background threads give way to the service's event loop. On a small machine a run's worker, two
// export workers, a client and the event loop all want the CPU at once, and the scheduler shared
// it evenly: GET /health waited 30-90 ms at p99 during a million-row export while the loop itself
// was idle 60% of the time. Threads that do bulk work (runs, exports, report figures) lower their
// own priority (nice 10), so when the cores are contended the thread that answers requests runs
// first, and when they are not the bulk work still gets all of it. Threads a background thread
// starts (CSV part workers, partition helpers, the result-set writer) inherit its priority; the
// same helpers started by `concord reconcile`, which has no event loop to keep free, do not. The
// embedded database's thread is not one of these: requests wait on it.

import { setPriority } from 'node:os'

/** The nice value of background threads (0 normal, 19 lowest); raising it needs no privilege. */
export const BACKGROUND_NICE = 10

/**
 * Lowers the calling thread's priority. Linux keeps a nice value per thread, so this leaves the
 * rest of the process alone; elsewhere it would lower the whole process, so it does nothing there.
 */
export function runInBackground(): void {
  if (process.platform !== 'linux') return
  try {
    setPriority(BACKGROUND_NICE)
  } catch {
    // a sandbox that refuses setpriority: the thread keeps its priority, nothing else changes
  }
}
