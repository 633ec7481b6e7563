// writeArrowFile (src/runs/arrow-file.ts) streams a table's record batches to a file instead of
// joining them in memory first: the file must hold the very bytes Arrow's tableToIPC makes, in
// both IPC formats, for batches that are slices of larger columns (strings with rebased offsets,
// bitmaps, dictionaries, lists), for a table big enough that the chunks go out in many writes,
// and for a table with no rows.

import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { makeVector, Table as ArrowTable, tableFromIPC, tableToIPC, vectorFromArray } from 'apache-arrow'
import t from 'tap'
import { arrowData, stringColumn, stringListVector } from '../src/engine/data/arrow.js'
import { prng } from '../src/engine/data/prng.js'
import { writeArrowFile } from '../src/runs/arrow-file.js'

const dir = await mkdtemp(join(tmpdir(), 'concord-arrow-file-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))

/** `rows` rows of awkward columns, as batches of `batchRows` sliced from one table (as results.ts does). */
function table(rows: number, batchRows: number): ArrowTable {
  const rnd = prng(11)
  const words = ['plain', 'café ☕', '', 'with, comma', 'x'.repeat(40)]
  const text = Array.from({ length: rows }, (_, i) => (i % 17 === 0 ? null : `${words[i % words.length]}-${i}`))
  const starts = new Int32Array(rows + 1).map((_, i) => i * 2)
  const keys = stringColumn(Array.from({ length: rows * 2 }, (_, i) => `k${i}`))
  const whole = new ArrowTable({
    text: makeVector(arrowData(stringColumn(text))),
    amount: makeVector(
      arrowData({ type: 'float', length: rows, valid: null, values: Float64Array.from(text, () => rnd()) }),
    ),
    pass: vectorFromArray(Array.from({ length: rows }, (_, i) => ['exact', 'window'][i % 2])),
    flag: vectorFromArray(Array.from({ length: rows }, (_, i) => (i % 5 === 0 ? null : i % 3 === 0))),
    keys: stringListVector(arrowData(keys), starts),
  })
  if (rows <= batchRows) return whole
  const batches = []
  for (let at = 0; at < rows; at += batchRows) batches.push(...whole.slice(at, at + batchRows).batches)
  return new ArrowTable(batches)
}

for (const format of ['file', 'stream'] as const) {
  t.test(`${format}: the bytes tableToIPC makes`, async (t) => {
    for (const [rows, batchRows] of [
      [0, 10],
      [1, 10],
      [1000, 1000],
      [10_007, 1024],
      // ~1,000 chunks and ~20 MB: several writes of each limit
      [300_000, 4096],
    ]) {
      const tbl = table(rows, batchRows)
      const path = join(dir, `${format}-${rows}.arrow`)
      writeArrowFile(path, tbl, format)
      const written = await readFile(path)
      const expected = tableToIPC(tbl, format)
      t.equal(written.byteLength, expected.byteLength, `${rows} rows: as many bytes`)
      t.ok(Buffer.from(expected).equals(written), `${rows} rows: the same bytes`)
      const back = tableFromIPC(written)
      t.equal(back.numRows, rows, `${rows} rows read back`)
      if (rows > 0) t.same(back.get(rows - 1)?.toJSON(), tbl.get(rows - 1)?.toJSON(), 'the last row reads back')
    }
  })
}
