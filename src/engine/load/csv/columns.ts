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
  /** The room left to a part parsed on another thread, until it is joined (reserveTail). */
  private tail: Tail | null = null

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
    /** A part's room in the loader's own arrays (reserveTail), filled instead of arrays of its own. */
    private readonly placement: Placement | null = null,
  ) {
    this.kind = kind
    this.scale = kind === 'decimal' ? scale : 0
    if (placement) this.place(placement)
    else this.allocate(kind)
  }

  private place(at: Placement): void {
    if (at.offsets && at.data) {
      this.offsets = at.offsets
      this.data = at.data
      this.capacity = at.offsets.length - 1
    } else if (at.values instanceof Int32Array) this.days = at.values
    else if (at.values instanceof Float64Array) this.num = at.values
    else if (at.values) this.bool = at.values
    if (at.values) this.capacity = at.values.length
  }

  /** Whether the part's rows are still where reserveTail put them (growing or widening moves them). */
  private stillPlaced(): boolean {
    const at = this.placement
    if (!at) return false
    if (this.kind === 'string') return this.offsets === at.offsets && this.data === at.data
    return this.kind === 'date'
      ? this.days === at.values
      : this.kind === 'boolean'
        ? this.bool === at.values
        : this.num === at.values
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

  /** Joins a part that sits in this column's reserved room (reserveTail), moved down to follow this thread's rows. */
  private moveDown(p: ColumnPart, tail: Tail, pendingFloat: boolean): void {
    const at = this.length
    this.intDigits = Math.max(this.intDigits, p.intDigits)
    this.pendingFloat = pendingFloat
    if (p.valid) (this.valid ?? this.makeValid()).set(p.valid.subarray(0, p.length), at)
    this.nulls += p.nulls
    this.length = at + p.length
    if (this.kind === 'string') {
      const bytes = p.data!.length
      if (this.size !== tail.bytes) this.data.copyWithin(this.size, tail.bytes, tail.bytes + bytes)
      // the part's offsets are read from the room they are written over, always ahead of the writes
      const from = p.offsets!
      const base = this.size
      for (let i = 1; i <= p.length; i++) this.offsets[at + i] = base + from[i]
      this.size += bytes
    } else if (at !== tail.rows) this.valuesArray()!.copyWithin(at, tail.rows, tail.rows + p.length)
  }

  /** Gives back the room reserveTail left to a part that will not come (the worker did not take it). */
  unreserve(): void {
    this.releaseTail()
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
      placed: this.stillPlaced(),
    }
  }

  /**
   * Leaves the room of this column's arrays from row `rows` on (for text, from the same share of
   * its bytes) to the part another thread parses from the file's split (index.ts): this thread's
   * rows stop short of it, and appendPart joins the part by moving it down within memory already
   * written, instead of copying it into fresh memory (the arrays are sized for the whole file: a
   * first write to a page is what costs, see docs/ARCHITECTURE.md, "memory"). Null when there is
   * no such room: another kind than the part starts with, or too little space either side. A
   * column that outgrows its share (either side) moves to arrays of its own, and the part is then
   * copied as it would have been.
   */
  reserveTail(kind: ValueKind, rows: number): Placement | null {
    if (this.tail || this.kind !== kind || rows <= this.length + 1 || rows + 2 >= this.capacity) return null
    const full = { offsets: this.offsets, data: this.data, values: this.valuesArray() }
    let at: Placement
    if (kind === 'string') {
      const bytes = Math.floor((this.data.length * rows) / this.capacity)
      if (bytes <= this.size || bytes >= this.data.length) return null
      at = { offsets: this.offsets.subarray(rows + 1), data: this.data.subarray(bytes) }
      this.offsets = this.offsets.subarray(0, rows + 1)
      this.data = this.data.subarray(0, bytes)
      this.tail = { rows, bytes, capacity: this.capacity, full, own: { offsets: this.offsets, data: this.data } }
    } else {
      if (!full.values) return null
      at = { values: full.values.subarray(rows) }
      const own = full.values.subarray(0, rows)
      this.setValuesArray(own)
      this.tail = { rows, bytes: 0, capacity: this.capacity, full, own: { values: own } }
    }
    this.capacity = rows
    return at
  }

  private valuesArray(): Float64Array | Int32Array | Uint8Array | null {
    switch (this.kind) {
      case 'string':
      case 'null':
        return null
      case 'date':
        return this.days
      case 'boolean':
        return this.bool
      default:
        return this.num
    }
  }

  private setValuesArray(a: Float64Array | Int32Array | Uint8Array): void {
    if (a instanceof Int32Array) this.days = a
    else if (a instanceof Float64Array) this.num = a
    else this.bool = a
  }

  /**
   * Ends a reserveTail: true when this thread's rows are still in the arrays it reserved from,
   * which are whole again (valid grown to match); false when it moved to arrays of its own.
   */
  private releaseTail(): Tail | null {
    const tail = this.tail
    this.tail = null
    if (!tail) return null
    const own = tail.own
    const kept =
      this.kind === 'string'
        ? this.offsets === own.offsets && this.data === own.data
        : own.values !== undefined && this.valuesArray() === own.values
    if (!kept) return null
    if (this.kind === 'string') {
      this.offsets = tail.full.offsets
      this.data = tail.full.data
    } else this.setValuesArray(tail.full.values!)
    this.capacity = tail.capacity
    if (this.valid && this.valid.length < this.capacity) {
      const n = this.valid.length
      this.valid = sharedCopy(this.valid, this.capacity)
      this.valid.fill(1, n)
    }
    return tail
  }

  /**
   * Appends the rows of the next part of the file, parsed by another thread from the same
   * sampled types: both sides widen to the type inference over all their values gives. True when
   * the part was moved within the column's arrays (reserveTail), false when it was copied.
   */
  appendPart(p: ColumnPart): boolean {
    const tail = this.releaseTail()
    const merged = mergedKind(this, p)
    if (!merged) throw new NeedsString([this.index])
    const { kind: target, pendingFloat } = merged
    if (tail && p.placed && target === this.kind && p.kind === target && p.scale === this.scale) {
      this.moveDown(p, tail, pendingFloat)
      return true
    }
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
      return false
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
        return false
      }
      case 'decimal': {
        const f = POW10[this.scale - p.scale]
        if (f === 1) this.num.set(values.subarray(0, p.length), at)
        else for (let i = 0; i < p.length; i++) this.num[at + i] = values[i] * f
        return false
      }
      case 'float':
        if (p.kind === 'float') this.num.set(values.subarray(0, p.length), at)
        else {
          const f = POW10[p.scale]
          for (let i = 0; i < p.length; i++) this.num[at + i] = values[i] / f
        }
        return false
      case 'timestamp':
        if (p.kind === 'timestamp') this.num.set(values.subarray(0, p.length), at)
        else for (let i = 0; i < p.length; i++) this.num[at + i] = values[i] * DAY_MS
        return false
      case 'date':
        this.days.set(values.subarray(0, p.length), at)
        return false
      case 'boolean':
        this.bool.set(values.subarray(0, p.length), at)
        return false
      default:
        this.num.set(values.subarray(0, p.length), at)
        return false
    }
  }
}

/** Where a part parsed on another thread writes its rows: views of the loader's arrays (reserveTail). */
export interface Placement {
  values?: Float64Array | Int32Array | Uint8Array
  offsets?: Int32Array
  data?: Uint8Array
}

/** A column's reserved room: where it starts, and the whole arrays and this thread's share of them. */
interface Tail {
  rows: number
  bytes: number
  capacity: number
  full: { offsets: Int32Array; data: Uint8Array; values: Float64Array | Int32Array | Uint8Array | null }
  own: { offsets?: Int32Array; data?: Uint8Array; values?: Float64Array | Int32Array | Uint8Array }
}

/**
 * A view when the array is mostly filled, else a copy that lets the rest go. Capacity that was
 * never written costs address space, not memory: fresh typed arrays are zero pages until touched.
 */
function fitted<T extends Int32Array | Float64Array | Uint8Array>(a: T, len: number): T {
  return (len >= a.length * 0.75 ? a.subarray(0, len) : sharedCopy(a, len)) as T
}
