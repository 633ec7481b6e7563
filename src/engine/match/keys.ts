// Join keys for the hash join: every row's key is hashed once per pass into a Uint32Array (which
// also partitions the rows, see partition.ts), and an equality test confirms a hash hit. A plain string column is hashed and compared on its UTF-8
// bytes in place (decoding a million values into JS strings and hashing them in a Map costs more
// than the whole join); numbers, dates and computed keys (UPPER(TRIM(l.ref))) are evaluated once
// per row by the compiled expression. Equal keys compare equal exactly as the predicate's `=`
// does: bytes for strings (the C collation), a common scale for decimals, NULL never equal.

import { largeArray } from '../data/alloc.js'
import type { Expr } from '../../language/predicate.js'
import type { Column, StringColumn } from '../data/column.js'
import type { ExprCompiler } from '../plan/compile.js'
import type { KeyPair } from '../plan/plan.js'
import { sharedArray } from '../data/shared.js'
import type { Table } from '../data/table.js'

/** One side's keys: a hash per row and which rows have a NULL key part (they never join). */
export interface SideKeys {
  hash: Uint32Array
  isNull: Uint8Array
}

/** The key hashes of every row of both tables (all key parts combined). */
export function keyHashes(
  keys: KeyPair[],
  compiler: ExprCompiler,
  tables: { l: Table; r: Table },
): { left: SideKeys; right: SideKeys } {
  const parts = keys.map((k) => {
    const lc = plainColumn(k.left, tables.l)
    const rc = plainColumn(k.right, tables.r)
    if (lc?.type === 'string' && rc?.type === 'string') return { left: hashBytes(lc), right: hashBytes(rc) }
    const [l, r, common] = compiler.operands(k.left, k.right)
    const side = (code: string, row: 'i' | 'j', n: number) =>
      common.kind === 'string'
        ? hashStrings(evaluate(compiler.build<(row: number) => string | null>(row, code), n))
        : numbers(compiler.build<(row: number) => number | boolean | null>(row, code), n).keys
    return { left: side(l.code, 'i', tables.l.length), right: side(r.code, 'j', tables.r.length) }
  })
  if (parts.length === 1) return parts[0]
  const combine = (side: 'left' | 'right'): SideKeys => {
    const n = parts[0][side].hash.length
    const hash = sharedArray(Uint32Array, n)
    const isNull = sharedArray(Uint8Array, n)
    for (const p of parts) {
      const h = p[side].hash
      const z = p[side].isNull
      for (let r = 0; r < n; r++) {
        hash[r] = mix((Math.imul(hash[r], 0x01000193) ^ h[r]) >>> 0)
        isNull[r] |= z[r]
      }
    }
    return { hash, isNull }
  }
  return { left: combine('left'), right: combine('right') }
}

/**
 * Key equality between left row i and right row j of `tables` (which may be partitioned copies of
 * the tables the hashes came from): the exact test behind a hash hit.
 */
export function keyEquality(
  keys: KeyPair[],
  compiler: ExprCompiler,
  tables: { l: Table; r: Table },
): (i: number, j: number) => boolean {
  const tests = keys.map((k): ((i: number, j: number) => boolean) => {
    const lc = plainColumn(k.left, tables.l)
    const rc = plainColumn(k.right, tables.r)
    if (lc?.type === 'string' && rc?.type === 'string') return sameBytes(lc, rc)
    const [l, r, common] = compiler.operands(k.left, k.right)
    if (common.kind === 'string') {
      const lv = evaluate(compiler.build<(i: number) => string | null>('i', l.code), tables.l.length)
      const rv = evaluate(compiler.build<(j: number) => string | null>('j', r.code), tables.r.length)
      return (i, j) => lv[i] !== null && lv[i] === rv[j]
    }
    const lv = numbers(compiler.build<(i: number) => number | boolean | null>('i', l.code), tables.l.length)
    const rv = numbers(compiler.build<(j: number) => number | boolean | null>('j', r.code), tables.r.length)
    const [la, ra, lz, rz] = [lv.values, rv.values, lv.keys.isNull, rv.keys.isNull]
    return (i, j) => la[i] === ra[j] && lz[i] === 0 && rz[j] === 0
  })
  if (tests.length === 1) return tests[0]
  return (i, j) => {
    for (let k = 0; k < tests.length; k++) if (!tests[k](i, j)) return false
    return true
  }
}

/**
 * The two key columns when a pass joins on one plain string column a side: each side's hashes then
 * come from its own bytes alone (hashBytes), so the left side's can be made on the partitioning
 * helper thread while this one hashes the right (partition-helper.ts).
 */
export function plainStringKeys(
  keys: KeyPair[],
  tables: { l: Table; r: Table },
): { left: StringColumn; right: StringColumn } | null {
  if (keys.length !== 1) return null
  const left = plainColumn(keys[0].left, tables.l)
  const right = plainColumn(keys[0].right, tables.r)
  return left?.type === 'string' && right?.type === 'string' ? { left, right } : null
}

function plainColumn(e: Expr, table: Table): Column | undefined {
  if (e.kind !== 'column') return undefined
  const n = table.columns.findIndex((c) => c.name === e.name)
  return n < 0 ? undefined : table.data[n]
}

function evaluate<T>(fn: (row: number) => T, n: number): T[] {
  const out = new Array<T>(n)
  for (let r = 0; r < n; r++) out[r] = fn(r)
  return out
}

const f64 = new Float64Array(1)
const u32 = new Uint32Array(f64.buffer)

function numbers(fn: (row: number) => number | boolean | null, n: number): { keys: SideKeys; values: Float64Array } {
  const values = largeArray(Float64Array, n)
  const hash = sharedArray(Uint32Array, n)
  const isNull = sharedArray(Uint8Array, n)
  for (let r = 0; r < n; r++) {
    const v = fn(r)
    if (v === null || (typeof v === 'number' && Number.isNaN(v))) {
      isNull[r] = 1
      continue
    }
    const x = typeof v === 'boolean' ? (v ? 1 : 0) : v === 0 ? 0 : v // -0 and 0 are one key
    values[r] = x
    f64[0] = x
    hash[r] = mix(Math.imul(u32[0], 0x9e3779b1) ^ u32[1])
  }
  return { keys: { hash, isNull }, values }
}

function hashStrings(values: (string | null)[]): SideKeys {
  const n = values.length
  const hash = sharedArray(Uint32Array, n)
  const isNull = sharedArray(Uint8Array, n)
  for (let r = 0; r < n; r++) {
    const s = values[r]
    if (s === null) {
      isNull[r] = 1
      continue
    }
    let h = 0x811c9dc5
    for (let c = 0; c < s.length; c++) h = Math.imul(h ^ s.charCodeAt(c), 0x01000193)
    hash[r] = mix(h)
  }
  return { hash, isNull }
}

/** A plain string key column's hashes, from its UTF-8 bytes. */
export function hashBytes(col: StringColumn): SideKeys {
  const n = col.length
  const hash = sharedArray(Uint32Array, n)
  const isNull = sharedArray(Uint8Array, n)
  const { offsets, data, valid } = col
  for (let r = 0; r < n; r++) {
    if (valid !== null && valid[r] === 0) {
      isNull[r] = 1
      continue
    }
    hash[r] = mix(fnv1a(data, offsets[r], offsets[r + 1]))
  }
  return { hash, isNull }
}

function sameBytes(l: StringColumn, r: StringColumn): (i: number, j: number) => boolean {
  const lo = l.offsets
  const ld = l.data
  const lz = l.valid
  const ro = r.offsets
  const rd = r.data
  const rz = r.valid
  return (i, j) => {
    const s = lo[i]
    const len = lo[i + 1] - s
    const t = ro[j]
    if (ro[j + 1] - t !== len) return false
    for (let k = 0; k < len; k++) if (ld[s + k] !== rd[t + k]) return false
    return (lz === null || lz[i] === 1) && (rz === null || rz[j] === 1)
  }
}

/** 32-bit FNV-1a over bytes[from, to): the key hash of the join, of result files' key indexes and of exceptions' keys. */
export function fnv1a(bytes: Uint8Array, from: number, to: number): number {
  let h = 0x811c9dc5
  for (let i = from; i < to; i++) h = Math.imul(h ^ bytes[i], 0x01000193)
  return h >>> 0
}

/** A final avalanche so that the low bits, which pick the bucket, depend on every input bit. */
export function mix(h: number): number {
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  return (h ^ (h >>> 16)) >>> 0
}
