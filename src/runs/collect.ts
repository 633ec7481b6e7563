// A full garbage collection on demand, for the one moment a large command knows most of its heap
// has just died: when `reconcile` returns, the passes' partitioned copies of the sides, their
// candidate lists and the explanation's scratch arrays (~50 MB at 1M × 1M) are garbage, and the
// result sets are written next. V8 had not collected them by then, so the writing's own memory
// came on top: peak RSS 516–542 MiB; collected first, 503–512 (three runs each), for 20–40 ms on
// the thread whose helper is writing the matches meanwhile.

import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

let gc: (() => void) | null | undefined

/** Runs a full collection; false where the engine does not offer one (then nothing happens). */
export function collectGarbage(): boolean {
  if (gc === undefined) {
    try {
      // the flag reaches contexts made from now on: this one's `gc`, not the main context's globals
      setFlagsFromString('--expose-gc')
      gc = runInNewContext('gc') as () => void
    } catch {
      gc = null
    }
  }
  if (!gc) return false
  gc()
  return true
}
