// Ambiguous matches are a result set of their own: the matches export holds the clean matches
// only, `set=ambiguous` the groups held for review, and `concord reconcile --out` writes each to
// its own file. A page of matches lists both in match order unless `ambiguous` picks one; the
// counts agree with the summary. A record `prefer` passed over says whom it tied with.

import { readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { type Table as ArrowTable, tableFromIPC, tableToIPC } from 'apache-arrow'
import { parse } from 'csv-parse/sync'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { loadConfig } from '../src/config.js'
import { type CommandIO, reconcileCommand } from '../src/runs/cli.js'
import { testApp, testEnv } from './helpers/app.js'
import { waitForRun } from './helpers/runs.js'

// I1 and I2 are one invoice entered twice, paid twice (P1, P2): a tie of four; I3 has one
// payment; I4 and its payment P4 are clean too; P5 pays nothing
const files = {
  'invoices.csv': [
    'invoice_id,customer,amount,due',
    'I1,C1,50.00,2024-03-01',
    'I2,C1,50.00,2024-03-01',
    'I3,C2,75.10,2024-03-02',
    'I4,C3,20.00,2024-03-03',
  ].join('\n'),
  'payments.csv': [
    'payment_id,customer,amount,paid',
    'P1,C1,50.00,2024-03-02',
    'P2,C1,50.00,2024-03-02',
    'P3,C2,75.00,2024-03-02',
    'P4,C3,20.00,2024-03-04',
    'P5,C9,1.00,2024-03-04',
  ].join('\n'),
}
const recipe = (prefer?: string) => ({
  name: 'invoices-vs-payments',
  left: { source: 'invoices', key: ['invoice_id'] },
  right: { source: 'payments', key: ['payment_id'] },
  passes: [
    {
      name: 'by_customer',
      pattern: '1:1',
      when: "l.customer = r.customer AND ABS(l.amount - r.amount) <= 0.50 AND r.paid BETWEEN l.due AND l.due + INTERVAL '5 days'",
      ...(prefer ? { prefer } : {}),
    },
  ],
})

async function completedRun(app: FastifyInstance, body: Record<string, unknown>) {
  const started = (await app.inject({ method: 'POST', url: '/api/runs', payload: body })).json()
  return waitForRun(app, started.id)
}

const csvRows = (text: string) => parse(text, { columns: true }) as Record<string, string>[]

t.test('REST: matches and ambiguous are separate exports; pages list both or either', async (t) => {
  const { app } = await testApp(t, { files })
  for (const [alias, path] of [
    ['invoices', 'invoices.csv'],
    ['payments', 'payments.csv'],
  ])
    t.equal(
      (await app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type: 'csv', path } })).statusCode,
      201,
    )
  const run = await completedRun(app, { recipe: recipe() })
  t.equal(run.status, 'completed', JSON.stringify(run.error))
  t.match(run.summary, {
    matches: 3,
    ambiguous: 1,
    left: { rows: 4, matched: 4, ambiguous: 2, unmatched: 0 },
    right: { rows: 5, matched: 4, ambiguous: 2, unmatched: 1 },
  })
  t.match(run.summary.passes[0].assignment, { uncontested: 2, components: 1, exact: 1, greedy_fallback: 0 })

  const page = async (query: string) =>
    (await app.inject({ method: 'GET', url: `/api/runs/${run.id}/matches?${query}` })).json()
  const all = await page('limit=10')
  t.same(
    all.items.map((m: { match_id: string; left_keys: string[]; ambiguous: boolean }) => [
      m.match_id,
      m.left_keys.join('+'),
      m.ambiguous,
    ]),
    [
      ['m0000001', 'I1+I2', true],
      ['m0000002', 'I3', false],
      ['m0000003', 'I4', false],
    ],
    'every match, in match order, ambiguous ones flagged',
  )
  t.same((await page('offset=1&limit=1')).items[0].match_id, 'm0000002', 'placed by number across both files')
  t.same(
    (await page('ambiguous=true')).items.map((m: { match_id: string }) => m.match_id),
    ['m0000001'],
  )
  t.same(
    (await page('ambiguous=false')).items.map((m: { match_id: string }) => m.match_id),
    ['m0000002', 'm0000003'],
  )
  t.same(
    (await page('key=P2')).items.map((m: { match_id: string }) => m.match_id),
    ['m0000001'],
  )
  t.same((await page('key=P3&ambiguous=false')).total, 1)

  const exported = async (set: string, format = 'csv') => {
    const res = await app.inject({ method: 'GET', url: `/api/runs/${run.id}/export?set=${set}&format=${format}` })
    t.equal(res.statusCode, 200, `${set}.${format}`)
    return res
  }
  const clean = csvRows((await exported('matches')).body)
  const held = csvRows((await exported('ambiguous')).body)
  t.same(
    clean.map((r) => [r.match_id, r.left_keys, r.right_keys]),
    [
      ['m0000002', 'I3', 'P3'],
      ['m0000003', 'I4', 'P4'],
    ],
  )
  t.same(
    held.map((r) => [r.match_id, r.left_keys, r.right_keys, r.ambiguous]),
    [['m0000001', 'I1;I2', 'P1;P2', 'true']],
  )
  t.equal(clean.length + held.length, run.summary.matches, 'the two sets hold every match of the summary')
  t.equal(held.length, run.summary.ambiguous)
  t.equal(tableFromIPC((await exported('ambiguous', 'arrow')).rawPayload).numRows, 1)
  t.equal(tableFromIPC((await exported('matches', 'arrow')).rawPayload).numRows, 2)

  // a run stored before the split: one matches file holding both, no ambiguous file
  const dir = join(t.testdirName, 'runs', run.id)
  const both = (name: string) => readFile(join(dir, `${name}.arrow`)).then((b) => tableFromIPC(b))
  const mixed: ArrowTable = (await both('matches')).concat(await both('ambiguous'))
  // (as a stream: the file format cannot hold the two parts' pass dictionaries)
  await writeFile(join(dir, 'matches.arrow'), tableToIPC(mixed, 'stream'))
  await rm(join(dir, 'ambiguous.arrow'))
  t.equal((await page('limit=10')).total, 3)
  t.same(
    (await page('ambiguous=true')).items.map((m: { match_id: string }) => m.match_id),
    ['m0000001'],
  )
  const legacy = await app.inject({ method: 'GET', url: `/api/runs/${run.id}/export?set=ambiguous` })
  t.equal(legacy.statusCode, 404)
  t.match(legacy.json(), { error: 'result_set_missing', suggestion: /retry the run/ })
})

t.test('REST: with prefer the tie is resolved; the duplicate left over names the one preferred', async (t) => {
  const { app } = await testApp(t, {
    files: { ...files, 'payments.csv': files['payments.csv'].replace('P2,C1,50.00,2024-03-02\n', '') },
  })
  for (const [alias, path] of [
    ['invoices', 'invoices.csv'],
    ['payments', 'payments.csv'],
  ])
    await app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type: 'csv', path } })
  const run = await completedRun(app, { recipe: recipe('first_key') })
  t.match(run.summary, { matches: 3, ambiguous: 0, left: { unmatched: 1 } })
  t.match(run.summary.passes[0].assignment, { ties_resolved: 1 })
  const unmatched = (await app.inject({ method: 'GET', url: `/api/runs/${run.id}/unmatched/left` })).json()
  t.match(unmatched.items, [
    {
      record_key: 'I2',
      closest_candidate: 'P1',
      tied_with: 'I1',
      failed: { pass: 'by_customer', conjunct: '' },
      reason: 'tied with I1 for P1 in pass by_customer; prefer first_key chose I1',
    },
  ])
  const csv = csvRows((await app.inject({ method: 'GET', url: `/api/runs/${run.id}/export?set=unmatched-left` })).body)
  t.match(csv, [{ record_key: 'I2', closest_candidate: 'P1', tied_with: 'I1', 'l.amount': '50.00' }])
})

t.test('concord reconcile --out writes the ambiguous matches as their own file', async (t) => {
  const dir = t.testdir({ ...files, 'recipe.json': JSON.stringify(recipe()) })
  const out = { stdout: '', stderr: '' }
  const io: CommandIO = {
    stdout: { write: (s: string | Uint8Array) => ((out.stdout += String(s)), true) },
    stderr: { write: (s: string | Uint8Array) => ((out.stderr += String(s)), true), isTTY: false },
  }
  const config = loadConfig({ DATA_DIR: join(dir, 'data'), ...testEnv })
  const args = ['--left', join(dir, 'invoices.csv'), '--right', join(dir, 'payments.csv')]
  const code = await reconcileCommand(
    [...args, '--recipe', join(dir, 'recipe.json'), '--out', join(dir, 'out')],
    config,
    io,
  )
  t.equal(code, 0, out.stderr)
  t.match(out.stdout, /3 matches \(1 ambiguous\)/)
  t.match(out.stdout, /left: 2 of the matched records are held in ambiguous matches/)
  const read = async (set: string) => csvRows(await readFile(join(dir, 'out', `${set}.csv`), 'utf8'))
  t.same(
    (await read('matches')).map((r) => r.left_keys),
    ['I3', 'I4'],
  )
  t.same(
    (await read('ambiguous')).map((r) => [r.left_keys, r.right_keys]),
    [['I1;I2', 'P1;P2']],
  )
  t.same(
    (await read('unmatched-right')).map((r) => r.record_key),
    ['P5'],
  )
})
