// Radix partitioning for the hash join. A join that probes one global hash table with a million
// rows spends most of its time waiting for memory: every probe, key comparison and residual
// check lands on a random cache line. Partitioning both sides by the top bits of the key hash,
// and copying the columns the pass reads into partition order as it goes (one sequential read of
// each column, writes into a few hundred streams), turns the join into many small joins whose
// rows, keys and payload all sit together in cache. Rows whose key is NULL never join and are
// left out. Positions in a partitioned side map back to table rows through `rows`.

import type { Column } from './column.js'
import type { SideKeys } from './keys.js'
import type { Table } from './table.js'

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

export function partitionSide(table: Table, columns: string[], keys: SideKeys, bits: number): PartitionedSide {
  const n = table.length
  const parts = 1 << bits
  const shift = 32 - bits
  const { hash, isNull } = keys
  const start = new Int32Array(parts + 1)
  // bits = 0 would shift by 32, which JavaScript takes as 0: every row goes to partition 0
  const partOf = (h: number) => (bits === 0 ? 0 : h >>> shift)
  for (let i = 0; i < n; i++) if (!isNull[i]) start[partOf(hash[i]) + 1]++
  for (let p = 0; p < parts; p++) start[p + 1] += start[p]
  const count = start[parts]
  const cursor = start.slice(0, parts)
  const pos = new Int32Array(n)
  const rows = new Int32Array(count)
  const outHash = new Uint32Array(count)
  for (let i = 0; i < n; i++) {
    if (isNull[i]) {
      pos[i] = -1
      continue
    }
    const h = hash[i]
    const at = cursor[partOf(h)]++
    pos[i] = at
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
      data: infos.map((c) => scatterColumn(table.data[c], pos, count)),
      length: count,
    },
    rows,
    start,
    hash: outHash,
  }
}

/** Copies a column into partition order: value i goes to position pos[i] (skipped when -1). */
function scatterColumn(col: Column, pos: Int32Array, count: number): Column {
  const n = col.length
  const valid = col.valid === null ? null : scatterU8(col.valid, pos, count)
  if (col.type === 'string') {
    const { offsets, data } = col
    const outOffsets = new Int32Array(count + 1)
    for (let i = 0; i < n; i++) if (pos[i] >= 0) outOffsets[pos[i] + 1] = offsets[i + 1] - offsets[i]
    for (let k = 0; k < count; k++) outOffsets[k + 1] += outOffsets[k]
    const outData = new Uint8Array(outOffsets[count])
    for (let i = 0; i < n; i++) {
      const p = pos[i]
      if (p < 0) continue
      let at = outOffsets[p]
      for (let s = offsets[i], e = offsets[i + 1]; s < e; s++) outData[at++] = data[s]
    }
    return { type: 'string', length: count, valid, offsets: outOffsets, data: outData }
  }
  // one loop per array type: a loop that met several typed-array classes would go megamorphic
  if (col.values instanceof Float64Array)
    return { ...col, length: count, valid, values: scatterF64(col.values, pos, count) } as Column
  if (col.values instanceof Int32Array)
    return { ...col, length: count, valid, values: scatterI32(col.values, pos, count) } as Column
  return { ...col, length: count, valid, values: scatterU8(col.values, pos, count) } as Column
}

function scatterF64(src: Float64Array, pos: Int32Array, count: number): Float64Array {
  const out = new Float64Array(count)
  for (let i = 0; i < src.length; i++) if (pos[i] >= 0) out[pos[i]] = src[i]
  return out
}

function scatterI32(src: Int32Array, pos: Int32Array, count: number): Int32Array {
  const out = new Int32Array(count)
  for (let i = 0; i < src.length; i++) if (pos[i] >= 0) out[pos[i]] = src[i]
  return out
}

function scatterU8(src: Uint8Array, pos: Int32Array, count: number): Uint8Array {
  const out = new Uint8Array(count)
  for (let i = 0; i < src.length; i++) if (pos[i] >= 0) out[pos[i]] = src[i]
  return out
}
