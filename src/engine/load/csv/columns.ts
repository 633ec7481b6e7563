// Typed columns filled straight from CSV bytes. A column starts with the type inferred from a
// sample and widens in place when a later value needs it (integer → decimal → float, a larger
// decimal scale, date → timestamp). A value that only fits a string column throws NeedsString;
// the loader then reads the file again with that column as string, so the result always equals
// inference over every value (the rules of ../infer.ts).
//
// A decimal column whose digits pass 15 is text by those rules unless some value is a float, and
// that value may come later: the column goes on as a "pending" float and throws NeedsString at
// finish() if no float ever arrives.

import type { Column } from '../../data/column.js'
import { classifyText, type ValueKind, widen } from '../infer.js'
import { sharedArray, sharedCopy } from '../../data/shared.js'
import type { ColumnInfo } from '../../data/types.js'
import { MAX_DECIMAL_DIGITS, MAX_DECIMAL_SCALE, POW10, parseDateOrTimestamp } from '../../data/values.js'
import { booleanAt, dateAt, NOT_A_DATE, SPACE, terminator } from './bytes.js'
import { type ColumnPart, mergedKind } from './part.js'
import type { FieldSink } from './tokenizer.js'

export class NeedsString extends Error {
  constructor(readonly columns: number[]) {
    super(`columns ${columns.join(', ')} must be read as text`)
  }
}

const DAY_MS = 86_400_000
const decoder = new TextDecoder()

const QUOTE = 0x22
const CR = 0x0d

export class CsvColumn implements FieldSink {
  kind: ValueKind
  scale = 0
  intDigits = 0
  length = 0
  nulls = 0
  /** float only because decimal digits overflowed: text unless a real float value turns up. */
  pendingFloat = false
  /** 1 = present; made at the first NULL, all ones before it (so present values write nothing). */
  private valid: Uint8Array | null = null
  private num: Float64Array = new Float64Array(0)
  private days: Int32Array = new Int32Array(0)
  private bool: Uint8Array = new Uint8Array(0)
  private offsets: Int32Array = new Int32Array(0)
  private data: Uint8Array = new Uint8Array(0)
  private size = 0
  // The number parseExact() read last: units (unsigned), sign, digits before and after the point.
  private units = 0
  private negative = false
  private intCount = 0
  private fracCount = 0

  /**
   * `capacity`: the rows expected; `textBytes`: the bytes a string column is expected to need
   * (from the sample). Both are estimates: the arrays grow when they are too small.
   */
  constructor(
    readonly index: number,
    kind: ValueKind,
    scale: number,
    private capacity: number,
    private readonly textBytes = 0,
  ) {
    this.kind = kind
    this.scale = kind === 'decimal' ? scale : 0
    this.allocate(kind)
  }

  private allocate(kind: ValueKind): void {
    const n = this.capacity
    if (kind === 'string') {
      this.offsets = sharedArray(Int32Array, n + 1)
      this.data = sharedArray(Uint8Array, Math.max(1024, this.textBytes || n * 8))
    } else if (kind === 'date') this.days = sharedArray(Int32Array, n)
    else if (kind === 'boolean') this.bool = sharedArray(Uint8Array, n)
    else this.num = sharedArray(Float64Array, n)
  }

  private grow(n = Math.ceil(this.capacity * 1.5) + 16): void {
    const grow = sharedCopy
    if (this.valid) {
      this.valid = grow(this.valid, n)
      this.valid.fill(1, this.length)
    }
    if (this.kind === 'string') this.offsets = grow(this.offsets, n + 1)
    else if (this.kind === 'date') this.days = grow(this.days, n)
    else if (this.kind === 'boolean') this.bool = grow(this.bool, n)
    else this.num = grow(this.num, n)
    this.capacity = n
  }

  private makeValid(): Uint8Array {
    this.valid = sharedArray(Uint8Array, this.capacity).fill(1)
    return this.valid
  }

  /** See FieldSink.take: the fast path for plain fields, by kind; the rest goes through append(). */
  take(buf: Buffer, p: number, end: number, stops: Uint8Array): number {
    if (p >= end || this.length === this.capacity) return -1
    const c = buf[p]
    if (stops[c] === 1) {
      if (c === QUOTE || c === CR) return -1
      this.putNull() // nothing before the delimiter or LF
      return p
    }
    switch (this.kind) {
      case 'string':
        return this.takeString(buf, p, end, stops)
      case 'integer':
      case 'decimal':
        return this.takeNumber(buf, p, end, stops)
      case 'date':
        return this.takeDate(buf, p, end, stops)
      default:
        return -1
    }
  }

  private takeString(buf: Buffer, p: number, end: number, stops: Uint8Array): number {
    if (SPACE[buf[p]] === 1 || buf[p] >= 0x80) return -1 // to trim
    // Copy while looking for the field's end; the bytes count only once the end is plain.
    const data = this.data
    let at = this.size
    const limit = p + Math.min(end - p, data.length - at)
    let q = p
    while (q < limit && stops[buf[q]] === 0) data[at++] = buf[q++]
    if (q === limit) return -1 // the chunk or the data array ends first
    const next = terminator(buf, q, end, stops)
    const last = buf[q - 1]
    if (next < 0 || SPACE[last] === 1 || last >= 0x80) return -1
    this.size = at
    this.offsets[this.length + 1] = at
    this.length++
    return next
  }

  private takeNumber(buf: Buffer, p: number, end: number, stops: Uint8Array): number {
    const q = this.parseExact(buf, p, end)
    const next = q < 0 ? -1 : terminator(buf, q, end, stops)
    if (next < 0) return -1
    this.storeExact(buf, p, q)
    this.length++
    return next
  }

  private takeDate(buf: Buffer, p: number, end: number, stops: Uint8Array): number {
    const next = terminator(buf, p + 10, end, stops)
    if (next < 0 || !this.appendDate(buf, p, p + 10)) return -1
    this.length++
    return next
  }

  truncate(length: number): void {
    const valid = this.valid
    if (valid) {
      for (let i = length; i < this.length; i++) {
        if (valid[i] === 0) this.nulls--
        valid[i] = 1 // rows past the end stay present until written
      }
    }
    if (this.kind === 'string') this.size = this.offsets[length]
    this.length = length
  }

  /** Appends the field buf[s, e); `escaped`: the field is quoted and holds doubled quotes. */
  append(buf: Buffer, s: number, e: number, escaped: boolean): void {
    if (this.length === this.capacity) this.grow()
    while (s < e && SPACE[buf[s]] === 1) s++
    while (e > s && SPACE[buf[e - 1]] === 1) e--
    if (escaped || (s < e && (buf[s] >= 0x80 || buf[e - 1] >= 0x80))) this.appendRare(buf, s, e, escaped)
    else this.put(buf, s, e)
  }

  /** Doubled quotes to undo, or non-ASCII edges that JS's trim may also remove: decode first. */
  private appendRare(buf: Buffer, s: number, e: number, escaped: boolean): void {
    let text = decoder.decode(buf.subarray(s, e))
    if (escaped) text = text.replace(/""/g, '"')
    const bytes = Buffer.from(text.trim()) // a Buffer, like the input: keeps the hot code monomorphic
    this.put(bytes, 0, bytes.length)
  }

  private putNull(): void {
    ;(this.valid ?? this.makeValid())[this.length] = 0
    if (this.kind === 'string') this.offsets[this.length + 1] = this.size
    this.nulls++
    this.length++
  }

  private put(buf: Buffer, s: number, e: number): void {
    if (s === e) return this.putNull()
    switch (this.kind) {
      case 'string':
        this.appendString(buf, s, e)
        break
      case 'integer':
      case 'decimal':
        if (!this.appendExact(buf, s, e)) this.slow(buf, s, e)
        break
      case 'date':
        if (!this.appendDate(buf, s, e)) this.slow(buf, s, e)
        break
      case 'boolean':
        if (!this.appendBoolean(buf, s, e)) this.slow(buf, s, e)
        break
      default:
        this.slow(buf, s, e)
    }
    this.length++
  }

  private appendString(buf: Buffer, s: number, e: number): void {
    const n = e - s
    if (this.size + n > this.data.length) {
      const d = sharedCopy(this.data.subarray(0, this.size), Math.max(this.data.length * 2, this.size + n))
      this.data = d
    }
    // A byte loop beats subarray() + set() for the short fields CSVs are made of.
    const data = this.data
    let at = this.size
    if (n < 64) for (let p = s; p < e; p++) data[at++] = buf[p]
    else {
      data.set(buf.subarray(s, e), at)
      at += n
    }
    this.size = at
    this.offsets[this.length + 1] = this.size
  }

  /** Plain -?digits[.digits] within the exactness limits; false sends the value to the slow path. */
  private appendExact(buf: Buffer, s: number, e: number): boolean {
    if (this.parseExact(buf, s, e) !== e) return false
    this.storeExact(buf, s, e)
    return true
  }

  /**
   * Reads -?digits[.digits] from buf[s] up to the first other byte (or `limit`) and returns
   * where it stopped; -1 when the number is not plain or passes the exactness limits.
   */
  private parseExact(buf: Buffer, s: number, limit: number): number {
    let p = s
    const neg = buf[p] === 0x2d
    if (neg || buf[p] === 0x2b) p++
    const intStart = p
    let units = 0
    let c = 0
    while (p < limit && (c = buf[p]) >= 0x30 && c <= 0x39) {
      units = units * 10 + (c - 0x30)
      p++
    }
    let intDigits = p - intStart
    if (intDigits === 0 || (intDigits > 1 && buf[intStart] === 0x30)) return -1
    let frac = 0
    if (p < limit && buf[p] === 0x2e) {
      const fracStart = ++p
      while (p < limit && (c = buf[p]) >= 0x30 && c <= 0x39) {
        units = units * 10 + (c - 0x30)
        p++
      }
      frac = p - fracStart
      if (frac === 0 || frac > MAX_DECIMAL_SCALE) return -1
    }
    if (intDigits === 1 && buf[intStart] === 0x30) intDigits = 0
    if (intDigits + frac > MAX_DECIMAL_DIGITS) return -1
    this.units = units
    this.negative = neg
    this.intCount = intDigits
    this.fracCount = frac
    return p
  }

  /** Stores the number parseExact() read from buf[s, e), widening the column as it must. */
  private storeExact(buf: Buffer, s: number, e: number): void {
    const frac = this.fracCount
    let units = this.units
    if (frac > this.scale || this.kind === 'integer') {
      if (frac > 0 || this.kind !== 'integer') {
        if (!this.setScale(Math.max(frac, this.scale))) return this.overflow(buf, s, e)
      }
    }
    if (this.intCount > this.intDigits) {
      this.intDigits = this.intCount
      if (this.kind === 'decimal' && this.intDigits + this.scale > MAX_DECIMAL_DIGITS) return this.overflow(buf, s, e)
    }
    if (frac < this.scale) units *= POW10[this.scale - frac]
    this.num[this.length] = this.negative && units !== 0 ? -units : units
  }

  /** Decimal digits past 15: go on as a pending float (see the top of this file). */
  private overflow(buf: Buffer, s: number, e: number): void {
    this.convert('float')
    this.pendingFloat = true
    this.num[this.length] = Number(decoder.decode(buf.subarray(s, e)))
  }

  /** integer → decimal, or a larger decimal scale: earlier units are multiplied exactly. */
  private setScale(scale: number): boolean {
    if (this.intDigits + scale > MAX_DECIMAL_DIGITS) return false
    const f = POW10[scale - this.scale]
    if (f !== 1) for (let i = 0; i < this.length; i++) this.num[i] *= f
    this.scale = scale
    this.kind = 'decimal'
    return true
  }

  private appendDate(buf: Buffer, s: number, e: number): boolean {
    const days = e - s === 10 ? dateAt(buf, s) : NOT_A_DATE
    if (days === NOT_A_DATE) return false
    this.days[this.length] = days
    return true
  }

  private appendBoolean(buf: Buffer, s: number, e: number): boolean {
    const b = booleanAt(buf, s, e)
    if (b < 0) return false
    this.bool[this.length] = b
    return true
  }

  /** Classifies the text, widens the column if it must, and stores the value. */
  private slow(buf: Buffer, s: number, e: number): void {
    const text = decoder.decode(buf.subarray(s, e))
    const c = classifyText(text)
    if (c.kind === 'float') this.pendingFloat = false
    const target = widen(this.kind, c.kind)
    if (target === 'string') {
      // Only a column with no value yet may become text here; any other must be read again.
      if (this.kind !== 'null') throw new NeedsString([this.index])
      this.kind = 'string'
      this.allocate('string')
      this.appendString(buf, s, e)
      return
    }
    if (target !== this.kind) this.convert(target)
    switch (this.kind) {
      case 'integer':
      case 'decimal':
        if (!this.appendExact(buf, s, e)) throw new NeedsString([this.index])
        return
      case 'float':
        this.num[this.length] = Number(text)
        return
      case 'date':
        if (!this.appendDate(buf, s, e)) throw new NeedsString([this.index])
        return
      case 'timestamp': {
        const ms = parseDateOrTimestamp(text)
        if (ms === null) throw new NeedsString([this.index])
        this.num[this.length] = ms
        return
      }
      case 'boolean':
        if (!this.appendBoolean(buf, s, e)) throw new NeedsString([this.index])
        return
      default:
        throw new NeedsString([this.index])
    }
  }

  /** Widens stored values in place: null → any, integer/decimal → float, date → timestamp. */
  private convert(target: ValueKind): void {
    const from = this.kind
    if (from === 'null') {
      this.kind = target
      this.allocate(target)
      return
    }
    if ((from === 'integer' || from === 'decimal') && target === 'decimal') return // appendExact rescales
    if ((from === 'integer' || from === 'decimal') && target === 'float') {
      const f = POW10[this.scale]
      for (let i = 0; i < this.length; i++) this.num[i] /= f
      this.scale = 0
      this.kind = 'float'
      return
    }
    if (from === 'date' && target === 'timestamp') {
      this.num = sharedArray(Float64Array, this.capacity)
      for (let i = 0; i < this.length; i++) this.num[i] = this.days[i] * DAY_MS
      this.kind = 'timestamp'
      return
    }
    throw new NeedsString([this.index])
  }

  info(name: string): ColumnInfo {
    const type = this.kind === 'null' ? 'string' : this.kind
    const info: ColumnInfo = { name, type, nullable: this.nulls > 0 }
    if (type === 'decimal') info.scale = this.scale
    return info
  }

  finish(): Column {
    if (this.pendingFloat) throw new NeedsString([this.index])
    const n = this.length
    const valid = this.valid && this.nulls > 0 ? fitted(this.valid, n) : null
    switch (this.kind) {
      case 'null':
        return {
          type: 'string',
          length: n,
          valid,
          offsets: sharedArray(Int32Array, n + 1),
          data: sharedArray(Uint8Array, 0),
        }
      case 'string':
        return {
          type: 'string',
          length: n,
          valid,
          offsets: fitted(this.offsets, n + 1),
          data: fitted(this.data, this.size),
        }
      case 'date':
        return { type: 'date', length: n, valid, values: fitted(this.days, n) }
      case 'boolean':
        return { type: 'boolean', length: n, valid, values: fitted(this.bool, n) }
      case 'decimal':
        return { type: 'decimal', length: n, valid, values: fitted(this.num, n), scale: this.scale }
      default:
        return { type: this.kind, length: n, valid, values: fitted(this.num, n) } as Column
    }
  }

  /** This column's rows as a part for another thread (see part.ts); the column is done after. */
  toPart(): ColumnPart {
    const k = this.kind
    return {
      kind: k,
      scale: this.scale,
      intDigits: this.intDigits,
      pendingFloat: this.pendingFloat,
      length: this.length,
      nulls: this.nulls,
      valid: this.valid && this.nulls > 0 ? this.valid : null,
      values: k === 'string' || k === 'null' ? null : k === 'date' ? this.days : k === 'boolean' ? this.bool : this.num,
      offsets: k === 'string' ? this.offsets : null,
      data: k === 'string' ? this.data.subarray(0, this.size) : null,
    }
  }

  /**
   * Appends the rows of the next part of the file, parsed by another thread from the same
   * sampled types: both sides widen to the type inference over all their values gives.
   */
  appendPart(p: ColumnPart): void {
    const merged = mergedKind(this, p)
    if (!merged) throw new NeedsString([this.index])
    const { kind: target, pendingFloat } = merged
    const at = this.length
    const n = at + p.length
    if (n > this.capacity) this.grow(n) // exactly once: the size is known
    // this side first: it may be narrower than the target
    if (target === 'decimal') {
      const scale = Math.max(this.scale, p.scale)
      if (this.kind === 'null') this.convert('decimal')
      this.kind = 'decimal'
      if (!this.setScale(scale)) throw new Error('unreachable: mergedKind checked the digits')
    } else if (target !== this.kind) this.convert(target)
    this.intDigits = Math.max(this.intDigits, p.intDigits)
    this.pendingFloat = pendingFloat
    if (p.valid) (this.valid ?? this.makeValid()).set(p.valid.subarray(0, p.length), at)
    this.nulls += p.nulls
    this.length = n
    if (p.kind === 'null') {
      if (target === 'string') this.offsets.fill(this.size, at + 1, n + 1)
      return
    }
    const values = p.values!
    switch (target) {
      case 'string': {
        const bytes = p.data!
        if (this.size + bytes.length > this.data.length) {
          this.data = sharedCopy(this.data.subarray(0, this.size), this.size + bytes.length)
        }
        this.data.set(bytes, this.size)
        const base = this.size
        for (let i = 1; i <= p.length; i++) this.offsets[at + i] = base + p.offsets![i]
        this.size += bytes.length
        return
      }
      case 'decimal': {
        const f = POW10[this.scale - p.scale]
        if (f === 1) this.num.set(values.subarray(0, p.length), at)
        else for (let i = 0; i < p.length; i++) this.num[at + i] = values[i] * f
        return
      }
      case 'float':
        if (p.kind === 'float') this.num.set(values.subarray(0, p.length), at)
        else {
          const f = POW10[p.scale]
          for (let i = 0; i < p.length; i++) this.num[at + i] = values[i] / f
        }
        return
      case 'timestamp':
        if (p.kind === 'timestamp') this.num.set(values.subarray(0, p.length), at)
        else for (let i = 0; i < p.length; i++) this.num[at + i] = values[i] * DAY_MS
        return
      case 'date':
        this.days.set(values.subarray(0, p.length), at)
        return
      case 'boolean':
        this.bool.set(values.subarray(0, p.length), at)
        return
      default:
        this.num.set(values.subarray(0, p.length), at)
    }
  }
}

/**
 * A view when the array is mostly filled, else a copy that lets the rest go. Capacity that was
 * never written costs address space, not memory: fresh typed arrays are zero pages until touched.
 */
function fitted<T extends Int32Array | Float64Array | Uint8Array>(a: T, len: number): T {
  return (len >= a.length * 0.75 ? a.subarray(0, len) : sharedCopy(a, len)) as T
}
