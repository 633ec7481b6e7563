// What the event-loop tests share: large left/right CSV files written without holding them, and
// percentiles of their probes.

import { closeSync, openSync, writeSync } from 'node:fs'
import { join } from 'node:path'

/** Lines written at a time. */
const CHUNK = 50_000

/**
 * Writes `left.csv` and `right.csv` in `dir`: a header each, then `rows` lines, line i of each from
 * `line(i)` (newline included). Written CHUNK lines at a time: two million lines held at once as
 * strings survived into the old generation, and collecting them later paused the test process's
 * loop for up to 87 ms in the middle of a measurement: the test's garbage, not the service's.
 */
export function writeCsvPair(
  dir: string,
  headers: [left: string, right: string],
  rows: number,
  line: (i: number) => [left: string, right: string],
): void {
  const left = openSync(join(dir, 'left.csv'), 'w')
  const right = openSync(join(dir, 'right.csv'), 'w')
  try {
    writeSync(left, `${headers[0]}\n`)
    writeSync(right, `${headers[1]}\n`)
    for (let from = 0; from < rows; from += CHUNK) {
      let l = ''
      let r = ''
      for (let i = from; i < Math.min(rows, from + CHUNK); i++) {
        const [a, b] = line(i)
        l += a
        r += b
      }
      writeSync(left, l)
      writeSync(right, r)
    }
  } finally {
    closeSync(left)
    closeSync(right)
  }
}

/** The p-th quantile (0..1) of xs, by rank. */
export const percentile = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]
