// JSON sources: a top-level array of objects, or NDJSON (one object per line). Columns are the
// union of keys in first-seen order; types follow the same inference as CSV (infer.ts), so a
// number written as a string ("214.16") is a decimal, exactly.

import { readFile } from 'node:fs/promises'
import { ConcordError } from '../../errors.js'
import { columnBuilder } from '../data/builder.js'
import { classifyValue, TypeTracker } from './infer.js'
import type { Table } from '../data/table.js'

type Row = Record<string, unknown>

export async function loadJson(path: string, signal?: AbortSignal): Promise<Table> {
  let text: string
  try {
    text = await readFile(path, { encoding: 'utf8', signal })
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err
    // the code, not the message: the message names the server's absolute path
    throw new ConcordError('unreadable_file', `cannot read the file (${(err as NodeJS.ErrnoException).code})`, 400)
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
  text = quoteLongNumbers(text)
  const rows = text.trimStart().startsWith('[') ? parseArray(text) : parseLines(text)
  return tableFromRows(rows)
}

// A JSON token: a string (skipped whole, so digits inside it are not numbers) or a number.
const TOKEN = /"(?:[^"\\]|\\.)*"|-?(\d+)(?:\.(\d+))?([eE][+-]?\d+)?/g

/**
 * JSON.parse rounds a number literal to a double, so an id or amount of more than 15 significant
 * digits (12345678901234567890) would load changed. Such literals are quoted first: as text they
 * keep every digit and go through the same inference as CSV fields (a long id stays a string).
 * Exponent notation is left alone: it is a float either way.
 */
export function quoteLongNumbers(text: string): string {
  if (!/\d[\d.]{15}/.test(text)) return text
  return text.replace(TOKEN, (token, int?: string, frac?: string, exp?: string) => {
    if (int === undefined || exp !== undefined) return token
    const digits = (int + (frac ?? '')).replace(/^0+/, '')
    return digits.length > 15 ? `"${token}"` : token
  })
}

function parseArray(text: string): Row[] {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (err) {
    throw malformed(text, err as Error)
  }
  if (!Array.isArray(parsed)) throw new ConcordError('malformed_file', 'a JSON source must be an array of objects', 400)
  parsed.forEach((row, i) => {
    if (row === null || typeof row !== 'object' || Array.isArray(row)) {
      throw new ConcordError('malformed_file', `element ${i} of the array is not an object`, 400)
    }
  })
  return parsed as Row[]
}

function parseLines(text: string): Row[] {
  const rows: Row[] = []
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim()
    if (line === '') continue
    let row: unknown
    try {
      row = JSON.parse(line)
    } catch (err) {
      throw new ConcordError(
        'malformed_file',
        `line ${i + 1}: ${(err as Error).message}`,
        400,
        'each line of NDJSON must be one JSON object',
      )
    }
    if (row === null || typeof row !== 'object' || Array.isArray(row)) {
      throw new ConcordError('malformed_file', `line ${i + 1}: not a JSON object`, 400)
    }
    rows.push(row as Row)
  }
  if (rows.length === 0) throw new ConcordError('empty_file', 'the JSON file holds no rows', 400)
  return rows
}

/** Turns JSON.parse's "at position N" into a line number. */
function malformed(text: string, err: Error): ConcordError {
  const pos = /position (\d+)/.exec(err.message)
  const line = pos ? text.slice(0, Number(pos[1])).split('\n').length : undefined
  return new ConcordError(
    'malformed_file',
    `${line ? `line ${line}: ` : ''}${err.message}`,
    400,
    'check the JSON syntax near that line',
  )
}

export function tableFromRows(rows: Row[]): Table {
  const names: string[] = []
  const trackers = new Map<string, TypeTracker>()
  for (const row of rows) {
    for (const key of Object.keys(row)) {
      let tracker = trackers.get(key)
      if (!tracker) {
        // a key absent from some rows is NULL there; the built column records those NULLs
        tracker = new TypeTracker()
        trackers.set(key, tracker)
        names.push(key.trim())
      }
      tracker.observe(classifyValue(row[key]))
    }
  }
  const keys = [...trackers.keys()]
  const columns = keys.map((k, i) => trackers.get(k)!.result(names[i]))
  const builders = columns.map((c) => columnBuilder(c, Math.max(16, rows.length)))
  for (const row of rows) {
    for (let c = 0; c < keys.length; c++) builders[c].append(row[keys[c]])
  }
  const data = builders.map((b) => b.finish())
  return {
    columns: columns.map((c, i) => ({ ...c, nullable: c.nullable || data[i].valid !== null })),
    data,
    length: rows.length,
  }
}
