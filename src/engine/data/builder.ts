// Growable column builders: loaders append values one at a time (text, JS numbers, booleans)
// and get Arrow-layout columns back. Conversions go through values.ts so every loader agrees.

import { type Column, stringAt } from './column.js'
import type { ColumnInfo } from './types.js'
import { dateAt, NOT_A_DATE } from '../load/csv/bytes.js'
import {
  formatDate,
  formatDecimal,
  formatTimestamp,
  numberText,
  POW10,
  parseDate,
  parseDateOrTimestamp,
  parseDecimal,
  rescaleUnits,
} from './values.js'

const encoder = new TextEncoder()

/** A value that does not fit the column's type. Loaders turn it into a located, coded error. */
export class ValueTypeError extends Error {
  constructor(
    readonly column: string,
    readonly value: unknown,
    readonly expected: string,
  ) {
    super(`value ${JSON.stringify(value)} in column "${column}" is not a valid ${expected}`)
  }
}

export interface ColumnBuilder {
  readonly info: ColumnInfo
  readonly length: number
  /** Appends a value; null, undefined and empty/blank text are NULL. */
  append(v: unknown): void
  /**
   * Appends the UTF-8 text at buf[s, e), as `append` takes text: for a loader holding bytes
   * (COPY from PostgreSQL). Plain strings, numbers and ISO dates are read from the bytes
   * without a JS string in between; anything else goes through `append`.
   */
  appendBytes(buf: Buffer, s: number, e: number): void
  finish(): Column
}

abstract class BaseBuilder {
  length = 0
  protected valid: Uint8Array
  protected nulls = 0
  constructor(
    readonly info: ColumnInfo,
    protected capacity: number,
    /** Database values are kept as they are; text from files is trimmed and '' is NULL. */
    protected readonly exact = false,
  ) {
    this.valid = new Uint8Array(capacity)
  }

  protected grow(): void {
    this.capacity *= 2
    const v = new Uint8Array(this.capacity)
    v.set(this.valid)
    this.valid = v
    this.growValues(this.capacity)
  }

  protected abstract growValues(capacity: number): void

  abstract append(v: unknown): void

  appendBytes(buf: Buffer, s: number, e: number): void {
    this.append(buf.toString('utf8', s, e))
  }

  /** Makes room for one present value; the caller writes it and counts it. */
  protected present(): void {
    if (this.length === this.capacity) this.grow()
    this.valid[this.length] = 1
  }

  /** Returns the text to convert, or null after recording a NULL. */
  protected begin(v: unknown): unknown {
    if (this.length === this.capacity) this.grow()
    if (typeof v === 'string' && !this.exact) v = v.trim()
    if (v === null || v === undefined || (v === '' && !this.exact)) {
      this.nulls++
      this.length++
      return null
    }
    this.valid[this.length] = 1
    return v
  }

  protected validity(): Uint8Array | null {
    return this.nulls === 0 ? null : this.valid.slice(0, this.length)
  }

  protected fail(v: unknown): never {
    throw new ValueTypeError(this.info.name, v, this.info.type)
  }
}

class StringBuilder extends BaseBuilder implements ColumnBuilder {
  private offsets: Int32Array
  private data: Uint8Array
  private size = 0
  constructor(info: ColumnInfo, capacity: number, exact: boolean) {
    super(info, capacity, exact)
    this.offsets = new Int32Array(capacity + 1)
    this.data = new Uint8Array(capacity * 16)
  }
  protected growValues(capacity: number): void {
    const o = new Int32Array(capacity + 1)
    o.set(this.offsets)
    this.offsets = o
  }
  append(v: unknown): void {
    v = this.begin(v)
    if (v !== null) {
      const text = typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v)
      const bytes = encoder.encode(text)
      if (this.size + bytes.length > this.data.length) {
        const d = new Uint8Array(Math.max(this.data.length * 2, this.size + bytes.length))
        d.set(this.data.subarray(0, this.size))
        this.data = d
      }
      this.data.set(bytes, this.size)
      this.size += bytes.length
      this.length++
    }
    this.offsets[this.length] = this.size
  }
  override appendBytes(buf: Buffer, s: number, e: number): void {
    // text from files is trimmed and '' is NULL: that is append's to decide
    if (!this.exact) return super.appendBytes(buf, s, e)
    this.present()
    const n = e - s
    if (this.size + n > this.data.length) {
      const d = new Uint8Array(Math.max(this.data.length * 2, this.size + n))
      d.set(this.data.subarray(0, this.size))
      this.data = d
    }
    // a short value byte by byte: Buffer#copy's call into C++ costs more than copying a key or
    // a field (bench/exceptions-batch.ts: 473-601 ms a batch, 514-679 with copy; bench:pg's
    // scoped load: 451-483 ms, 549-572 with copy)
    if (n <= 64) for (let k = 0; k < n; k++) this.data[this.size + k] = buf[s + k]
    else buf.copy(this.data, this.size, s, e)
    this.size += n
    this.offsets[++this.length] = this.size
  }
  finish(): Column {
    return {
      type: 'string',
      length: this.length,
      valid: this.validity(),
      offsets: this.offsets.slice(0, this.length + 1),
      data: this.data.slice(0, this.size),
    }
  }
}

abstract class Float64Builder extends BaseBuilder {
  protected values: Float64Array
  constructor(info: ColumnInfo, capacity: number) {
    super(info, capacity)
    this.values = new Float64Array(capacity)
  }
  protected growValues(capacity: number): void {
    const v = new Float64Array(capacity)
    v.set(this.values)
    this.values = v
  }
}

class IntegerBuilder extends Float64Builder implements ColumnBuilder {
  append(v: unknown): void {
    v = this.begin(v)
    if (v === null) return
    const n = typeof v === 'number' ? v : typeof v === 'bigint' || typeof v === 'string' ? Number(v) : Number.NaN
    if (!Number.isSafeInteger(n) || (typeof v === 'string' && !/^[+-]?\d+$/.test(v))) this.fail(v)
    this.values[this.length++] = n
  }
  override appendBytes(buf: Buffer, s: number, e: number): void {
    const n = plainNumber(buf, s, e, false)
    if (n === null) return super.appendBytes(buf, s, e)
    this.present()
    this.values[this.length++] = n.units
  }
  finish(): Column {
    return { type: 'integer', length: this.length, valid: this.validity(), values: this.values.slice(0, this.length) }
  }
}

class FloatBuilder extends Float64Builder implements ColumnBuilder {
  append(v: unknown): void {
    v = this.begin(v)
    if (v === null) return
    const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : Number.NaN
    if (Number.isNaN(n) && !(typeof v === 'string' && /^nan$/i.test(v))) this.fail(v)
    this.values[this.length++] = n
  }
  finish(): Column {
    return { type: 'float', length: this.length, valid: this.validity(), values: this.values.slice(0, this.length) }
  }
}

class TimestampBuilder extends Float64Builder implements ColumnBuilder {
  append(v: unknown): void {
    v = this.begin(v)
    if (v === null) return
    const ms = v instanceof Date ? v.getTime() : typeof v === 'string' ? parseDateOrTimestamp(v) : null
    if (ms === null || Number.isNaN(ms)) this.fail(v)
    this.values[this.length++] = ms
  }
  finish(): Column {
    return { type: 'timestamp', length: this.length, valid: this.validity(), values: this.values.slice(0, this.length) }
  }
}

/**
 * Decimal units at the column's scale. When the scale is not known up front (PostgreSQL
 * `numeric` without a declared scale) it grows to the largest seen, rescaling earlier units.
 */
class DecimalBuilder extends Float64Builder implements ColumnBuilder {
  private scale: number
  private readonly fixedScale: boolean
  constructor(info: ColumnInfo, capacity: number) {
    super(info, capacity)
    this.fixedScale = info.scale !== undefined
    this.scale = info.scale ?? 0
  }
  append(v: unknown): void {
    v = this.begin(v)
    if (v === null) return
    const text = typeof v === 'number' ? numberText(v) : typeof v === 'string' ? v : null
    const d = text === null ? null : parseDecimal(text)
    if (d === null) this.fail(v)
    if (d.scale > this.scale) {
      if (this.fixedScale) this.fail(v)
      const f = POW10[d.scale - this.scale]
      for (let i = 0; i < this.length; i++) this.values[i] *= f
      this.scale = d.scale
    }
    const units = rescaleUnits(d, this.scale)
    if (!Number.isSafeInteger(units)) this.fail(v)
    this.values[this.length++] = units
  }
  override appendBytes(buf: Buffer, s: number, e: number): void {
    const n = plainNumber(buf, s, e, true)
    // more decimals than the column's scale: append rescales (or refuses) as for any text
    if (n === null || n.fracDigits > this.scale) return super.appendBytes(buf, s, e)
    const units = n.units * POW10[this.scale - n.fracDigits]
    if (!Number.isSafeInteger(units)) return super.appendBytes(buf, s, e)
    this.present()
    this.values[this.length++] = units
  }
  finish(): Column {
    return {
      type: 'decimal',
      length: this.length,
      valid: this.validity(),
      values: this.values.slice(0, this.length),
      scale: this.scale,
    }
  }
}

class DateBuilder extends BaseBuilder implements ColumnBuilder {
  private values: Int32Array
  constructor(info: ColumnInfo, capacity: number) {
    super(info, capacity)
    this.values = new Int32Array(capacity)
  }
  protected growValues(capacity: number): void {
    const v = new Int32Array(capacity)
    v.set(this.values)
    this.values = v
  }
  append(v: unknown): void {
    v = this.begin(v)
    if (v === null) return
    const days = typeof v === 'string' ? parseDate(v) : null
    if (days === null) this.fail(v)
    this.values[this.length++] = days
  }
  override appendBytes(buf: Buffer, s: number, e: number): void {
    const days = e - s === 10 ? dateAt(buf, s) : NOT_A_DATE
    if (days === NOT_A_DATE) return super.appendBytes(buf, s, e)
    this.present()
    this.values[this.length++] = days
  }
  finish(): Column {
    return { type: 'date', length: this.length, valid: this.validity(), values: this.values.slice(0, this.length) }
  }
}

class BooleanBuilder extends BaseBuilder implements ColumnBuilder {
  private values: Uint8Array
  constructor(info: ColumnInfo, capacity: number) {
    super(info, capacity)
    this.values = new Uint8Array(capacity)
  }
  protected growValues(capacity: number): void {
    const v = new Uint8Array(capacity)
    v.set(this.values)
    this.values = v
  }
  append(v: unknown): void {
    v = this.begin(v)
    if (v === null) return
    let b: boolean
    if (typeof v === 'boolean') b = v
    else if (typeof v === 'string' && /^(true|false)$/i.test(v)) b = v.toLowerCase() === 'true'
    else this.fail(v)
    this.values[this.length++] = b ? 1 : 0
  }
  finish(): Column {
    return { type: 'boolean', length: this.length, valid: this.validity(), values: this.values.slice(0, this.length) }
  }
}

/**
 * `-?digits(.digits)?` at buf[s, e) with at most 15 digits (so exact in a double) as units of
 * its own decimals: 12.50 is { units: 1250, fracDigits: 2 }. Null for anything else.
 */
function plainNumber(
  buf: Buffer,
  s: number,
  e: number,
  point: boolean,
): { units: number; fracDigits: number } | null {
  let p = s
  const negative = buf[p] === 0x2d
  if (negative) p++
  let units = 0
  let digits = 0
  let fracDigits = -1
  for (; p < e; p++) {
    const c = buf[p]
    if (c === 0x2e && point && fracDigits < 0) {
      fracDigits = 0
      continue
    }
    const d = c - 0x30
    if (d < 0 || d > 9) return null
    units = units * 10 + d
    digits++
    if (fracDigits >= 0) fracDigits++
  }
  if (digits === 0 || digits > 15 || fracDigits === 0) return null
  return { units: negative && units !== 0 ? -units : units, fracDigits: Math.max(fracDigits, 0) }
}

/**
 * A builder for one column. `exact` (database sources): strings are kept as sent, surrounding
 * spaces and the empty string included; otherwise (files) text is trimmed and empty is NULL.
 */
export function columnBuilder(info: ColumnInfo, capacity = 1024, exact = false): ColumnBuilder {
  switch (info.type) {
    case 'string':
      return new StringBuilder(info, capacity, exact)
    case 'integer':
      return new IntegerBuilder(info, capacity)
    case 'float':
      return new FloatBuilder(info, capacity)
    case 'decimal':
      return new DecimalBuilder(info, capacity)
    case 'date':
      return new DateBuilder(info, capacity)
    case 'timestamp':
      return new TimestampBuilder(info, capacity)
    case 'boolean':
      return new BooleanBuilder(info, capacity)
  }
}

/** The JSON form of a stored value: decimals as exact strings, dates as YYYY-MM-DD, timestamps ISO. */
export function jsonValue(col: Column, row: number): string | number | boolean | null {
  if (col.valid !== null && col.valid[row] === 0) return null
  switch (col.type) {
    case 'string':
      return stringAt(col, row)
    case 'integer':
    case 'float':
      return col.values[row]
    case 'decimal':
      return formatDecimal(col.values[row], col.scale)
    case 'date':
      return formatDate(col.values[row])
    case 'timestamp':
      return formatTimestamp(col.values[row])
    case 'boolean':
      return col.values[row] === 1
  }
}
