// The event-loop half of the overload guard. under-pressure measures from the moment it is
// registered, so the first second after /ready said yes still carried start-up work (module loads,
// PGlite's first open) and refused ordinary requests; a second with no loop turn at all even reads
// as an infinite delay. This gauge starts when the app is ready, so only serving counts.

import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks'

const RESOLUTION_MS = 10

export interface LoopGauge {
  /** Start measuring (the app's onReady): what came before is start-up, not load. */
  start(): void
  /** The mean delay since the last check is within bounds; starts the next window. */
  healthy(): boolean
  stop(): void
}

export function loopGauge(maxDelayMs: number): LoopGauge {
  let histogram: IntervalHistogram | undefined
  // the window is a difference of running totals: reset() would also forget the loop's last turn,
  // so a hold right after it would go unseen
  let seen = { count: 0, sum: 0, at: 0 }
  return {
    start() {
      histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS })
      histogram.enable()
      seen = { count: 0, sum: 0, at: performance.now() }
    },
    healthy() {
      if (!histogram || maxDelayMs <= 0) return true
      // before its first sample a histogram's mean is NaN: carried into `seen`, it made the next
      // window's mean NaN too, read as overload, and the first requests after /ready got a 503
      const count = histogram.count
      const now = { count, sum: count > 0 ? histogram.mean * count : 0, at: performance.now() }
      const turns = now.count - seen.count
      const meanMs = (now.sum - seen.sum) / turns / 1e6 - RESOLUTION_MS
      const elapsed = now.at - seen.at
      seen = now
      // no turn of the loop in the whole window: it was held that long
      if (turns === 0) return elapsed <= maxDelayMs
      return meanMs <= maxDelayMs
    },
    stop() {
      histogram?.disable()
    },
  }
}
