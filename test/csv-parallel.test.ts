// The parallel CSV load: a worker thread parses the part of the file after a split. Pinned here:
// splits inside quoted newlines, types that widen differently on each side, errors on the real
// line, aborts, a worker that fails or cannot start, a file replaced during the load, and the
// worker starting under each way the service runs TypeScript. The random differential test is in csv-fast.test.ts.

import { execFileSync } from 'node:child_process'
import { renameSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import t, { type Test } from 'tap'
import { type CsvLoadOptions, loadCsv } from '../src/engine/load/csv/index.js'
import { endPartHelper, type PartHelper, partHelper } from '../src/engine/load/csv/parallel.js'
import { rowsAsJson } from '../src/engine/data/table.js'

function file(t: Test, text: string): string {
  const path = join(t.testdir(), 'f.csv')
  writeFileSync(path, text)
  return path
}

const split = (splitAt: number): CsvLoadOptions => ({ parallel: { minBytes: 0, splitAt } })

async function sequentialAndSplit(path: string, splitAt: number) {
  const seq = await loadCsv(path, { parallel: false })
  const par = await loadCsv(path, split(splitAt))
  return { seq, par }
}

const typeOf = (cols: { name: string; type: string; scale?: number }[]) =>
  cols.map((c) => (c.scale === undefined ? c.type : `${c.type}(${c.scale})`))

t.test('a split inside a quoted newline is refused; a split at a row boundary is used', async (t) => {
  const text = 'id,note\n1,"first\nsecond"\n2,"third\n\nfourth"\n3,plain\n'
  const path = file(t, text)
  const inQuotes = text.indexOf('second') - 1 // the newline inside the first quoted field
  const atRow = text.indexOf('2,"third') - 1 // the newline that ends row 1
  const expected = rowsAsJson((await loadCsv(path, { parallel: false })).table)
  t.same(expected, [
    { id: 1, note: 'first\nsecond' },
    { id: 2, note: 'third\n\nfourth' },
    { id: 3, note: 'plain' },
  ])
  const refused = await loadCsv(path, split(inQuotes))
  t.equal(refused.parts, 1, 'the first part did not end at the split: this thread parsed on')
  t.same(rowsAsJson(refused.table), expected)
  const used = await loadCsv(path, split(atRow))
  t.equal(used.parts, 2, 'the worker parsed the rows after the split')
  t.same(rowsAsJson(used.table), expected)
  for (let at = 0; at < text.length; at++) {
    t.same(rowsAsJson((await loadCsv(path, split(at))).table), expected, `split at ${at}`)
  }
})

t.test('types widen across the split as they do over the whole file', async (t) => {
  const before = Array.from({ length: 50 }, (_, i) => `${i},${i},2024-01-0${(i % 9) + 1},${i},${i % 2 ? 'true' : ''}`)
  const after = ['50,1.5,2024-01-05T10:00:00Z,7.125,false', '51,2.25,2024-01-06,1e3,TRUE', '52,,,8,']
  const text = `id,amount,at,mixed,flag\n${[...before, ...after].join('\n')}\n`
  const path = file(t, text)
  const { seq, par } = await sequentialAndSplit(path, text.indexOf('\n50,') + 1)
  t.equal(par.parts, 2)
  t.same(typeOf(par.table.columns), ['integer', 'decimal(2)', 'timestamp', 'float', 'boolean'])
  t.same(par.table.columns, seq.table.columns)
  t.same(rowsAsJson(par.table), rowsAsJson(seq.table))
  const rows = rowsAsJson(par.table)
  t.same(rows[3], { id: 3, amount: '3.00', at: '2024-01-04T00:00:00.000Z', mixed: 3, flag: true })
  t.same(rows[52], { id: 52, amount: null, at: null, mixed: 8, flag: null })
  t.equal(par.table.data[1].type === 'decimal' && par.table.data[1].values[1], 100, 'units rescaled to scale 2')
})

// Large enough that the columns have room for both parts (a few thousand rows): the worker parses
// into the loader's own arrays after its share, and the join moves the part down (columns.ts,
// reserveTail). Each way out of that room must give the sequential result.
t.test('a part parsed into the arrays of the loader joins as the sequential parse does', async (t) => {
  const row = (i: number, note: string) =>
    `${i},ACC-${i % 97},${(i % 5000) / 100},2024-01-${String((i % 28) + 1).padStart(2, '0')},${i % 3 ? 'true' : 'false'},${note}`
  const header = 'id,account,amount,day,flag,note\n'
  const cases: [string, string[]][] = [
    ['both parts in their room', Array.from({ length: 6000 }, (_, i) => row(i, `n${i}`))],
    [
      // the sample's long rows promise few rows per byte: this thread's share outgrows its room
      "this thread's part outgrows its room",
      [
        ...Array.from({ length: 2100 }, (_, i) => row(i, 'x'.repeat(120))),
        ...Array.from({ length: 8000 }, (_, i) => row(2100 + i, '')),
      ],
    ],
    [
      "the worker's part outgrows its room",
      [
        ...Array.from({ length: 5000 }, (_, i) => row(i, 'x'.repeat(40))),
        ...Array.from({ length: 9000 }, (_, i) => `${5000 + i},A,1,2024-01-02,true,`),
      ],
    ],
    [
      // after the split: a float among the decimals, a timestamp among the dates, NULLs everywhere
      'the worker part widens and has NULLs',
      [
        ...Array.from({ length: 4000 }, (_, i) => row(i, `n${i}`)),
        ...Array.from({ length: 4000 }, (_, i) =>
          i === 10 ? `${4000 + i},,1e-3,2024-01-02T10:00:00Z,,` : i % 7 ? row(4000 + i, `m${i}`) : `${4000 + i},,,,,`,
        ),
      ],
    ],
  ]
  for (const [name, rows] of cases) {
    const text = `${header}${rows.join('\n')}\n`
    const path = file(t, text)
    const { seq, par } = await sequentialAndSplit(path, Math.floor(text.length / 2))
    t.equal(par.parts, 2, `${name}: parsed in two parts`)
    t.same(par.table.columns, seq.table.columns, `${name}: types`)
    t.same(rowsAsJson(par.table), rowsAsJson(seq.table), `${name}: rows`)
    if (name === 'both parts in their room') t.equal(par.placed, 6, 'every column moved, none copied')
    else t.ok(par.placed < 6, `${name}: copied where it left its room (${par.placed} moved)`)
  }
})

t.test('a column that is text only after the split is read again as text', async (t) => {
  const rows = Array.from({ length: 40 }, (_, i) => `${i},${i * 2}`)
  const text = `id,code\n${rows.join('\n')}\n40,A-7\n41,0099\n`
  const { seq, par } = await sequentialAndSplit(file(t, text), text.indexOf('\n30,') + 1)
  t.equal(par.parts, 2)
  t.same(typeOf(par.table.columns), ['integer', 'string'])
  t.same(rowsAsJson(par.table), rowsAsJson(seq.table))
  t.same(rowsAsJson(par.table).slice(-2), [
    { id: 40, code: 'A-7' },
    { id: 41, code: '0099' },
  ])
})

t.test('errors in the worker part carry the file line', async (t) => {
  const head = 'a,b\n1,"two\nlines"\n' + Array.from({ length: 30 }, (_, i) => `${i},${i}`).join('\n')
  const fieldCount = file(t, `${head}\n5,6,7\n`)
  const splitAt = head.indexOf('\n20,') + 1
  for (const opts of [{ parallel: false as const }, split(splitAt)]) {
    await t.rejects(loadCsv(fieldCount, opts), { code: 'malformed_file', message: /^line 34: expected 2 fields/ })
  }
  const quote = file(t, `${head}\n8,"open\n9,9\n`)
  for (const opts of [{ parallel: false as const }, split(splitAt)]) {
    await t.rejects(loadCsv(quote, opts), { code: 'malformed_file', message: /^line 34: unterminated quoted field/ })
  }
  // an error before the split wins over one after it, as in a sequential read
  const both = file(t, `a,b\n1,2,3\n${Array.from({ length: 30 }, () => '1,2').join('\n')}\n4\n`)
  await t.rejects(loadCsv(both, split(40)), { message: /^line 2: expected 2 fields, found 3/ })
})

t.test('an aborted parallel load rejects, and the next load still uses the worker', async (t) => {
  const rows = Array.from({ length: 300_000 }, (_, i) => `${i},ACC-${i % 977},${(i % 5000) / 100},2024-01-05`)
  const path = file(t, `id,account,amount,day\n${rows.join('\n')}\n`)
  const controller = new AbortController()
  setTimeout(() => controller.abort(), 20)
  await t.rejects(loadCsv(path, { ...split(4_000_000), chunkSize: 64 * 1024, signal: controller.signal }), {
    name: 'AbortError',
  })
  const after = await loadCsv(path, split(4_000_000))
  t.equal(after.parts, 2)
  t.equal(after.rows, 300_000)
})

t.test('an ended worker is replaced by the next load', async (t) => {
  const rows = Array.from({ length: 1000 }, (_, i) => `${i},ACC-${i % 977},${(i % 5000) / 100},2024-01-05`)
  const path = file(t, `id,account,amount,day\n${rows.join('\n')}\n`)
  const first = await loadCsv(path, split(10_000))
  t.equal(first.parts, 2)
  const ended = partHelper()
  endPartHelper()
  t.equal(await ended.ready(), false, 'the idle worker ended')
  t.not(partHelper(), ended, 'the next load has another')
  const again = await loadCsv(path, split(10_000))
  t.equal(again.parts, 2, 'which parses its part')
  t.same(rowsAsJson(again.table), rowsAsJson(first.table))
})

t.test('a worker that fails or cannot start leaves the load on this thread', async (t) => {
  const text = `id,v\n${Array.from({ length: 100 }, (_, i) => `${i},${i / 4}`).join('\n')}\n`
  const path = file(t, text)
  const expected = rowsAsJson((await loadCsv(path, { parallel: false })).table)
  const failing = {
    idle: true,
    ready: async () => true,
    run: (job: { start: number }) => ({
      start: job.start,
      whenDone: async () => ({ type: 'failed', message: 'the worker exited' }),
      cancel: () => {},
    }),
  }
  const dead = { idle: false, ready: async () => false, run: () => null }
  for (const helper of [failing, dead]) {
    const { loadCsv: load } = await t.mockImport<typeof import('../src/engine/load/csv/index.js')>(
      '../src/engine/load/csv/index.js',
      {
        '../src/engine/load/csv/parallel.js': {
          ...(await import('../src/engine/load/csv/parallel.js')),
          partHelper: () => helper as unknown as PartHelper,
        },
      },
    )
    const r = await load(path, split(text.length / 2))
    t.equal(r.parts, 1)
    t.same(rowsAsJson(r.table), expected)
  }
})

t.test('a file replaced during the load is read whole from the handle this thread opened', async (t) => {
  const dir = t.testdir()
  const path = join(dir, 'f.csv')
  const original = `id,v\n${Array.from({ length: 100 }, (_, i) => `${i},a${i}`).join('\n')}\n`
  writeFileSync(path, original)
  writeFileSync(join(dir, 'new.csv'), `id,v\n${Array.from({ length: 100 }, (_, i) => `${i},b${i}`).join('\n')}\n`)
  const parallel = await import('../src/engine/load/csv/parallel.js')
  const real = parallel.partHelper()
  // the real worker, asked to start only once another file has taken the path
  const swapping = {
    get idle() {
      return real.idle
    },
    ready: async () => {
      renameSync(join(dir, 'new.csv'), path)
      return real.ready()
    },
    run: (job: Parameters<PartHelper['run']>[0]) => real.run(job),
  }
  const { loadCsv: load } = await t.mockImport<typeof import('../src/engine/load/csv/index.js')>(
    '../src/engine/load/csv/index.js',
    { '../src/engine/load/csv/parallel.js': { ...parallel, partHelper: () => swapping as unknown as PartHelper } },
  )
  const r = await load(path, split(original.length / 2))
  t.equal(r.parts, 1, 'the worker found another file at the path and declined')
  t.same(rowsAsJson(r.table).slice(-1), [{ id: 99, v: 'a99' }])
})

t.test('the worker starts however the service runs TypeScript', async (t) => {
  const dir = t.testdir()
  const csv = join(dir, 'f.csv')
  writeFileSync(csv, `a,b\n${Array.from({ length: 1000 }, (_, i) => `${i},x${i}`).join('\n')}\n`)
  const loader = resolve('src/engine/load/csv/index.ts')
  const body = `const r = await loadCsv(process.argv[2], { parallel: { minBytes: 0, splitAt: 4000 } })
console.log(JSON.stringify({ parts: r.parts, rows: r.rows }))`
  // like bin/concord.js: tsx registered from code
  writeFileSync(
    join(dir, 'registered.mjs'),
    `import { register } from 'tsx/esm/api'\nregister()\nconst { loadCsv } = await import(${JSON.stringify(loader)})\n${body}\n`,
  )
  // like the benchmarks: node --import tsx
  writeFileSync(join(dir, 'imported.ts'), `import { loadCsv } from ${JSON.stringify(loader)}\n${body}\n`)
  for (const args of [[join(dir, 'registered.mjs')], ['--import', 'tsx', join(dir, 'imported.ts')]]) {
    const out = execFileSync(process.execPath, [...args, csv], {
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: '' },
    })
    t.same(JSON.parse(out), { parts: 2, rows: 1000 }, args.join(' '))
  }
})
