// `concord reconcile` as a user runs it: a child process on real files, no server. Its counts
// equal those of the same recipe run through REST, and --out writes the four result files.

import { execFile } from 'node:child_process'
import { readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { tableFromIPC } from 'apache-arrow'
import { parse } from 'csv-parse/sync'
import t from 'tap'
import { datasetsDir, datasetsSkip, testApp } from './helpers/app.js'
import { kallaRecipe } from './helpers/recipes.js'
import { waitForRun } from './helpers/runs.js'

const run = promisify(execFile)
const bin = new URL('../bin/concord.js', import.meta.url).pathname

const recipe = kallaRecipe

const counts = (s: {
  matches: number
  ambiguous: number
  left: { matched: number; unmatched: number; amount: string }
  right: { matched: number; unmatched: number; amount: string }
  passes: { name: string; matches: number }[]
}) => ({
  matches: s.matches,
  ambiguous: s.ambiguous,
  left: [s.left.matched, s.left.unmatched, s.left.amount],
  right: [s.right.matched, s.right.unmatched, s.right.amount],
  passes: s.passes.map((p) => [p.name, p.matches]),
})

t.test(
  'concord reconcile --json gives the counts of the same recipe through REST',
  { skip: datasetsSkip },
  async (t) => {
    const dir = t.testdir({ 'recipe.json': JSON.stringify(recipe) })
    const env = { ...process.env, DATA_DIR: join(dir, 'data') }
    const left = join(datasetsDir, 'kalla/generated/invoices.csv')
    const right = join(datasetsDir, 'kalla/generated/payments.csv')
    const out = join(dir, 'out')
    const cli = await run(
      process.execPath,
      [
        bin,
        'reconcile',
        '--left',
        left,
        '--right',
        right,
        '--recipe',
        join(dir, 'recipe.json'),
        '--json',
        '--out',
        out,
      ],
      { env },
    )
    const summary = JSON.parse(cli.stdout)

    const { app } = await testApp(t, { dataDir: datasetsDir, env: { RUNS_DIR: join(dir, 'runs') } })
    for (const [alias, path] of [
      ['invoices', 'kalla/generated/invoices.csv'],
      ['payments', 'kalla/generated/payments.csv'],
    ])
      await app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type: 'csv', path } })
    const started = (await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe } })).json()
    const rest = await waitForRun(app, started.id)
    t.same(counts(summary), counts(rest.summary))
    t.same(counts(summary).passes, [
      ['exact', 30],
      ['tolerance', 7],
      ['split', 2],
    ])

    t.same((await readdir(out)).sort(), ['ambiguous.csv', 'matches.csv', 'unmatched-left.csv', 'unmatched-right.csv'])
    const matches = parse(await readFile(join(out, 'matches.csv')), { columns: true }) as Record<string, string>[]
    const unmatchedLeft = parse(await readFile(join(out, 'unmatched-left.csv')), { columns: true }) as Record<
      string,
      string
    >[]
    t.equal(matches.length, 39)
    t.equal(unmatchedLeft.length, 11)
    t.equal(unmatchedLeft[0]['l.invoice_id'], 'INV-000040')

    const arrowOut = join(dir, 'arrow')
    await run(
      process.execPath,
      [
        bin,
        'reconcile',
        '--left',
        left,
        '--right',
        right,
        '--recipe',
        join(dir, 'recipe.json'),
        '--out',
        arrowOut,
        '--format',
        'arrow',
      ],
      { env },
    )
    t.equal(tableFromIPC(await readFile(join(arrowOut, 'unmatched-right.arrow'))).numRows, 5)
  },
)

t.test('concord reconcile: parameters, a summary table, and clear errors with exit codes', async (t) => {
  const dir = t.testdir({
    'bank.csv': 'txn_id,amount,day\nT1,10.00,2024-01-05\nT2,20.00,2024-02-05\n',
    'inv.json': JSON.stringify([
      { id: 'I1', total: '10.00', day: '2024-01-04' },
      { id: 'I2', total: '20.01', day: '2024-02-05' },
    ]),
  })
  const paramRecipe = {
    name: 'bank-vs-inv',
    left: { source: 'bank', key: ['txn_id'] },
    right: { source: 'inv', key: ['id'] },
    passes: [
      {
        name: 'by_amount',
        pattern: '1:1',
        when: "ABS(l.amount - r.total) <= 0.01 AND r.day BETWEEN l.day - INTERVAL '3 days' AND l.day",
      },
    ],
    params: [{ name: 'from', type: 'date', left: { column: 'day', op: 'gte' }, right: { column: 'day', op: 'gte' } }],
  }
  await writeFile(join(dir, 'recipe.json'), JSON.stringify(paramRecipe))
  const env = { ...process.env, DATA_DIR: join(dir, 'data') }
  const args = [
    'reconcile',
    '--left',
    join(dir, 'bank.csv'),
    '--right',
    join(dir, 'inv.json'),
    '--recipe',
    join(dir, 'recipe.json'),
  ]
  const table = await run(process.execPath, [bin, ...args, '--param', 'from=2024-02-01'], { env })
  t.match(table.stdout, /recipe bank-vs-inv: completed, 1 matches/)
  t.match(table.stdout, /left\s+1\s+1\s+0\s+20\.00/)

  const missing = await run(process.execPath, [bin, ...args], { env }).catch((e) => e)
  t.equal(missing.code, 2)
  t.match(missing.stderr, /needs a value for "from"/)
  const bad = await run(process.execPath, [bin, ...args, '--param', 'from=yesterday'], { env }).catch((e) => e)
  t.equal(bad.code, 2)
  t.match(bad.stderr, /"yesterday" is not a date/)
  const noFile = await run(
    process.execPath,
    [
      bin,
      'reconcile',
      '--left',
      'nope.csv',
      '--right',
      'x.csv',
      '--recipe',
      join(dir, 'recipe.json'),
      '--param',
      'from=2024-01-01',
    ],
    { env },
  ).catch((e) => e)
  t.equal(noFile.code, 2)
  t.match(noFile.stderr, /no file "nope.csv"/)
  const badRecipe = { ...paramRecipe, passes: [{ name: 'p', pattern: '1:1', when: 'l.amount = r.totl' }] }
  await writeFile(join(dir, 'bad.json'), JSON.stringify(badRecipe))
  const invalid = await run(
    process.execPath,
    [
      bin,
      'reconcile',
      '--left',
      join(dir, 'bank.csv'),
      '--right',
      join(dir, 'inv.json'),
      '--recipe',
      join(dir, 'bad.json'),
      '--param',
      'from=2024-01-01',
    ],
    { env },
  ).catch((e) => e)
  t.equal(invalid.code, 2)
  t.match(invalid.stderr, /pass p: right source has no column "totl" \(did you mean r\.total\?\)/)
})
