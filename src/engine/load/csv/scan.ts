// Tokenizes a byte range of a file in chunks, reading the next chunk while the tokenizer works
// on the current one (a read from the page cache takes about a tenth of the time the tokenizer
// and columns spend on the same bytes, and no longer has to be waited for). A range may end
// before the file does, and where it ends may move while it is scanned (a split: parallel.ts).
// Used by the loader's own thread and by the part worker.

import type { FileHandle } from 'node:fs/promises'

export interface RangeScan {
  handle: FileHandle
  /** The file's size: the last row of the file may end without a newline. */
  size: number
  /** Offset of a row's first byte. */
  from: number
  /** Where to stop (at most `size`); asked before each chunk, so it may move while the scan runs. */
  stop: () => number
  chunkSize: number
  /** Tokenizes the complete rows in buf[pos, end) and returns where the rest starts (Tokenizer.scanInto). */
  tokenize: (buf: Buffer, pos: number, end: number, final: boolean) => number
  /** Runs before each chunk with the offset of the first byte not consumed yet (abort checks, splits). */
  beforeChunk?: (at: number) => void | Promise<void>
}

/**
 * Returns the offset of the first byte not consumed. Ranges that end before the file does stop
 * at the last complete row: the result equals `stop()` exactly when a row ends there.
 */
export async function scanRange(r: RangeScan): Promise<number> {
  const { handle, chunkSize, tokenize } = r
  // Room in front of each chunk for the unfinished row carried over from the previous one.
  const reserve = Math.min(64 * 1024, chunkSize)
  const read = async (into: Buffer, offset: number): Promise<number> => {
    const want = Math.min(chunkSize, r.stop() - offset)
    return want <= 0 ? 0 : (await handle.read(into, reserve, want, offset)).bytesRead
  }
  let cur: Buffer = Buffer.allocUnsafe(reserve + chunkSize)
  let spare: Buffer | null = Buffer.allocUnsafe(reserve + chunkSize)
  let start = reserve // cur[start, end) holds the file's bytes from offset `at`
  let at = r.from
  let end = reserve + (await read(cur, at))
  for (;;) {
    await r.beforeChunk?.(at)
    const stop = r.stop()
    const next = at + (end - start) // the first byte not in cur
    const limit = Math.min(end, start + (stop - at))
    const whole = at + (limit - start) >= stop // cur holds everything up to stop
    let prefetch: Promise<number> | null = null
    if (!whole) {
      spare ??= Buffer.allocUnsafe(reserve + chunkSize)
      prefetch = read(spare, next)
    }
    let rest: number
    try {
      rest = tokenize(cur, start, limit, whole && stop >= r.size)
    } catch (err) {
      prefetch?.catch(() => {}) // the caller closes the file; a read cut short by that is of no interest
      throw err
    }
    if (whole) return at + (rest - start)
    const got = await prefetch!
    const carry = end - rest
    if (got === 0) {
      // the file ended early (it shrank while being read): what is left is its last row
      tokenize(cur, rest, end, true)
      return next
    }
    at = next - carry
    if (carry <= reserve) {
      const into = spare!
      cur.copy(into, reserve - carry, rest, end)
      start = reserve - carry
      end = reserve + got
      spare = cur.length >= reserve + chunkSize ? cur : null
      cur = into
    } else {
      // a row longer than the reserve: join it and the new bytes in a buffer of their own
      const joined = Buffer.allocUnsafe(carry + got)
      cur.copy(joined, 0, rest, end)
      spare!.copy(joined, carry, reserve, reserve + got)
      start = 0
      end = carry + got
      cur = joined
    }
  }
}
