// The byte-level CSV loader against the reference (csv-parse + generic builders) on random
// documents: same columns, types and values, or the same error code. Small random chunk sizes
// put rows, quotes and escapes across read boundaries. The parallel load (a worker thread parses
// the part after a forced split) must equal the sequential one exactly, errors and lines included.

import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import fc from 'fast-check'
import t from 'tap'
import { classifyText } from '../src/engine/load/infer.js'
import { type CsvLoadOptions, loadCsv } from '../src/engine/load/csv/index.js'
import { rowsAsJson, type Table } from '../src/engine/data/table.js'
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

// Columns mostly of one type family, so that typed columns are common and the two parts of a
// split widen differently: scales, integer → decimal → float, date → timestamp, overflowing
// digits, and now and then a value that makes the column text.
const families = {
  integer: fc.integer({ min: -100000, max: 100000 }).map(String),
  decimal: fc
    .tuple(fc.integer({ min: -10000000, max: 10000000 }), fc.integer({ min: 0, max: 4 }))
    .map(([n, s]) => (n / 10 ** s).toFixed(s)),
  wide: fc.constantFrom('123456789012345', '-99999999999999', '0.125', '7', '1e3'),
  date: fc.constantFrom('2024-01-05', '2023-12-31', '2024-02-29', '2024-01-05T10:00:00Z', '2024-01-05 10:00'),
  boolean: fc.constantFrom('true', 'FALSE', 'True'),
  any: valueArb,
}
const familyArb = fc.constantFrom(...(Object.keys(families) as (keyof typeof families)[]))
const fieldArb = (family: keyof typeof families) =>
  fc.oneof(
    { weight: 16, arbitrary: families[family] },
    { weight: 2, arbitrary: fc.constant('') },
    { weight: 1, arbitrary: valueArb },
  )

type Corruption = 'extra-field' | 'missing-field' | 'stray-quote' | 'unterminated'

const splitDocArb = fc
  .record({
    delimiter: fc.constantFrom(',', ';', '\t'),
    newline: fc.constantFrom('\n', '\r\n'),
    families: fc.array(familyArb, { minLength: 1, maxLength: 4 }),
    quoteAll: fc.boolean(),
    trailingNewline: fc.boolean(),
  })
  .chain((shape) =>
    fc.record({
      shape: fc.constant(shape),
      rows: fc.array(fc.tuple(...shape.families.map(fieldArb)), { minLength: 1, maxLength: 60 }),
      chunkSize: fc.integer({ min: 4, max: 200 }),
      splitPercent: fc.integer({ min: 0, max: 100 }),
      corruption: fc.oneof(
        { weight: 3, arbitrary: fc.constant(null) },
        {
          weight: 1,
          arbitrary: fc.record({
            row: fc.nat(),
            how: fc.constantFrom<Corruption>('extra-field', 'missing-field', 'stray-quote', 'unterminated'),
          }),
        },
      ),
    }),
  )

type Outcome =
  | { ok: true; parts?: number; columns: unknown; rows: unknown; layout?: unknown }
  | { ok: false; code: string; message?: string }

async function outcome(load: Promise<{ table: Table; parts?: number }>): Promise<Outcome> {
  try {
    const r = await load
    // how the columns are stored, beyond their values: NULL bitmaps, scales, lengths
    const layout = r.table.data.map((c) => [c.type, c.length, c.valid === null, c.type === 'decimal' ? c.scale : null])
    return { ok: true, parts: r.parts, columns: r.table.columns, rows: rowsAsJson(r.table), layout }
  } catch (e) {
    const err = e as { code?: string; message: string }
    return { ok: false, code: err.code ?? err.message, message: err.message }
  }
}

t.test('a load split across a worker thread equals the sequential load and csv-parse', async (t) => {
  const dir = t.testdir()
  let n = 0
  let split = 0
  let lateErrors = 0
  await fc.assert(
    fc.asyncProperty(splitDocArb, async ({ shape, rows, chunkSize, splitPercent, corruption }) => {
      const { delimiter, newline } = shape
      const columns = shape.families.length
      const body = rows.map((r) => r.slice()).filter((r) => r.some((v) => v.trim() !== '') || columns > 1)
      const enc = (v: string) => (shape.quoteAll ? `"${v.replace(/"/g, '""')}"` : encodeField(v, delimiter))
      const lines = [
        shape.families.map((_, k) => `c${k}`).join(delimiter),
        ...body.map((r, i) => {
          const bad = corruption && i === corruption.row % body.length ? corruption.how : null
          const fields = bad === 'missing-field' && columns > 1 ? r.slice(0, -1) : r
          let line = fields.map(enc).join(delimiter)
          if (bad === 'extra-field') line += `${delimiter}x`
          if (bad === 'stray-quote') line = `x"${line}`
          if (bad === 'unterminated') line += `${delimiter}"open`
          return line
        }),
      ]
      const text = lines.join(newline) + (shape.trailingNewline ? newline : '')
      const path = join(dir, `split${n++}.csv`)
      writeFileSync(path, text)
      const base: CsvLoadOptions = { delimiter, chunkSize, sampleBytes: chunkSize }
      const splitAt = Math.floor((Buffer.byteLength(text) * splitPercent) / 100)
      const seq = await outcome(loadCsv(path, { ...base, parallel: false }))
      const par = await outcome(loadCsv(path, { ...base, parallel: { minBytes: 0, splitAt } }))
      const ref = await outcome(loadCsvReference(path, { delimiter }))
      if (par.ok && par.parts === 2) split++
      // an error on a line after the split was found by the worker (unless the split was void)
      const splitLine = text.slice(0, splitAt).split('\n').length
      if (!seq.ok && Number(/line (\d+)/.exec(seq.message ?? '')?.[1]) > splitLine + 1) lateErrors++
      const strip = (o: Outcome) => (o.ok ? { ...o, parts: undefined } : o)
      if (JSON.stringify(strip(par)) !== JSON.stringify(strip(seq))) {
        throw new Error(
          `parallel and sequential differ on ${JSON.stringify(text)} split at ${splitAt}:\npar ${JSON.stringify(par)}\nseq ${JSON.stringify(seq)}`,
        )
      }
      const plain = (o: Outcome) => (o.ok ? { columns: o.columns, rows: o.rows } : { code: o.code })
      if (JSON.stringify(plain(seq)) !== JSON.stringify(plain(ref))) {
        throw new Error(
          `fast and reference differ on ${JSON.stringify(text)}:\nfast ${JSON.stringify(seq)}\nref  ${JSON.stringify(ref)}`,
        )
      }
    }),
    { numRuns: 400 },
  )
  // the property means little unless the worker really parsed parts and errors were compared
  t.ok(split >= 60, `the worker parsed a part in ${split} of 400 loads`)
  t.ok(lateErrors >= 10, `${lateErrors} of 400 documents were malformed after the split`)
})
