// CSV from a run's result tables, encoded in batches straight from the Arrow columns' buffers into
// bytes: strings are copied from their UTF-8 bytes, decimals and dates written digit by digit,
// dictionary columns (pass, pattern) and the unmatched records' reasons from bytes prepared once
// per distinct value. Reading each cell through Arrow's `get()` and building JS strings took 9 s
// for the three CSV files of a 1M-row run; this writes them in well under a second (bench/README.md).
// The same encoder serves `concord reconcile --out` (from the tables in memory) and the service's
// exports (from the stored files, batch by batch, on a worker thread: export-worker.ts).
//
// Field rules (as before): NULL is an empty field; a field holding a quote, comma, CR or LF, or
// starting or ending with whitespace, is quoted with quotes doubled; lists are joined with ';'.

import { isAscii } from 'node:buffer'
import { type Data, DataType, type Field, makeVector, type RecordBatch, type Schema, type Vector } from 'apache-arrow'
import { describeUnmatched, matchWeights, type MatchWeights, type PassInfo } from '../engine/explain/evidence.js'
import { isStringView } from '../engine/data/arrow.js'
import { civilDate, formatDate, formatTimestamp } from '../engine/data/values.js'
import type { ResultSet } from './results.js'

const QUOTE = 0x22
const COMMA = 0x2c
const LF = 0x0a
const CR = 0x0d
const SEMICOLON = 0x3b

/** Bytes that force a field into quotes. */
const SPECIAL = new Uint8Array(256)
for (const c of [QUOTE, COMMA, LF, CR]) SPECIAL[c] = 1
/** ASCII whitespace as String.prototype.trim sees it. */
const ASCII_SPACE = new Uint8Array(256)
for (const c of [0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20]) ASCII_SPACE[c] = 1

const utf8 = new TextDecoder()
const encoder = new TextEncoder()

/**
 * Whether a whole UTF-8 buffer is free of the bytes that force quotes and of non-ASCII bytes
 * (whose edge whitespace would need decoding). Checked once per buffer — a loaded column, or a
 * stored file's batch, which every slice of it shares — so each of its fields only needs its two
 * edge bytes looked at before it is copied: checking every byte of every field took as long as
 * copying it.
 */
const cleanBuffers = new WeakMap<Uint8Array, boolean>()
function plainBytes(bytes: Uint8Array): boolean {
  let clean = cleanBuffers.get(bytes)
  if (clean === undefined) {
    clean = scanPlain(bytes)
    cleanBuffers.set(bytes, clean)
  }
  return clean
}

/**
 * No byte >= 0x80 and none of `"` `,` LF CR, checked by native code: `isAscii` (simdutf) and one
 * `indexOf` (memchr) per byte value. A word-at-a-time JavaScript loop took ~53 ms on 46 MB, this
 * ~17 ms, and a set's file scans every string column it shows, whole (all loaded rows, not only
 * the set's).
 */
function scanPlain(bytes: Uint8Array): boolean {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length)
  return isAscii(b) && b.indexOf(QUOTE) < 0 && b.indexOf(COMMA) < 0 && b.indexOf(LF) < 0 && b.indexOf(CR) < 0
}

/** Whether a field's bytes must be quoted. */
function needsQuotes(src: Uint8Array, from: number, to: number): boolean {
  if (from === to) return false
  for (let i = from; i < to; i++) if (SPECIAL[src[i]] === 1) return true
  const first = src[from]
  const last = src[to - 1]
  if (ASCII_SPACE[first] === 1 || ASCII_SPACE[last] === 1) return true
  // non-ASCII at an edge: whitespace such as U+00A0 or U+3000 counts too (rare, so decoded)
  if (first >= 0x80 || last >= 0x80) {
    const s = utf8.decode(src.subarray(from, to))
    return s !== s.trim()
  }
  return false
}

/**
 * An output buffer that hands out full chunks; a chunk is at least `chunkBytes` unless it is the
 * last. With `emit`, each chunk is passed to it and the buffer is reused (the chunk is valid only
 * during the call): writing 150 MB through fresh buffers cost more in page faults than encoding.
 */
class Sink {
  private buf: Uint8Array
  at = 0
  readonly full: Uint8Array[] = []

  /** `size`: the first buffer's; it doubles as needed (an export slice may be a few kilobytes). */
  constructor(
    size = 256,
    private readonly emit?: (chunk: Uint8Array) => void,
    private readonly chunkBytes = CHUNK,
  ) {
    this.buf = new Uint8Array(size)
  }

  ensure(n: number): void {
    if (this.at + n <= this.buf.length) return
    const bigger = new Uint8Array(Math.max(this.buf.length * 2, this.at + n))
    bigger.set(this.buf.subarray(0, this.at))
    this.buf = bigger
  }

  /** Row boundary: moves the written bytes out as a chunk once there are enough. */
  endRow(): void {
    this.buf[this.at++] = LF
    if (this.at >= this.chunkBytes) this.cut()
  }

  /** The bytes written so far (a view, valid until the next write). */
  bytes(): Uint8Array {
    return this.buf.subarray(0, this.at)
  }

  cut(): void {
    if (this.at === 0) return
    if (this.emit) {
      this.emit(this.buf.subarray(0, this.at))
      this.at = 0
      return
    }
    // the buffer itself goes out: a fresh one is cheaper than copying a megabyte
    this.full.push(this.buf.subarray(0, this.at))
    this.buf = new Uint8Array(this.buf.length)
    this.at = 0
  }

  byte(c: number): void {
    this.ensure(1)
    this.buf[this.at++] = c
  }

  raw(src: Uint8Array, from = 0, to = src.length): void {
    const n = to - from
    this.ensure(n)
    if (n < 32) {
      // short values (names, keys) copy faster by hand than through subarray() and set()
      const buf = this.buf
      let at = this.at
      for (let i = from; i < to; i++) buf[at++] = src[i]
      this.at = at
      return
    }
    // a whole array (a reason's words) is copied as it is: subarray() would allocate a view
    this.buf.set(from === 0 && to === src.length ? src : src.subarray(from, to), this.at)
    this.at += n
  }

  /** A float as `float` writes it, copied when it is the value `cache` last saw (scores, day counts). */
  cachedFloat(v: number, cache: FloatCache): void {
    if (v === cache.value) return this.raw(cache.bytes, 0, cache.length)
    const at = this.at
    this.float(v)
    const n = this.at - at
    if (n > cache.bytes.length) return
    const { buf } = this
    for (let j = 0; j < n; j++) cache.bytes[j] = buf[at + j]
    cache.length = n
    // 0 and -0 are both written "0", so `===` (which equates them) is the right test
    cache.value = v
  }

  /**
   * A float as String() writes it. Scores and day counts (at most six decimals, in 1e-6 … 2^32)
   * are written digit by digit: String() of a million floats took ~0.2 s. Below 2^32 a double's
   * ulp is under 10^-6, so when v is the double nearest n / 10^6, that decimal (trailing zeros
   * dropped) is the only one of six decimals or fewer naming v — the shortest that round-trips,
   * which is what String() prints; fixed notation holds from 1e-6 up.
   */
  float(v: number): void {
    const a = Math.abs(v)
    if (a === 0 || (a >= 1e-6 && a < 4294967296)) {
      const n = Math.round(a * 1e6)
      if (n / 1e6 === a && Object.is(v, -0) === false) {
        this.ensure(32)
        if (v < 0) this.buf[this.at++] = 0x2d
        const whole = Math.floor(n / 1e6)
        let fraction = n - whole * 1e6
        this.digits(whole, 1)
        if (fraction > 0) {
          let width = 6
          while (fraction % 10 === 0) {
            fraction /= 10
            width--
          }
          this.buf[this.at++] = 0x2e
          this.digits(fraction, width)
        }
        return
      }
    }
    this.ascii(String(v))
  }

  /** ASCII text (numbers) as it is: no quoting needed. */
  ascii(s: string): void {
    const n = s.length
    this.ensure(n)
    const buf = this.buf
    let at = this.at
    for (let i = 0; i < n; i++) buf[at++] = s.charCodeAt(i)
    this.at = at
  }

  /** A field from UTF-8 bytes, quoted when it must be. */
  field(src: Uint8Array, from: number, to: number): void {
    if (!needsQuotes(src, from, to)) return this.raw(src, from, to)
    this.ensure(2 * (to - from) + 2)
    const buf = this.buf
    let at = this.at
    buf[at++] = QUOTE
    for (let i = from; i < to; i++) {
      const c = src[i]
      if (c === QUOTE) buf[at++] = QUOTE
      buf[at++] = c
    }
    buf[at++] = QUOTE
    this.at = at
  }

  /**
   * Quotes the field written since `from` when whitespace begins or ends it; its bytes are of
   * plain buffers (no quote to double), so it is moved one place right between two quotes.
   */
  quoteIfEdgeSpace(from: number): void {
    const to = this.at
    if (from === to || (ASCII_SPACE[this.buf[from]] !== 1 && ASCII_SPACE[this.buf[to - 1]] !== 1)) return
    this.ensure(2)
    this.buf.copyWithin(from + 1, from, to)
    this.buf[from] = QUOTE
    this.buf[to + 1] = QUOTE
    this.at = to + 2
  }

  /** A field from bytes of a plain buffer (plainBytes): quoted only for whitespace at an edge. */
  plainField(src: Uint8Array, from: number, to: number): void {
    if (from < to && (ASCII_SPACE[src[from]] === 1 || ASCII_SPACE[src[to - 1]] === 1)) return this.field(src, from, to)
    this.raw(src, from, to)
  }

  /** A field from a JS string. */
  text(s: string): void {
    const bytes = encoder.encode(s)
    this.field(bytes, 0, bytes.length)
  }

  /** An integer's digits (|v| < 2^53). */
  integer(v: number): void {
    this.ensure(24)
    if (v < 0) {
      this.buf[this.at++] = 0x2d
      v = -v
    }
    this.digits(v, 1)
  }

  /** At least `width` digits of a non-negative integer, zero-padded. */
  digits(v: number, width: number): void {
    this.ensure(Math.max(width, 17))
    let n = 1
    for (let p = 10; p <= v && n < 17; p *= 10) n++
    if (v >= 1e16) n = String(v).length
    n = Math.max(n, width)
    const buf = this.buf
    // two digits per division (most amounts have six to eight)
    let i = this.at + n - 1
    for (; i > this.at; i -= 2) {
      const q = Math.floor(v / 100)
      const pair = (v - q * 100) * 2
      buf[i] = DIGIT_PAIRS[pair + 1]
      buf[i - 1] = DIGIT_PAIRS[pair]
      v = q
    }
    if (i === this.at) buf[i] = 0x30 + (v % 10)
    this.at += n
  }

  /** Scaled units as a decimal with `scale` places, as formatDecimal writes them. */
  decimal(units: number, scale: number): void {
    if (scale === 0) return this.integer(units)
    this.ensure(24 + scale)
    if (units < 0) {
      this.buf[this.at++] = 0x2d
      units = -units
    }
    const p = POW10[scale]
    const whole = Math.floor(units / p)
    this.digits(whole, 1)
    this.buf[this.at++] = 0x2e
    this.digits(units - whole * p, scale)
  }

  /** Days since the epoch as YYYY-MM-DD (years 0-9999; others as formatDate writes them). */
  date(days: number): void {
    // a file's dates are a few hundred distinct days: each is spelled once, then copied
    const k = days - DATE_BASE
    if (k >= 0 && k < DATE_SPAN && k === Math.floor(k)) {
      const text = dateText()
      const from = k * 10
      if (text[from] === 0) {
        const at = this.at
        this.spellDate(days)
        if (this.at - at === 10) text.set(this.buf.subarray(at, at + 10), from)
        return
      }
      this.ensure(10)
      const buf = this.buf
      const at = this.at
      for (let j = 0; j < 10; j++) buf[at + j] = text[from + j]
      this.at = at + 10
      return
    }
    this.spellDate(days)
  }

  private spellDate(days: number): void {
    const ymd = civilDate(days)
    if (ymd < 0) return this.text(formatDate(days))
    this.ensure(10)
    this.digits(Math.floor(ymd / 10000), 4)
    this.buf[this.at++] = 0x2d
    this.digits(Math.floor(ymd / 100) % 100, 2)
    this.buf[this.at++] = 0x2d
    this.digits(ymd % 100, 2)
  }
}

const CHUNK = 1 << 20
/** "00" to "99", two bytes each. */
const DIGIT_PAIRS = Uint8Array.from(
  { length: 200 },
  (_, k) => 0x30 + (k % 2 ? (k >> 1) % 10 : Math.floor((k >> 1) / 10)),
)
/** Dates spelled once each: days since 1900-01-01, for 2^17 days (to 2258). */
const DATE_BASE = -25_567
const DATE_SPAN = 1 << 17
let dateTable: Uint8Array | null = null
/** Ten bytes per day, zero until first written (a year's first byte is never 0). */
const dateText = () => (dateTable ??= new Uint8Array(DATE_SPAN * 10))

/** The last float a column wrote, and its bytes. */
class FloatCache {
  value = Number.NaN
  length = 0
  readonly bytes = new Uint8Array(32)
}
const POW10 = Array.from({ length: 19 }, (_, k) => 10 ** k)
const TRUE = encoder.encode('true')
const FALSE = encoder.encode('false')

/**
 * Writes row `i` (within the batch) of one column. A sliced Data's value and offset buffers start
 * at the slice (Arrow slices them); its bitmaps do not, so bits are read at `data.offset + i`.
 * A cell that reads values in another order than the rows (views: see Gather) has `prepare`,
 * called with each block of rows before they are written.
 */
type Cell = ((sink: Sink, i: number) => void) & { prepare?: (start: number, end: number) => void }

/** Rows written a block at a time: a block's gathered offsets and touched bytes stay in cache. */
const BLOCK = 1024

/**
 * Where the values of a block of rows lie in a string column read through row numbers (a view's
 * `rows`: the keys of the other side, in hash or match order, not in the column's order). Each
 * value costs a cache miss or two; read as each row is written, every miss waits alone (the right
 * keys of a million matches: ~0.3 s of a ~0.6 s file). Gathered first in tight loops, the
 * offsets and then one byte of each value, the misses are independent and the processor overlaps
 * them (~2.5× faster in a scratch test of 750,000 random keys); writing the rows then reads cache.
 * A row whose value is not a single string (a NULL, a list of several) gets from = to = -1.
 */
class Gather {
  readonly from = new Int32Array(BLOCK)
  readonly to = new Int32Array(BLOCK)
  base = 0
  /** Sum of the touched bytes: kept so the loop that touches them is not optimized away. */
  touched = 0

  constructor(
    private readonly offsets: Int32Array,
    private readonly bytes: Uint8Array,
  ) {}

  /** Rows start..end, row i reading value rows[i]. */
  rows(rows: Int32Array, start: number, end: number): void {
    const { from, to, offsets } = this
    for (let i = start; i < end; i++) {
      const r = rows[i]
      from[i - start] = offsets[r]
      to[i - start] = offsets[r + 1]
    }
    this.touch(start, end)
  }

  /** Rows start..end of the column itself, in its order: nothing to gather ahead. */
  direct(start: number, end: number): void {
    const { from, to, offsets } = this
    for (let i = start; i < end; i++) {
      from[i - start] = offsets[i]
      to[i - start] = offsets[i + 1]
    }
    this.base = start
  }

  /** List rows start..end (starts: each row's first entry); only one-entry lists are gathered. */
  lists(starts: Int32Array, rows: Int32Array | null, start: number, end: number): void {
    const { from, to, offsets } = this
    for (let i = start; i < end; i++) {
      const a = starts[i]
      const one = starts[i + 1] - a === 1
      const r = one ? (rows ? rows[a] : a) : 0
      from[i - start] = one ? offsets[r] : -1
      to[i - start] = one ? offsets[r + 1] : -1
    }
    this.touch(start, end)
  }

  private touch(start: number, end: number): void {
    const { from, to, bytes } = this
    let sum = this.touched
    for (let k = 0; k < end - start; k++) if (from[k] < to[k]) sum = (sum + bytes[from[k]]) | 0
    this.touched = sum
    this.base = start
  }
}

/** Bit `offset + i` of an Arrow bitmap (validity, booleans): bitmaps are not sliced with their Data. */
function bitReader(bits: Uint8Array, offset: number): (i: number) => boolean {
  return (i) => (bits[(offset + i) >> 3] & (1 << ((offset + i) & 7))) !== 0
}

/** A validity test for Arrow's bitmap, or null when the column has no NULLs. */
export function validity(data: Data): ((i: number) => boolean) | null {
  if (!data.nullBitmap || data.nullCount === 0) return null
  return bitReader(data.nullBitmap, data.offset)
}

const dictionaries = new WeakMap<Vector, Uint8Array[]>()

/**
 * Field bytes of a string vector's values (a dictionary), each already quoted as needed; made
 * once per dictionary, which every batch and slice of a file shares.
 */
function encodedValues(vector: Vector | undefined | null): Uint8Array[] {
  if (!vector) return []
  let out = dictionaries.get(vector)
  if (out) return out
  out = []
  for (let k = 0; k < vector.length; k++) {
    const v = vector.get(k) as string | null
    const sink = new Sink()
    if (v !== null) sink.text(String(v))
    out.push(sink.bytes().slice())
  }
  dictionaries.set(vector, out)
  return out
}

/**
 * A string column's bytes and offsets, and for a view (stringViewData) the rows
 * it shows; null for other types. Reads value `i` at rows ? rows[i] : i.
 */
function stringsOf(data: Data): { offsets: Int32Array; bytes: Uint8Array; rows: Int32Array | null } | null {
  if (DataType.isUtf8(data.type))
    return { offsets: data.valueOffsets as Int32Array, bytes: data.values as Uint8Array, rows: null }
  if (isStringView(data)) {
    const values = data.dictionary!.data[0]
    return {
      offsets: values.valueOffsets as Int32Array,
      bytes: values.values as Uint8Array,
      rows: data.values as Int32Array,
    }
  }
  return null
}

/** The cell writer for one column of a batch. */
function cellOf(field: Field, data: Data): Cell {
  const valid = validity(data)
  const type = data.type
  let write: Cell
  if (DataType.isUtf8(type)) {
    const offsets = data.valueOffsets as Int32Array
    const bytes = data.values as Uint8Array
    write = plainBytes(bytes)
      ? (s, i) => s.plainField(bytes, offsets[i], offsets[i + 1])
      : (s, i) => s.field(bytes, offsets[i], offsets[i + 1])
  } else if (isStringView(data)) {
    // rows of a loaded column (stringViewData): each written from the column's own bytes
    const indices = data.values as Int32Array
    const column = data.dictionary!.data[0]
    if (validity(column) === null && plainBytes(column.values as Uint8Array)) {
      const bytes = column.values as Uint8Array
      const at = new Gather(column.valueOffsets as Int32Array, bytes)
      write = (s, i) => s.plainField(bytes, at.from[i - at.base], at.to[i - at.base])
      write.prepare = (start, end) => at.rows(indices, start, end)
    } else {
      const value = cellOf(field, column)
      write = (s, i) => value(s, indices[i])
    }
  } else if (DataType.isDictionary(type)) {
    const indices = data.values as Int32Array
    const values = encodedValues(data.dictionary)
    write = (s, i) => s.raw(values[indices[i]])
  } else if (DataType.isInt(type) && field.name === 'match_no') {
    // files stored before match ids were written as text (match_id) numbered them
    const values = data.values as Int32Array
    write = (s, i) => {
      s.byte(0x6d) // m0000001: a match's id in pages and exports
      s.digits(values[i], 7)
    }
  } else if (DataType.isInt(type)) {
    const values = data.values as ArrayLike<number | bigint>
    write = (s, i) => s.integer(Number(values[i]))
  } else if (DataType.isDecimal(type)) {
    const words = data.values as Uint32Array
    const scale = type.scale
    write = (s, i) => {
      const at = i * 4
      // |units| < 2^53: the low two words, the second one signed, hold the value
      s.decimal((words[at + 1] | 0) * 4294967296 + words[at], scale)
    }
  } else if (DataType.isDate(type)) {
    const values = data.values as Int32Array | BigInt64Array
    write =
      values instanceof Int32Array
        ? (s, i) => s.date(values[i])
        : (s, i) => s.date(Math.round(Number(values[i]) / 86_400_000))
  } else if (DataType.isTimestamp(type)) {
    const values = data.values as ArrayLike<number | bigint>
    write = (s, i) => s.ascii(formatTimestamp(Number(values[i])))
  } else if (DataType.isBool(type)) {
    const bit = bitReader(data.values as Uint8Array, data.offset)
    write = (s, i) => s.raw(bit(i) ? TRUE : FALSE)
  } else if (DataType.isList(type) && stringsOf(data.children[0])) {
    // a match's record keys, joined with ';'
    const starts = data.valueOffsets as Int32Array
    const { offsets, bytes, rows } = stringsOf(data.children[0])!
    const plain = plainBytes(bytes)
    const scratch = new Sink()
    const at = new Gather(offsets, bytes)
    write = (s, i) => {
      const from = at.from[i - at.base]
      if (from >= 0) {
        const to = at.to[i - at.base]
        return plain ? s.plainField(bytes, from, to) : s.field(bytes, from, to)
      }
      const a = starts[i]
      const b = starts[i + 1]
      scratch.at = 0
      for (let k = a; k < b; k++) {
        if (k > a) scratch.byte(SEMICOLON)
        const r = rows ? rows[k] : k
        scratch.raw(bytes, offsets[r], offsets[r + 1])
      }
      const joined = scratch.bytes()
      s.field(joined, 0, joined.length)
    }
    write.prepare = (start, end) => at.lists(starts, rows, start, end)
  } else if (DataType.isFloat(type)) {
    const values = data.values as Float64Array
    const cache = new FloatCache()
    write = (s, i) => s.cachedFloat(values[i], cache)
  } else {
    // any other type: its JS value as text (not produced by Concord's result files today)
    const vector = makeVector(data)
    write = (s, i) => {
      const v = vector.get(i) as unknown
      if (v !== null && v !== undefined) s.text(String(v))
    }
  }
  if (valid === null) return write
  const cell: Cell = (s, i) => (valid(i) ? write(s, i) : undefined)
  cell.prepare = write.prepare
  return cell
}

/** The columns a set's CSV shows, and the header. */
interface Layout {
  /** Columns of the file written as they are, by index in the schema. */
  plain: number[]
  header: string[]
}

const MISS_COLUMNS = ['closest_candidate', 'failed_pass', 'failed_conjunct', 'candidate_taken', 'tied_with']

function layoutOf(schema: Schema, set: ResultSet): Layout {
  const unmatched = set === 'unmatched-left' || set === 'unmatched-right'
  const hidden = new Set(unmatched ? MISS_COLUMNS : ['levels', 'weights'])
  const plain = schema.fields.flatMap((f, c) => (hidden.has(f.name) ? [] : [c]))
  const header = plain.map((c) => (schema.fields[c].name === 'match_no' ? 'match_id' : schema.fields[c].name))
  if (!unmatched && schema.fields.some((f) => f.name === 'weights')) header.push('waterfall')
  if (unmatched) header.splice(1, 0, 'closest_candidate', 'failed_pass', 'failed_conjunct', 'reason', 'tied_with')
  return { plain, header }
}

/** The header line of a set's CSV. */
export function csvHeader(schema: Schema, set: ResultSet): Uint8Array {
  const sink = new Sink()
  layoutOf(schema, set).header.forEach((name, k) => {
    if (k > 0) sink.byte(COMMA)
    sink.text(name)
  })
  sink.byte(LF)
  sink.cut()
  return sink.full[0]
}

// placeholders for the two keys in a reason sentence (private-use characters: not in a pass's text)
const CANDIDATE = '\uE000'
const TIED = '\uE001'

/**
 * An unmatched record's nearest-miss cells (closest_candidate, failed_pass, failed_conjunct,
 * reason, tied_with) for one batch. The sentences depend on the pass, the conjunct, whether the
 * candidate was taken and whether a tie decided; they are made once per such class with
 * placeholders for the two keys, which are spliced in as bytes.
 */
function missCells(schema: Schema, batch: RecordBatch, side: 'left' | 'right'): Cell {
  const passes = JSON.parse(schema.metadata.get('concord.passes') ?? '[]') as PassInfo[]
  const child = (name: string) => batch.data.children[schema.fields.findIndex((f) => f.name === name)]
  const candidate = child('closest_candidate')
  const pass = child('failed_pass')
  const conjunct = child('failed_conjunct')
  const taken = child('candidate_taken')
  const tiedIndex = schema.fields.findIndex((f) => f.name === 'tied_with')
  const tied = tiedIndex >= 0 ? batch.data.children[tiedIndex] : null // absent from runs stored before `prefer`
  const hasCandidate = validity(candidate) ?? (() => true)
  const hasConjunct = validity(conjunct) ?? (() => true)
  const hasTie = tied ? (validity(tied) ?? (() => true)) : () => false
  const passIndex = pass.values as Int32Array
  const conjunctIndex = conjunct.values as Int32Array
  const conjunctNames = conjunct.dictionary
  const passNames = pass.dictionary
  const wasTaken = bitReader(taken.values as Uint8Array, taken.offset)
  const key = (d: Data) => {
    const { offsets, bytes, rows } = stringsOf(d)!
    return rows
      ? (i: number) => bytes.subarray(offsets[rows[i]], offsets[rows[i] + 1])
      : (i: number) => bytes.subarray(offsets[i], offsets[i + 1])
  }
  // the closest candidates are keys of the other side in its hash order: gathered a block ahead
  const candidates = stringsOf(candidate)!
  const candidateBytes = candidates.bytes
  const near = new Gather(candidates.offsets, candidateBytes)
  const tiedKey = tied ? key(tied) : () => new Uint8Array(0)
  // keys of plain buffers (plainBytes) can be spliced into a plain sentence without a check
  const plainKeys = plainBytes(candidateBytes) && (!tied || plainBytes(stringsOf(tied)!.bytes))
  // classes by number, not by a string made per row: pass, conjunct, taken, tie
  const conjuncts = (conjunctNames?.length ?? 0) + 1
  const classes: (MissClass | undefined)[] = new Array(((passNames?.length ?? 0) + 1) * conjuncts * 4)
  const scratch = new Sink()
  const classOf = (p: number, c: number, t: boolean, tie: boolean): MissClass => {
    const name = p >= 0 ? (passNames?.get(p) as string) : null
    const miss = {
      pass: passes.find((x) => x.name === name) ?? null,
      conjunct: c >= 0 ? (conjunctNames?.get(c) as string) : null,
      candidate: p >= 0 ? CANDIDATE : null,
      taken: t,
      tiedWith: tie ? TIED : null,
    }
    const d = describeUnmatched(miss, side, passes)
    const fixed = new Sink()
    fixed.byte(COMMA)
    if (d.failed?.pass) fixed.text(d.failed.pass)
    fixed.byte(COMMA)
    if (d.failed?.conjunct) fixed.text(d.failed.conjunct)
    fixed.byte(COMMA)
    fixed.cut()
    // the reason split at the placeholders: text, key, text, key, text
    const reason = d.reason
      .split(/([\uE000\uE001])/)
      .map((part) => (part === CANDIDATE ? 'candidate' : part === TIED ? 'tied' : encoder.encode(part)))
    const plain = plainKeys && reason.every((part) => typeof part === 'string' || plainBytes(part))
    return { fixed: fixed.full[0], reason, plain }
  }
  /** The reason of class `cls` for row i, its candidate's key at bytes from..to. */
  const reasonInto = (sink: Sink, cls: MissClass, i: number, from: number, to: number) => {
    for (const part of cls.reason) {
      if (part === 'candidate') sink.raw(candidateBytes, from, to)
      else sink.raw(part === 'tied' ? tiedKey(i) : part)
    }
  }
  const cell: Cell = (s, i) => {
    const found = hasCandidate(i)
    const p = found ? passIndex[i] : -1
    const c = found && hasConjunct(i) ? conjunctIndex[i] : -1
    const t = found && wasTaken(i)
    const tiedTo = hasTie(i)
    const tie = found && tiedTo
    const id = (((p + 1) * conjuncts + (c + 1)) * 2 + (t ? 1 : 0)) * 2 + (tie ? 1 : 0)
    const cls = (classes[id] ??= classOf(p, c, t, tie))
    const from = found ? near.from[i - near.base] : 0
    const to = found ? near.to[i - near.base] : 0
    if (plainKeys) s.plainField(candidateBytes, from, to)
    else s.field(candidateBytes, from, to)
    s.raw(cls.fixed)
    if (cls.plain) {
      // written in place; quoted after all only when whitespace ends up at an edge
      const start = s.at
      reasonInto(s, cls, i, from, to)
      s.quoteIfEdgeSpace(start)
    } else {
      scratch.at = 0
      reasonInto(scratch, cls, i, from, to)
      const reason = scratch.bytes()
      s.field(reason, 0, reason.length)
    }
    s.byte(COMMA)
    if (tiedTo) {
      const k = tiedKey(i)
      s.field(k, 0, k.length)
    }
  }
  cell.prepare = candidates.rows
    ? (start, end) => near.rows(candidates.rows!, start, end)
    : (start, end) => near.direct(start, end)
  return cell
}

/** A class of nearest misses: its fixed cells and its reason with places for the two keys. */
interface MissClass {
  fixed: Uint8Array
  reason: (Uint8Array | 'candidate' | 'tied')[]
  /** Every text part and key is of a plain buffer: the reason needs quotes only for edge whitespace. */
  plain: boolean
}

/** A probabilistic match's waterfall as one readable cell: "prior -3.1; memo token_set >= 0.95 +11.149; …". */
function waterfallCell(schema: Schema, batch: RecordBatch): Cell {
  const passes = JSON.parse(schema.metadata.get('concord.passes') ?? '[]') as PassInfo[]
  const column = (name: string) => batch.getChildAt(schema.fields.findIndex((f) => f.name === name))!
  const [levels, weights, pass] = [column('levels'), column('weights'), column('pass')]
  return (s, i) => {
    const l = levels.get(i) as Iterable<number> | null
    const w = weights.get(i) as Iterable<number> | null
    const info = passes.find((p) => p.name === pass.get(i))
    const weighed = l && w && info ? matchWeights(info, [...l], [...w]) : undefined
    if (weighed) s.text(waterfallText(weighed))
  }
}

function waterfallText(w: MatchWeights): string {
  const signed = (x: number) => `${x >= 0 ? '+' : ''}${x}`
  return [
    `prior ${signed(w.prior)}`,
    ...w.comparisons.map((c) => `${c.name} ${c.level} ${signed(c.weight)}`),
    `context ${signed(w.context)}`,
  ].join('; ')
}

/** Writes the rows of one record batch (no header) into a sink. */
function writeRows(sink: Sink, schema: Schema, batch: RecordBatch, set: ResultSet): void {
  // an empty table's batch may come without its columns' buffers
  if (batch.numRows === 0) return
  const { plain } = layoutOf(schema, set)
  const cells = plain.map((c) => cellOf(schema.fields[c], batch.data.children[c]))
  const side = set === 'unmatched-left' ? 'left' : set === 'unmatched-right' ? 'right' : null
  if (side) cells.splice(1, 0, missCells(schema, batch, side))
  if (!side && schema.fields.some((f) => f.name === 'weights')) cells.push(waterfallCell(schema, batch))
  const n = batch.numRows
  const last = cells.length - 1
  const prepares = cells.flatMap((c) => (c.prepare ? [c.prepare] : []))
  for (let start = 0; start < n; start += BLOCK) {
    const end = Math.min(n, start + BLOCK)
    for (const prepare of prepares) prepare(start, end)
    for (let i = start; i < end; i++) {
      for (let c = 0; c < last; c++) {
        cells[c](sink, i)
        sink.byte(COMMA)
      }
      cells[last](sink, i)
      sink.endRow()
    }
  }
}

/**
 * The CSV lines of one record batch, as chunks of about a megabyte (the last one shorter), each in
 * a buffer of its own. The header is not included: csvHeader gives it.
 */
export function csvBatch(schema: Schema, batch: RecordBatch, set: ResultSet): Uint8Array[] {
  // sized for the slice (about 64 bytes a row), a megabyte at most: full chunks are handed out
  const sink = new Sink(Math.min(CHUNK * 2, Math.max(4096, batch.numRows * 64)))
  writeRows(sink, schema, batch, set)
  sink.cut()
  return sink.full
}

/**
 * A result set's CSV written through one reused buffer: `emit` gets chunks of about `chunkBytes`
 * (a row more at most), each valid only during the call, so it must write or copy it at once.
 */
export class CsvWriter {
  private readonly sink: Sink

  constructor(
    private readonly schema: Schema,
    private readonly set: ResultSet,
    emit: (chunk: Uint8Array) => void,
    chunkBytes = CHUNK,
  ) {
    this.sink = new Sink(chunkBytes + 64 * 1024, emit, chunkBytes)
  }

  header(): void {
    this.sink.raw(csvHeader(this.schema, this.set))
  }

  rows(batch: RecordBatch): void {
    writeRows(this.sink, this.schema, batch, this.set)
  }

  /** Emits what is buffered, however little. */
  flush(): void {
    this.sink.cut()
  }
}
