// Radix partitioning for the hash join. A join that probes one global hash table with a million
// rows spends most of its time waiting for memory: every probe, key comparison and residual
// check lands on a random cache line. Partitioning both sides by the top bits of the key hash,
// and copying the columns the pass reads into partition order as it goes (one sequential read of
// each column, writes into a few hundred streams), turns the join into many small joins whose
// rows, keys and payload all sit together in cache. Rows whose key is NULL never join and are
// left out. Positions in a partitioned side map back to table rows through `rows`.

import { largeArray } from '../data/alloc.js'
import type { Column } from '../data/column.js'
import type { SideKeys } from './keys.js'
import type { Table } from '../data/table.js'

export interface PartitionedSide {
  /** The projected columns, rows in partition order. */
  table: Table
  /** Position → row of the original table. */
  rows: Int32Array
  /** Partition p holds positions start[p] .. start[p+1]. */
  start: Int32Array
  /** Key hash per position. */
  hash: Uint32Array
}

/** Partition bits for n rows: partitions of about 2,048 rows, at most 4,096 partitions. */
export function partitionBits(n: number): number {
  let bits = 0
  while (bits < 12 && n >> (bits + 11) > 0) bits++
  return bits
}

export function partitionSide(
  table: Table,
  columns: string[],
  keys: SideKeys,
  bits: number,
  /** Called after each column is copied: the helper thread's sign of life (partition-helper.ts). */
  onColumn: () => void = () => {},
): PartitionedSide {
  const n = table.length
  const parts = 1 << bits
  const { hash, isNull } = keys
  const start = new Int32Array(parts + 1)
  // bits = 0 shifts by 32, which JavaScript takes as 0: the mask (0) still sends every row to partition 0
  const shift = 32 - bits
  const mask = parts - 1
  for (let i = 0; i < n; i++) if (!isNull[i]) start[((hash[i] >>> shift) & mask) + 1]++
  for (let p = 0; p < parts; p++) start[p + 1] += start[p]
  const count = start[parts]
  const layout: Layout = { hash, isNull, start, shift, mask, n, count }
  const rows = largeArray(Int32Array, count)
  const outHash = largeArray(Uint32Array, count)
  const cursor = start.slice(0, parts)
  for (let i = 0; i < n; i++) {
    if (isNull[i]) continue
    const h = hash[i]
    const at = cursor[(h >>> shift) & mask]++
    rows[at] = i
    outHash[at] = h
  }
  const infos = columns.map((name) => {
    const c = table.columns.findIndex((x) => x.name === name)
    if (c < 0) throw new Error(`column "${name}" is not in the table`)
    return c
  })
  return {
    table: {
      columns: infos.map((c) => table.columns[c]),
      data: infos.map((c) => {
        const out = scatterColumn(table.data[c], layout)
        onColumn()
        return out
      }),
      length: count,
    },
    rows,
    start,
    hash: outHash,
  }
}

/**
 * Where rows go: row i (unless its key is NULL) to the next place of partition
 * (hash[i] >>> shift) & mask. Each column recomputes the places from the hashes rather than
 * reading them from a per-row array: that array would be another few megabytes of fresh memory.
 */
interface Layout {
  hash: Uint32Array
  isNull: Uint8Array
  start: Int32Array
  shift: number
  mask: number
  /** Rows in, rows out (without NULL keys). */
  n: number
  count: number
}

/** Copies a column into partition order. */
function scatterColumn(col: Column, at: Layout): Column {
  const { count } = at
  const valid = col.valid === null ? null : scatterU8(col.valid, at)
  if (col.type === 'string') {
    const { offsets, data } = col
    const { hash, isNull, shift, mask, n } = at
    // lengths first (each at its place + 1), summed into offsets, then the bytes
    const outOffsets = largeArray(Int32Array, count + 1)
    let cursor = at.start.slice(0, mask + 1)
    for (let i = 0; i < n; i++) {
      if (!isNull[i]) outOffsets[cursor[(hash[i] >>> shift) & mask]++ + 1] = offsets[i + 1] - offsets[i]
    }
    for (let k = 0; k < count; k++) outOffsets[k + 1] += outOffsets[k]
    const outData = largeArray(Uint8Array, outOffsets[count])
    cursor = at.start.slice(0, mask + 1)
    for (let i = 0; i < n; i++) {
      if (isNull[i]) continue
      let to = outOffsets[cursor[(hash[i] >>> shift) & mask]++]
      for (let s = offsets[i], e = offsets[i + 1]; s < e; s++) outData[to++] = data[s]
    }
    return { type: 'string', length: count, valid, offsets: outOffsets, data: outData }
  }
  // one loop per array type: a loop that met several typed-array classes would go megamorphic
  if (col.values instanceof Float64Array)
    return { ...col, length: count, valid, values: scatterF64(col.values, at) } as Column
  if (col.values instanceof Int32Array)
    return { ...col, length: count, valid, values: scatterI32(col.values, at) } as Column
  return { ...col, length: count, valid, values: scatterU8(col.values, at) } as Column
}

function scatterF64(src: Float64Array, at: Layout): Float64Array {
  const { hash, isNull, shift, mask, n } = at
  const cursor = at.start.slice(0, mask + 1)
  const out = largeArray(Float64Array, at.count)
  for (let i = 0; i < n; i++) if (!isNull[i]) out[cursor[(hash[i] >>> shift) & mask]++] = src[i]
  return out
}

function scatterI32(src: Int32Array, at: Layout): Int32Array {
  const { hash, isNull, shift, mask, n } = at
  const cursor = at.start.slice(0, mask + 1)
  const out = largeArray(Int32Array, at.count)
  for (let i = 0; i < n; i++) if (!isNull[i]) out[cursor[(hash[i] >>> shift) & mask]++] = src[i]
  return out
}

function scatterU8(src: Uint8Array, at: Layout): Uint8Array {
  const { hash, isNull, shift, mask, n } = at
  const cursor = at.start.slice(0, mask + 1)
  const out = largeArray(Uint8Array, at.count)
  for (let i = 0; i < n; i++) if (!isNull[i]) out[cursor[(hash[i] >>> shift) & mask]++] = src[i]
  return out
}
