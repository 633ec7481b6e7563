// A byte-level CSV scanner. csv-parse turns every field into a JS string and every record into
// an array, which is about 5× too slow to load a million rows in DuckDB's time; this scanner only
// records where each field starts and ends, and the typed columns read the bytes in place.
// It is checked against csv-parse by a property-based differential test (test/csv-fast.test.ts).

import { ConcordError } from '../../errors.js'

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

export class Tokenizer {
  readonly row: RowFields
  line = 1
  /** 1 for the bytes that end an unquoted field's scan: the delimiter, LF and a quote. */
  private readonly special = new Uint8Array(256)

  constructor(
    private readonly delimiter: number,
    maxFields: number,
  ) {
    this.special[delimiter] = 1
    this.special[LF] = 1
    this.special[QUOTE] = 1
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
    const d = this.delimiter
    const special = this.special
    const row = this.row
    const max = row.starts.length
    for (;;) {
      if (pos >= end) return pos
      const rowStart = pos
      const startLine = this.line
      let lines = 0
      let count = 0
      let complete = false
      for (;;) {
        // one field
        let p = pos
        while (p < end && (buf[p] === SPACE || buf[p] === TAB) && buf[p] !== d) p++
        let fieldStart: number
        let fieldEnd: number
        let escaped = 0
        if (p < end && buf[p] === QUOTE) {
          fieldStart = ++p
          for (;;) {
            while (p < end && buf[p] !== QUOTE) {
              if (buf[p] === LF) lines++
              p++
            }
            if (p + 1 >= end) {
              if (!final || p >= end) {
                if (final) throw malformed(startLine, 'unterminated quoted field')
                this.line = startLine
                return rowStart
              }
              // closing quote is the very last byte of the input
              fieldEnd = p++
              break
            }
            if (buf[p + 1] === QUOTE) {
              escaped = 1
              p += 2
              continue
            }
            fieldEnd = p++
            break
          }
          while (p < end && (buf[p] === SPACE || buf[p] === TAB || buf[p] === CR) && buf[p] !== d) p++
          if (p < end && buf[p] !== d && buf[p] !== LF)
            throw malformed(startLine + lines, 'unexpected character after a closing quote')
        } else {
          fieldStart = pos
          // One table lookup per byte finds the delimiter, a newline or a stray quote.
          while (p < end && special[buf[p]] === 0) p++
          if (p < end && buf[p] === QUOTE) throw malformed(startLine + lines, 'a quote inside an unquoted field')
          fieldEnd = p
        }
        if (count + 1 >= max) throw malformed(startLine, `more than ${max - 1} fields`)
        row.starts[count] = fieldStart
        row.ends[count] = fieldEnd
        row.escaped[count] = escaped
        count++
        if (p >= end) {
          if (!final) {
            this.line = startLine
            return rowStart
          }
          pos = p
          complete = true
          break
        }
        if (buf[p] === d) {
          pos = p + 1
          continue
        }
        // LF
        lines++
        pos = p + 1
        complete = true
        break
      }
      if (!complete) return rowStart
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
