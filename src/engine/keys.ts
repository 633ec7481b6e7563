// Join keys for the hash join: every row's key is hashed once per pass into a Uint32Array, and an
// equality test confirms a hash hit. A plain string column is hashed and compared on its UTF-8
// bytes in place (decoding a million values into JS strings and hashing them in a Map costs more
// than the whole join); numbers, dates and computed keys (UPPER(TRIM(l.ref))) are evaluated once
// per row by the compiled expression. Equal keys compare equal exactly as the predicate's `=`
// does: bytes for strings (the C collation), a common scale for decimals, NULL never equal.

import type { Expr } from '../recipes/predicate.js'
import type { Column, StringColumn } from './column.js'
import type { ExprCompiler } from './compile.js'
import type { KeyPair } from './plan.js'
import type { Table } from './table.js'

/** One side's keys: a hash per row and which rows have a NULL key part (they never join). */
export interface SideKeys {
  hash: Uint32Array
  isNull: Uint8Array
}

export interface JoinKeys {
  left: SideKeys
  right: SideKeys
  /** True when left row i and right row j have equal keys (all parts). */
  equal: (i: number, j: number) => boolean
}

interface KeyPart {
  left: SideKeys
  right: SideKeys
  equal: (i: number, j: number) => boolean
}

export function joinKeys(keys: KeyPair[], compiler: ExprCompiler, tables: { l: Table; r: Table }): JoinKeys {
  const parts = keys.map((k) => keyPart(k, compiler, tables))
  if (parts.length === 1) return parts[0]
  const combine = (side: 'left' | 'right'): SideKeys => {
    const n = parts[0][side].hash.length
    const hash = new Uint32Array(n)
    const isNull = new Uint8Array(n)
    for (const p of parts) {
      const h = p[side].hash
      const z = p[side].isNull
      for (let r = 0; r < n; r++) {
        hash[r] = Math.imul(hash[r] ^ h[r], 0x01000193) ^ (hash[r] >>> 15)
        isNull[r] |= z[r]
      }
    }
    return { hash, isNull }
  }
  const equals = parts.map((p) => p.equal)
  return {
    left: combine('left'),
    right: combine('right'),
    equal: (i, j) => {
      for (let k = 0; k < equals.length; k++) if (!equals[k](i, j)) return false
      return true
    },
  }
}

function plainColumn(e: Expr, table: Table): Column | undefined {
  if (e.kind !== 'column') return undefined
  const n = table.columns.findIndex((c) => c.name === e.name)
  return n < 0 ? undefined : table.data[n]
}

function keyPart(k: KeyPair, compiler: ExprCompiler, tables: { l: Table; r: Table }): KeyPart {
  const lc = plainColumn(k.left, tables.l)
  const rc = plainColumn(k.right, tables.r)
  if (lc?.type === 'string' && rc?.type === 'string') return stringColumnsPart(lc, rc)
  const [l, r, common] = compiler.operands(k.left, k.right)
  if (common.kind === 'string') {
    const lv = evaluate(compiler.build<(i: number) => string | null>('i', l.code), tables.l.length)
    const rv = evaluate(compiler.build<(j: number) => string | null>('j', r.code), tables.r.length)
    return { left: hashStrings(lv), right: hashStrings(rv), equal: (i, j) => lv[i] === rv[j] }
  }
  // numbers, decimal units at the common scale, days, milliseconds, booleans
  const lv = numbers(compiler.build<(i: number) => number | boolean | null>('i', l.code), tables.l.length)
  const rv = numbers(compiler.build<(j: number) => number | boolean | null>('j', r.code), tables.r.length)
  const lvals = lv.values
  const rvals = rv.values
  return { left: lv.keys, right: rv.keys, equal: (i, j) => lvals[i] === rvals[j] }
}

function evaluate<T>(fn: (row: number) => T, n: number): T[] {
  const out = new Array<T>(n)
  for (let r = 0; r < n; r++) out[r] = fn(r)
  return out
}

const f64 = new Float64Array(1)
const u32 = new Uint32Array(f64.buffer)

function numbers(fn: (row: number) => number | boolean | null, n: number): { keys: SideKeys; values: Float64Array } {
  const values = new Float64Array(n)
  const hash = new Uint32Array(n)
  const isNull = new Uint8Array(n)
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
  const hash = new Uint32Array(n)
  const isNull = new Uint8Array(n)
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

function hashBytes(col: StringColumn): SideKeys {
  const n = col.length
  const hash = new Uint32Array(n)
  const isNull = new Uint8Array(n)
  const { offsets, data, valid } = col
  for (let r = 0; r < n; r++) {
    if (valid !== null && valid[r] === 0) {
      isNull[r] = 1
      continue
    }
    let h = 0x811c9dc5
    for (let p = offsets[r], e = offsets[r + 1]; p < e; p++) h = Math.imul(h ^ data[p], 0x01000193)
    hash[r] = mix(h)
  }
  return { hash, isNull }
}

function stringColumnsPart(l: StringColumn, r: StringColumn): KeyPart {
  const lo = l.offsets
  const ld = l.data
  const ro = r.offsets
  const rd = r.data
  return {
    left: hashBytes(l),
    right: hashBytes(r),
    equal: (i, j) => {
      const s = lo[i]
      const len = lo[i + 1] - s
      const t = ro[j]
      if (ro[j + 1] - t !== len) return false
      for (let k = 0; k < len; k++) if (ld[s + k] !== rd[t + k]) return false
      return true
    },
  }
}

/** A final avalanche so that the low bits, which pick the bucket, depend on every input bit. */
function mix(h: number): number {
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  return (h ^ (h >>> 16)) >>> 0
}

/**
 * Hash join of the listed rows: calls `onPair(i, j)` for every left row i and right row j with
 * equal keys, in left-row order and, for one left row, in right-row order.
 */
export function hashJoin(
  keys: JoinKeys,
  leftRows: Int32Array,
  rightRows: Int32Array,
  onPair: (i: number, j: number) => void,
): void {
  const { hash: lh, isNull: lz } = keys.left
  const { hash: rh, isNull: rz } = keys.right
  let cap = 16
  while (cap < rightRows.length * 2) cap *= 2
  const mask = cap - 1
  const heads = new Int32Array(cap).fill(-1)
  const next = new Int32Array(rightRows.length)
  // inserted back to front, so each chain lists its rows in ascending order
  for (let n = rightRows.length - 1; n >= 0; n--) {
    const j = rightRows[n]
    if (rz[j]) continue
    const slot = rh[j] & mask
    next[n] = heads[slot]
    heads[slot] = n
  }
  const equal = keys.equal
  for (let m = 0; m < leftRows.length; m++) {
    const i = leftRows[m]
    if (lz[i]) continue
    const h = lh[i]
    for (let n = heads[h & mask]; n >= 0; n = next[n]) {
      const j = rightRows[n]
      if (rh[j] === h && equal(i, j)) onPair(i, j)
    }
  }
}
