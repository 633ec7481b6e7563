// The columns of one part of a file, as a worker thread hands them to the loader (see
// parallel.ts), and the rule for joining two parts' types. A part is parsed from the same sampled
// types as the rest but widens on its own, so the join widens again: the result is the type
// inference over the values of both parts gives (../infer.ts), or a reread when that type is
// text but a part holds parsed values whose text is gone.

import { type ValueKind, widen } from '../infer.js'
import type { Placement } from './columns.js'
import { isShared } from '../../data/shared.js'
import { MAX_DECIMAL_DIGITS } from '../../data/values.js'

/** What the join needs to know of each side. */
export interface PartType {
  kind: ValueKind
  scale: number
  intDigits: number
  pendingFloat: boolean
}

export interface ColumnPart extends PartType {
  length: number
  nulls: number
  /** null when the part has no NULLs */
  valid: Uint8Array | null
  /** By kind: Float64Array (integer, decimal units, float, timestamp), Int32Array (date), Uint8Array (boolean). */
  values: Float64Array | Int32Array | Uint8Array | null
  /** string: length + 1 offsets into data. */
  offsets: Int32Array | null
  data: Uint8Array | null
  /** The rows are still in the room the loader reserved for them (PartJob's `placement`). */
  placed: boolean
}

/**
 * The type of two parts of a column joined, or null when the column must be read again as text:
 * the joined type is text but a side holds parsed values, or a decimal with too many digits.
 */
export function mergedKind(a: PartType, b: PartType): { kind: ValueKind; pendingFloat: boolean } | null {
  const kind = widen(a.kind, b.kind)
  const typed = (k: ValueKind) => k !== 'string' && k !== 'null'
  if (kind === 'string') return typed(a.kind) || typed(b.kind) ? null : { kind, pendingFloat: false }
  // Too many digits for a decimal: text, as neither side holds a float (else the kind would be float).
  if (kind === 'decimal' && Math.max(a.intDigits, b.intDigits) + Math.max(a.scale, b.scale) > MAX_DECIMAL_DIGITS) {
    return null
  }
  const realFloat = (s: PartType) => s.kind === 'float' && !s.pendingFloat
  return { kind, pendingFloat: kind === 'float' && !realFloat(a) && !realFloat(b) }
}

/** The buffers to transfer with a part (zero-copy to the receiving thread); shared ones are shared, not transferred. */
export function partBuffers(parts: ColumnPart[]): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>()
  for (const p of parts) {
    for (const a of [p.valid, p.values, p.offsets, p.data]) if (a && !isShared(a)) out.add(a.buffer as ArrayBuffer)
  }
  return [...out]
}

/** What the loader asks of the worker: parse the file from `start` (a row boundary candidate) to its end. */
export interface PartJob {
  path: string
  /** The file the loader has open, which the worker must find at `path` too. */
  file: FileIdentity
  start: number
  size: number
  /** The delimiter's byte. */
  delimiter: number
  /** Sampled types of the columns (text for the forced ones). */
  kinds: ValueKind[]
  scales: number[]
  /** Expected rows and text bytes per column in the part, to size the columns. */
  capacity: number
  textBytes: number[]
  chunkSize: number
  /**
   * Per column, room in the loader's own arrays (shared memory) to parse into, or null for
   * arrays of the worker's own (columns.ts, reserveTail).
   */
  placement?: (Placement | null)[]
}

export interface FileIdentity {
  dev: number
  ino: number
  size: number
  mtimeMs: number
}

/** Lines are counted from 1 at the part's start. */
export type PartResult =
  | { type: 'done'; parts: ColumnPart[] }
  | { type: 'malformed'; line: number; detail: string }
  | { type: 'needs-string'; columns: number[] }
  | { type: 'cancelled' }
  | { type: 'failed'; message: string }
