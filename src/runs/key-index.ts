// Record-key indexes of a run's result files, so `?key=` answers without scanning a million rows
// (it took 7 s and held the event loop as long). Written once by the run's worker beside each
// file (`<set>.keys`): the 32-bit FNV-1a hash of every record key a row holds (a match: its left
// and right keys; an unmatched record: its own), sorted, with the row each came from. A lookup
// hashes the key, binary-searches the hashes and checks the few rows found against the file, so
// a hash collision costs a comparison, never a wrong answer.
//
// File layout (little-endian): u32 count, then count u32 hashes (ascending), then count i32 rows.

import { open, writeFile } from 'node:fs/promises'
import type { Data, Table as ArrowTable } from 'apache-arrow'
import { fnv1a } from '../engine/match/keys.js'

const encoder = new TextEncoder()

export function keyHash(key: string): number {
  const bytes = encoder.encode(key)
  return fnv1a(bytes, 0, bytes.length)
}

/** How many keys a Utf8 Data (a row each) or a List<Utf8>'s items hold. */
function keyCount(data: Data): number {
  if (data.children?.length && data.valueOffsets) {
    const starts = data.valueOffsets as Int32Array
    return starts[data.length] - starts[0]
  }
  return data.length
}

/**
 * Hashes of the strings of a Utf8 Data (or of a List<Utf8>'s items) into `hashes` from `at`, with
 * the table row of each; returns where the next Data's go. Typed arrays sized by keyCount: JS
 * arrays grown by push, then copied, cost a match set's index (2M keys) ~190 ms instead of ~60.
 */
function collect(data: Data, rowBase: number, hashes: Uint32Array, rows: Int32Array, at: number): number {
  // value and offset buffers of a sliced Data start at the slice (Arrow slices them)
  if (data.children?.length && data.valueOffsets) {
    // List<Utf8>: each row's items
    const starts = data.valueOffsets as Int32Array
    const child = data.children[0]
    const offsets = child.valueOffsets as Int32Array
    const bytes = child.values as Uint8Array
    for (let i = 0; i < data.length; i++)
      for (let k = starts[i]; k < starts[i + 1]; k++) {
        hashes[at] = fnv1a(bytes, offsets[k], offsets[k + 1])
        rows[at++] = rowBase + i
      }
    return at
  }
  const offsets = data.valueOffsets as Int32Array
  const bytes = data.values as Uint8Array
  for (let i = 0; i < data.length; i++) {
    hashes[at] = fnv1a(bytes, offsets[i], offsets[i + 1])
    rows[at++] = rowBase + i
  }
  return at
}

/** The index of a result table: by left_keys and right_keys (matches) or record_key (unmatched). */
export function buildKeyIndex(table: ArrowTable): Uint8Array {
  const columns = ['left_keys', 'right_keys', 'record_key']
    .map((name) => table.schema.fields.findIndex((f) => f.name === name))
    .filter((c) => c >= 0)
  let n = 0
  for (const c of columns)
    for (const batch of table.batches) if (batch.numRows > 0) n += keyCount(batch.data.children[c])
  let h = new Uint32Array(n)
  let r = new Int32Array(n)
  let at = 0
  for (const c of columns) {
    let base = 0
    for (const batch of table.batches) {
      if (batch.numRows > 0) at = collect(batch.data.children[c], base, h, r, at)
      base += batch.numRows
    }
  }
  // sorted by hash with a stable radix sort, rows carried along: four passes of 8 bits, whose 256
  // destinations a pass scatters to stay in cache (two passes of 16 bits scattered to 65,536 and
  // took ~1.4x as long on 1.5M keys, a scratch test)
  let h2 = new Uint32Array(n)
  let r2 = new Int32Array(n)
  for (const shift of [0, 8, 16, 24]) {
    const counts = new Int32Array(257)
    for (let i = 0; i < n; i++) counts[((h[i] >>> shift) & 0xff) + 1]++
    for (let b = 0; b < 256; b++) counts[b + 1] += counts[b]
    for (let i = 0; i < n; i++) {
      const at = counts[(h[i] >>> shift) & 0xff]++
      h2[at] = h[i]
      r2[at] = r[i]
    }
    ;[h, h2] = [h2, h]
    ;[r, r2] = [r2, r]
  }
  const out = new Uint8Array(4 + 8 * n)
  const view = new DataView(out.buffer)
  view.setUint32(0, n, true)
  new Uint32Array(out.buffer, 4, n).set(h)
  new Int32Array(out.buffer, 4 + 4 * n, n).set(r)
  return out
}

export const indexFile = (arrowFile: string) => arrowFile.replace(/\.arrow$/, '.keys')

export async function writeKeyIndex(arrowFile: string, table: ArrowTable): Promise<void> {
  await writeFile(indexFile(arrowFile), buildKeyIndex(table))
}

export interface KeyIndex {
  /** Rows that may hold the key (a superset: hash collisions included), ascending. */
  candidates(key: string): number[]
}

/** Reads an index; null when the run was stored before indexes (the caller then scans). */
export async function readKeyIndex(arrowFile: string): Promise<KeyIndex | null> {
  let bytes: Uint8Array
  try {
    // read into a buffer of its own: the typed-array views below need it aligned
    const handle = await open(indexFile(arrowFile))
    try {
      bytes = new Uint8Array((await handle.stat()).size)
      for (let at = 0; at < bytes.length;) {
        const { bytesRead } = await handle.read(bytes, at, bytes.length - at, at)
        if (bytesRead === 0) break
        at += bytesRead
      }
    } finally {
      await handle.close()
    }
  } catch {
    return null
  }
  const n = new DataView(bytes.buffer).getUint32(0, true)
  const hashes = new Uint32Array(bytes.buffer, 4, n)
  const rows = new Int32Array(bytes.buffer, 4 + 4 * n, n)
  return {
    candidates(key) {
      const h = keyHash(key)
      let lo = 0
      let hi = n
      while (lo < hi) {
        const mid = (lo + hi) >>> 1
        if (hashes[mid] < h) lo = mid + 1
        else hi = mid
      }
      const found = new Set<number>()
      for (let i = lo; i < n && hashes[i] === h; i++) found.add(rows[i])
      return [...found].sort((a, b) => a - b)
    },
  }
}
