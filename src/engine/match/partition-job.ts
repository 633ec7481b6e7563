// What the engine's thread and the partitioning helper thread exchange (partition-helper.ts).

import type { StringColumn } from '../data/column.js'
import type { SideKeys } from './keys.js'
import type { PartitionedSide } from './partition.js'
import type { Table } from '../data/table.js'

/** Slots of the shared state array: set once the worker runs; the last job done; a count that moves while it works. */
export const READY = 0
export const DONE = 1
export const BEAT = 2

export interface PartitionJob {
  seq: number
  /** Columns in shared memory: the engine's thread keeps its own table untouched. */
  table: Table
  columns: string[]
  /** The side's key hashes, or its one plain string key column, which the helper hashes itself. */
  keys: SideKeys | { column: StringColumn }
  bits: number
}

export type PartitionReply = { seq: number; side: PartitionedSide } | { seq: number; error: string }
