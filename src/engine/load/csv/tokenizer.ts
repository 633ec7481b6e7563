// A byte-level CSV scanner. csv-parse turns every field into a JS string and every record into
// an array, which is about 5× too slow to load a million rows in DuckDB's time; this scanner
// hands each field's bytes to its typed column in place. Plain fields (unquoted, no blanks or
// non-ASCII bytes at their edges) are scanned by the column itself as it parses or copies them,
// so their bytes are read once; every other field goes through the full field parser here.
// It is checked against csv-parse by a property-based differential test (test/csv-fast.test.ts).

import { ConcordError } from '../../../errors.js'

const QUOTE = 0x22
const LF = 0x0a
const CR = 0x0d
const SPACE = 0x20
const TAB = 0x09

/** Field boundaries of the current row; `escaped[k]` is 1 when field k holds doubled quotes. */
export interface RowFields {
  starts: Int32Array
  ends: Int32Array
  escaped: Uint8Array
  count: number
  /** 1-based line of the row's first byte. */
  line: number
  /** Offset just past the row (and its newline). */
  end: number
}

/** Receives each row with the buffer its field offsets point into; false stops the scan after it. */
export type OnRow = (row: RowFields, buf: Buffer) => void | boolean

/** A column that takes a row's field in scanInto(). */
export interface FieldSink {
  readonly length: number
  /**
   * Appends the field at buf[p] if it is plain and ends before `end`, and returns the index of
   * the delimiter or LF after it (a CR before that LF is not part of the field); else -1,
   * having appended nothing. `stops` marks the delimiter, LF, CR and the quote.
   */
  take(buf: Buffer, p: number, end: number, stops: Uint8Array): number
  /** Appends the field buf[s, e) as written (to trim); `escaped`: it holds doubled quotes. */
  append(buf: Buffer, s: number, e: number, escaped: boolean): void
  /** Drops the values from `length` on: a row that a chunk's end cut short is parsed again. */
  truncate(length: number): void
}

export class Tokenizer {
  readonly row: RowFields
  line = 1
  /** 1 for the bytes that end an unquoted field's scan: the delimiter, LF and a quote. */
  private readonly special = new Uint8Array(256)
  /** The same and CR, for the columns' plain-field scans. */
  private readonly stops = new Uint8Array(256)
  private readonly maxFields: number
  // The field parsed last by field(): its bytes, whether it holds doubled quotes, the newlines
  // inside it and the index of the delimiter or LF after it (or of the end of the input).
  private fieldStart = 0
  private fieldEnd = 0
  private fieldEscaped = 0
  private fieldLines = 0
  private fieldNext = 0

  constructor(
    private readonly delimiter: number,
    maxFields: number,
  ) {
    this.maxFields = maxFields
    for (const b of [delimiter, LF, QUOTE]) this.special[b] = this.stops[b] = 1
    this.stops[CR] = 1
    this.row = {
      starts: new Int32Array(maxFields + 1),
      ends: new Int32Array(maxFields + 1),
      escaped: new Uint8Array(maxFields + 1),
      count: 0,
      line: 1,
      end: 0,
    }
  }

  /**
   * Calls `onRow` for every complete row in buf[pos, end) and returns where the unconsumed
   * bytes start. With `final`, the last row may end without a newline.
   */
  scan(buf: Buffer, pos: number, end: number, final: boolean, onRow: OnRow): number {
    const row = this.row
    for (;;) {
      if (pos >= end) return pos
      const rowStart = pos
      const startLine = this.line
      let lines = 0
      let count = 0
      for (;;) {
        if (!this.field(buf, pos, end, final, startLine, startLine + lines)) {
          this.line = startLine
          return rowStart
        }
        lines += this.fieldLines
        if (count >= this.maxFields) throw malformed(startLine, `more than ${this.maxFields} fields`)
        row.starts[count] = this.fieldStart
        row.ends[count] = this.fieldEnd
        row.escaped[count] = this.fieldEscaped
        count++
        const p = this.fieldNext
        if (p >= end) {
          pos = p // the input's last row, without a newline
          break
        }
        pos = p + 1
        if (buf[p] === LF) {
          lines++
          break
        }
      }
      this.line = startLine + lines
      // An empty line (nothing, or a lone CR) is no row.
      if (
        count === 1 &&
        !row.escaped[0] &&
        isBlankLine(buf, row.starts[0], row.ends[0]) &&
        buf[row.starts[0] - 1] !== QUOTE
      )
        continue
      row.count = count
      row.line = startLine
      row.end = pos
      if (onRow(row, buf) === false) return pos
    }
  }

  /**
   * Like scan(), straight into one column per field: a row with another number of fields is
   * malformed. A row that the end of the input cuts short is taken back from the columns and
   * left unconsumed.
   */
  scanInto(buf: Buffer, pos: number, end: number, final: boolean, columns: FieldSink[]): number {
    const stops = this.stops
    const width = columns.length
    for (;;) {
      if (pos >= end) return pos
      const rowStart = pos
      const startLine = this.line
      const first = buf[pos]
      if (first === CR && pos + 1 >= end && !final) return rowStart // is an LF next?
      if (first === LF || (first === CR && (pos + 1 >= end || buf[pos + 1] === LF))) {
        // An empty line (nothing, or a lone CR) is no row.
        pos += first === CR && pos + 1 < end ? 2 : 1
        if (buf[pos - 1] === LF) this.line++
        continue
      }
      const rows = columns[0].length
      let lines = 0
      let k = 0
      for (;;) {
        const column = columns[k]
        let p = column.take(buf, pos, end, stops)
        if (p < 0) {
          if (!this.field(buf, pos, end, final, startLine, startLine + lines)) {
            for (let j = 0; j < k; j++) columns[j].truncate(rows)
            this.line = startLine
            return rowStart
          }
          column.append(buf, this.fieldStart, this.fieldEnd, this.fieldEscaped === 1)
          lines += this.fieldLines
          p = this.fieldNext
        }
        k++
        if (p >= end) {
          pos = p // the input's last row, without a newline
          break
        }
        pos = p + 1
        if (buf[p] === LF) {
          lines++
          break
        }
        if (k === width) {
          // More fields than columns: parse the rest of the row to count them.
          const found = this.countRest(buf, pos, end, final, startLine, lines, k)
          if (found < 0) {
            for (let j = 0; j < k; j++) columns[j].truncate(rows)
            this.line = startLine
            return rowStart
          }
          throw malformed(startLine, `expected ${width} fields, found ${found}`)
        }
      }
      this.line = startLine + lines
      if (k !== width) throw malformed(startLine, `expected ${width} fields, found ${k}`)
    }
  }

  /** The fields of a row from the one at `pos` on, added to `count`; -1 when the input ends first. */
  private countRest(
    buf: Buffer,
    pos: number,
    end: number,
    final: boolean,
    startLine: number,
    lines: number,
    count: number,
  ): number {
    for (;;) {
      if (!this.field(buf, pos, end, final, startLine, startLine + lines)) return -1
      lines += this.fieldLines
      if (count >= this.maxFields) throw malformed(startLine, `more than ${this.maxFields} fields`)
      count++
      const p = this.fieldNext
      if (p >= end || buf[p] === LF) return count
      pos = p + 1
    }
  }

  /**
   * Parses the field at buf[pos] (see the fields above); false when it may go on past `end`.
   * Errors name the row's line (`rowLine`) or the line the parse has reached (`line`).
   */
  private field(buf: Buffer, pos: number, end: number, final: boolean, rowLine: number, line: number): boolean {
    const d = this.delimiter
    let p = pos
    let lines = 0
    while (p < end && (buf[p] === SPACE || buf[p] === TAB) && buf[p] !== d) p++
    if (p < end && buf[p] === QUOTE) {
      this.fieldStart = ++p
      let escaped = 0
      for (;;) {
        while (p < end && buf[p] !== QUOTE) {
          if (buf[p] === LF) lines++
          p++
        }
        if (p + 1 >= end) {
          if (!final || p >= end) {
            if (final) throw malformed(rowLine, 'unterminated quoted field')
            return false
          }
          // closing quote is the very last byte of the input
          this.fieldEnd = p++
          break
        }
        if (buf[p + 1] === QUOTE) {
          escaped = 1
          p += 2
          continue
        }
        this.fieldEnd = p++
        break
      }
      while (p < end && (buf[p] === SPACE || buf[p] === TAB || buf[p] === CR) && buf[p] !== d) p++
      if (p < end && buf[p] !== d && buf[p] !== LF)
        throw malformed(line + lines, 'unexpected character after a closing quote')
      this.fieldEscaped = escaped
    } else {
      this.fieldStart = pos
      // One table lookup per byte finds the delimiter, a newline or a stray quote.
      const special = this.special
      while (p < end && special[buf[p]] === 0) p++
      if (p < end && buf[p] === QUOTE) throw malformed(line, 'a quote inside an unquoted field')
      this.fieldEnd = p
      this.fieldEscaped = 0
    }
    if (p >= end && !final) return false
    this.fieldLines = lines
    this.fieldNext = p
    return true
  }
}

function isBlankLine(buf: Uint8Array, s: number, e: number): boolean {
  return e === s || (e === s + 1 && buf[s] === CR)
}

/** malformed_file, keeping the line apart so a part parsed by a worker can be moved to the file's line. */
export class MalformedCsv extends ConcordError {
  constructor(
    readonly line: number,
    readonly detail: string,
  ) {
    super('malformed_file', `line ${line}: ${detail}`, 400, 'check the quoting and delimiters near that line')
  }
}

export function malformed(line: number, what: string): MalformedCsv {
  return new MalformedCsv(line, what)
}
