// CSV loading: delimiters, quoting, BOM, trimming, NULLs, type inference, errors with lines,
// and the real datasets.

import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { loadCsv } from '../src/engine/load/csv/index.js'
import { rowsAsJson } from '../src/engine/data/table.js'
import { datasetsDir, datasetsSkip } from './helpers/datasets.js'

function file(t: Test, text: string): string {
  const dir = t.testdir()
  const path = join(dir, 'f.csv')
  writeFileSync(path, text)
  return path
}

const typeOf = (cols: { name: string; type: string; scale?: number }[]) =>
  Object.fromEntries(cols.map((c) => [c.name, c.scale === undefined ? c.type : `${c.type}(${c.scale})`]))

t.test('quoting, BOM, CRLF, trimming and NULLs', async (t) => {
  const path = file(
    t,
    '\uFEFF id , name ,amount\r\n1,"Smith, ""Jo""",10.5\r\n2, "multi\nline" ,\r\n3,  plain  ,-7\r\n\r\n',
  )
  const { table, delimiter } = await loadCsv(path)
  t.equal(delimiter, ',')
  t.same(typeOf(table.columns), { id: 'integer', name: 'string', amount: 'decimal(1)' })
  t.same(rowsAsJson(table), [
    { id: 1, name: 'Smith, "Jo"', amount: '10.5' },
    { id: 2, name: 'multi\nline', amount: null },
    { id: 3, name: 'plain', amount: '-7.0' },
  ])
})

t.test('semicolon and tab delimiters are detected', async (t) => {
  const semi = await loadCsv(file(t, 'a;b\n"1;2";3\n4;5\n'))
  t.equal(semi.delimiter, ';')
  t.same(rowsAsJson(semi.table), [
    { a: '1;2', b: 3 },
    { a: '4', b: 5 },
  ])
  const tab = await loadCsv(file(t, 'a\tb\tc\n1\t2024-01-05\ttrue\n'))
  t.equal(tab.delimiter, '\t')
  t.same(typeOf(tab.table.columns), { a: 'integer', b: 'date', c: 'boolean' })
})

t.test('type inference widens and keeps codes as strings', async (t) => {
  const { table } = await loadCsv(
    file(
      t,
      'int,dec,fl,code,ts,mixed,big,blank,dup,dup\n1,1,1,007,2024-01-05,2024-01-05,12345678901234567,,a,b\n2,2.125,1e3,8,2024-01-05T10:00:00Z,x,1,,c,d\n',
    ),
  )
  t.same(typeOf(table.columns), {
    int: 'integer',
    dec: 'decimal(3)',
    fl: 'float',
    code: 'string',
    ts: 'timestamp',
    mixed: 'string',
    big: 'string',
    blank: 'string',
    dup: 'string',
    dup_2: 'string',
  })
  const rows = rowsAsJson(table)
  t.equal(rows[0].dec, '1.000')
  t.equal(rows[0].code, '007')
  t.equal(rows[0].big, '12345678901234567', 'no digit of a long id is lost')
  t.equal(rows[0].ts, '2024-01-05T00:00:00.000Z')
})

t.test('a decimal that outgrows 15 digits is a float if a float comes, else text', async (t) => {
  // after the 2000 sampled rows, so only the columns see them
  const ints = Array.from({ length: 2100 }, () => '12345678901234').join('\n')
  const withFloat = await loadCsv(file(t, `x\n${ints}\n1.25\n1e3\n`))
  t.same(typeOf(withFloat.table.columns), { x: 'float' })
  t.same(rowsAsJson(withFloat.table).slice(-3), [{ x: 12345678901234 }, { x: 1.25 }, { x: 1000 }])
  const without = await loadCsv(file(t, `x\n${ints}\n1.25\n`))
  t.same(typeOf(without.table.columns), { x: 'string' })
  t.same(rowsAsJson(without.table).slice(-1), [{ x: '1.25' }])
})

t.test('malformed files are refused with the line', async (t) => {
  await t.rejects(loadCsv(file(t, 'a,b\n1,2\n3,4,5\n')), {
    code: 'malformed_file',
    message: /line 3: expected 2 fields, found 3/,
  })
  await t.rejects(loadCsv(file(t, 'a,b\n1,"open\n2,3\n')), {
    code: 'malformed_file',
    message: /unterminated quoted field/,
  })
  await t.rejects(loadCsv(file(t, '')), { code: 'empty_file' })
  await t.rejects(loadCsv('/nonexistent/file.csv'), { code: 'unreadable_file' })
})

t.test('real datasets load with the right types and counts', { skip: datasetsSkip }, async (t) => {
  const ledger = await loadCsv(join(datasetsDir, 'acquirer-settlement/ledger-midaz.csv'))
  t.equal(ledger.table.length, 1000)
  const lt = typeOf(ledger.table.columns)
  t.equal(lt.amount, 'decimal(2)')
  t.equal(lt.occurred_at, 'timestamp')
  t.equal(lt.ledger_tx_id, 'string')

  const febrl = await loadCsv(join(datasetsDir, 'febrl/dataset4a.csv'))
  t.equal(febrl.table.length, 5000)
  t.same(
    febrl.table.columns.map((c) => c.name),
    [
      'rec_id',
      'given_name',
      'surname',
      'street_number',
      'address_1',
      'address_2',
      'suburb',
      'postcode',
      'state',
      'date_of_birth',
      'soc_sec_id',
    ],
    'header names are trimmed despite the spaces after commas',
  )
  t.equal(rowsAsJson(febrl.table, 1)[0].given_name, 'michaela')

  const invoices = await loadCsv(join(datasetsDir, 'kalla/invoices.csv'))
  t.equal(invoices.table.length, 15)
  const it = typeOf(invoices.table.columns)
  t.equal(it.amount, 'decimal(2)')
  t.equal(it.invoice_date, 'date')
})
