// The byte-level CSV loader against the reference (csv-parse + generic builders) on random
// documents: same columns, types and values, or the same error code. Small random chunk sizes
// put rows, quotes and escapes across read boundaries.

import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import fc from 'fast-check'
import t from 'tap'
import { classifyText } from '../src/engine/infer.js'
import { loadCsv } from '../src/engine/csv/index.js'
import { rowsAsJson } from '../src/engine/table.js'
import { loadCsvReference } from './helpers/csv-reference.js'

const valueArb = fc.oneof(
  fc.constantFrom(
    '',
    '0',
    '-0',
    '007',
    '1.50',
    '-12.345',
    '2024-02-29',
    '2023-02-29',
    '2024-01-05T10:00:00Z',
    'TRUE',
    'false',
    '1e3',
    '.5',
    '5.',
    '+7',
    '12345678901234567',
    '1.1234567891',
    'NaN',
    ' x ',
    'é',
    '😀',
  ),
  fc.integer({ min: -100000, max: 100000 }).map(String),
  fc.integer({ min: -10000000, max: 10000000 }).map((n) => (n / 100).toFixed(2)),
  fc.string({ unit: fc.constantFrom('a', 'B', ' ', ',', ';', '\t', '"', '\n', 'é', '1', '.', '-'), maxLength: 8 }),
)

function encodeField(v: string, delimiter: string): string {
  const needsQuotes = v.includes(delimiter) || v.includes('"') || v.includes('\n') || v.includes('\r')
  return needsQuotes ? `"${v.replace(/"/g, '""')}"` : v
}

const docArb = fc
  .record({
    delimiter: fc.constantFrom(',', ';', '\t'),
    newline: fc.constantFrom('\n', '\r\n'),
    columns: fc.integer({ min: 1, max: 5 }),
    quoteAll: fc.boolean(),
    trailingNewline: fc.boolean(),
  })
  .chain((shape) =>
    fc.record({
      shape: fc.constant(shape),
      rows: fc.array(fc.array(valueArb, { minLength: shape.columns, maxLength: shape.columns }), {
        minLength: 1,
        maxLength: 30,
      }),
      chunkSize: fc.integer({ min: 4, max: 200 }),
    }),
  )

t.test('the fast loader equals csv-parse + the reference builders', async (t) => {
  const dir = t.testdir()
  let n = 0
  let compared = 0
  await fc.assert(
    fc.asyncProperty(docArb, async ({ shape, rows, chunkSize }) => {
      const { delimiter, newline, columns } = shape
      // A row of only empty fields in a one-column file is an empty line: both skip it; keep rows non-blank.
      const body = rows.filter((r) => r.some((v) => v.trim() !== '') || columns > 1)
      const header = Array.from({ length: columns }, (_, k) => `c${k}`)
      const enc = (v: string) => (shape.quoteAll ? `"${v.replace(/"/g, '""')}"` : encodeField(v, delimiter))
      const lines = [header.join(delimiter), ...body.map((r) => r.map(enc).join(delimiter))]
      const text = lines.join(newline) + (shape.trailingNewline ? newline : '')
      const path = join(dir, `doc${n++}.csv`)
      writeFileSync(path, text)
      const fast = await loadCsv(path, { delimiter, chunkSize, sampleBytes: chunkSize }).then(
        (r) => ({ ok: true as const, columns: r.table.columns, rows: rowsAsJson(r.table) }),
        (e) => ({ ok: false as const, code: e.code ?? e.message }),
      )
      const ref = await loadCsvReference(path, { delimiter }).then(
        (r) => ({ ok: true as const, columns: r.table.columns, rows: rowsAsJson(r.table) }),
        (e) => ({ ok: false as const, code: e.code ?? e.message }),
      )
      compared++
      if (JSON.stringify(fast) !== JSON.stringify(ref)) {
        throw new Error(
          `fast and reference differ on ${JSON.stringify(text)}:\nfast ${JSON.stringify(fast)}\nref  ${JSON.stringify(ref)}`,
        )
      }
    }),
    { numRuns: 300 },
  )
  t.equal(compared, 300)
})

t.test('the byte classifier agrees with classifyText on edge values', async (t) => {
  const dir = t.testdir()
  const values = [
    '007',
    '-0',
    '1.50',
    '2024-02-30',
    '2024-01-05T10:00:00Z',
    'TRUE',
    '1234567890123456',
    '0.1234567891',
    '+5',
    '00.5',
    '0.5',
    '99999999999999.9',
    '999999999999999.9',
  ]
  for (const v of values) {
    const path = join(dir, `${values.indexOf(v)}.csv`)
    writeFileSync(path, `x\n${v}\n`)
    const { table } = await loadCsv(path)
    const expected = classifyText(v).kind
    t.equal(table.columns[0].type, expected === 'null' ? 'string' : expected, `${v} is ${expected}`)
  }
})
