// JSON loading: a top-level array or NDJSON, numbers written as strings, long numbers kept exact,
// and errors that name the line without naming the server's paths.

import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { loadJson, quoteLongNumbers } from '../src/engine/load/json.js'
import { rowsAsJson } from '../src/engine/data/table.js'

function file(t: Test, name: string, text: string): string {
  const path = join(t.testdir(), name)
  writeFileSync(path, text)
  return path
}

const typeOf = (cols: { name: string; type: string; scale?: number }[]) =>
  Object.fromEntries(cols.map((c) => [c.name, c.scale === undefined ? c.type : `${c.type}(${c.scale})`]))

t.test('NDJSON loads like an array: string decimals are exact decimals, missing keys are NULL', async (t) => {
  const rows = [
    { id: 1, amount: '214.16', booked: '2024-01-05', paid: true },
    { id: 2, amount: '0.5', booked: '2024-01-06', paid: false, note: 'late' },
  ]
  const ndjson = await loadJson(file(t, 'r.ndjson', `\uFEFF${rows.map((r) => JSON.stringify(r)).join('\n')}\n\n`))
  const array = await loadJson(file(t, 'r.json', JSON.stringify(rows, null, 2)))
  for (const table of [ndjson, array]) {
    t.same(typeOf(table.columns), {
      id: 'integer',
      amount: 'decimal(2)',
      booked: 'date',
      paid: 'boolean',
      note: 'string',
    })
    t.same(rowsAsJson(table), [
      { id: 1, amount: '214.16', booked: '2024-01-05', paid: true, note: null },
      { id: 2, amount: '0.50', booked: '2024-01-06', paid: false, note: 'late' },
    ])
  }
})

t.test('numbers of more than 15 significant digits keep every digit', async (t) => {
  const table = await loadJson(
    file(
      t,
      'big.json',
      '[{"acct": 12345678901234567890, "amt": 1234567890.1234567, "x": 1.5, "s": "12345678901234567891"}]',
    ),
  )
  t.same(rowsAsJson(table), [
    { acct: '12345678901234567890', amt: '1234567890.1234567', x: '1.5', s: '12345678901234567891' },
  ])
  t.same(typeOf(table.columns), { acct: 'string', amt: 'string', x: 'decimal(1)', s: 'string' })
  // digits inside strings, exponents and short numbers are left as written
  t.equal(
    quoteLongNumbers('{"a":"12345678901234567890","b":1.2345678901234567e5,"c":12}'),
    '{"a":"12345678901234567890","b":1.2345678901234567e5,"c":12}',
  )
  t.equal(quoteLongNumbers('[-12345678901234567.5]'), '["-12345678901234567.5"]')
})

t.test('errors: the line of a malformed file; an unreadable file without its server path', async (t) => {
  await t.rejects(loadJson(file(t, 'bad.json', '[{"a": 1},\n{"a": 2,,}]')), {
    code: 'malformed_file',
    message: /^line 2: /,
  })
  await t.rejects(loadJson(file(t, 'bad.ndjson', '{"a":1}\n[1]\n')), {
    code: 'malformed_file',
    message: 'line 2: not a JSON object',
  })
  await t.rejects(loadJson(file(t, 'empty.ndjson', '\n\n')), { code: 'empty_file' })
  const missing = join(t.testdir(), 'nope.json')
  const err = await loadJson(missing).catch((e: Error) => e)
  t.match(err, { code: 'unreadable_file', message: 'cannot read the file (ENOENT)' })
  t.notMatch((err as Error).message, missing)
})
