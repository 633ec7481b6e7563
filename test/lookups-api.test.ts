// Lookup tables end to end: registered as ordinary sources, declared in a saved recipe, loaded
// whole by sample and full runs, refused when their source is missing, failing the run when their
// key is not unique; and `concord reconcile --lookup name=FILE` (or a registered alias).

import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { embeddedDir, migrateToLatest, openDatabase } from '../src/db/connect.js'
import { type CommandIO, reconcileCommand } from '../src/runs/cli.js'
import { testApp, testEnv } from './helpers/app.js'
import { waitForRun } from './helpers/runs.js'

const files = {
  'sales.csv': [
    'sale_id,brand,amount',
    'S1,VISA,1010.00',
    'S2,AMEX,40.00',
    'S3,MC,80.00',
    'S4,VISA,120.00',
    'S5,DISC,70.00',
  ].join('\n'),
  'payouts.csv': ['payout_id,net', 'P1,980.41', 'P2,38.35', 'P3,78.78', 'P4,116.22', 'P5,70.00'].join('\n'),
  'fees.csv': ['brand,rate,fixed', 'VISA,0.029,0.30', 'AMEX,0.035,0.25', 'MC,0.014,0.10'].join('\n'),
  'fees-twice.csv': ['brand,rate,fixed', 'VISA,0.029,0.30', 'AMEX,0.035,0.25', 'VISA,0.030,0.30'].join('\n'),
}

const recipe = {
  name: 'sales-vs-payouts',
  left: { source: 'sales', key: ['sale_id'] },
  right: { source: 'payouts', key: ['payout_id'] },
  lookups: { fees: { source: 'fees', key: ['brand'] } },
  passes: [
    {
      name: 'net_of_fees',
      pattern: '1:1',
      when: "r.net = l.amount - l.amount * lookup('fees', 'rate', l.brand) - lookup('fees', 'fixed', l.brand)",
    },
  ],
}

const matched = ['S1|P1', 'S2|P2', 'S3|P3', 'S4|P4']

t.test('REST: register the schedule, save a recipe that reads it, run it in both modes', async (t) => {
  const { app } = await testApp(t, { files })
  for (const alias of ['sales', 'payouts', 'fees', 'fees_twice']) {
    const path = alias === 'fees_twice' ? 'fees-twice.csv' : `${alias}.csv`
    const res = await app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type: 'csv', path } })
    t.equal(res.statusCode, 201, res.body)
  }

  // a lookup on a source that is not registered: every issue, nothing saved
  const typo = { ...recipe, lookups: { fees: { source: 'feez', key: ['brand'] } } }
  const report = (await app.inject({ method: 'POST', url: '/api/recipes/validate', payload: typo })).json()
  t.match(report, {
    valid: false,
    issues: [
      {
        pass: null,
        code: 'unknown_source',
        message: 'lookup "fees" source "feez" is not registered',
        suggestion: 'did you mean "fees"?',
      },
    ],
  })
  const refused = await app.inject({ method: 'POST', url: '/api/recipes', payload: typo })
  t.equal(refused.statusCode, 400)
  t.equal(refused.json().error, 'invalid_recipe')
  const badCall = {
    ...recipe,
    passes: [{ ...recipe.passes[0], when: "r.net = l.amount - lookup('fees', 'fee', l.brand)" }],
  }
  t.match((await app.inject({ method: 'POST', url: '/api/recipes/validate', payload: badCall })).json().issues, [
    { pass: 'net_of_fees', code: 'unknown_column', suggestion: /'fixed'/ },
  ])
  t.same((await app.inject({ method: 'GET', url: '/api/recipes' })).json().recipes, [], 'nothing was stored')

  const saved = await app.inject({ method: 'POST', url: '/api/recipes', payload: recipe })
  t.equal(saved.statusCode, 201, saved.body)
  const { id } = saved.json()
  t.same(saved.json().recipe.lookups, recipe.lookups)
  const explain = (await app.inject({ method: 'POST', url: '/api/recipes/explain', payload: recipe })).json()
  t.same(explain.passes[0].lookups, [{ name: 'fees', source: 'fees', key: ['brand'], as_of: null }])

  const runPairs = async (body: Record<string, unknown>) => {
    const started = await app.inject({ method: 'POST', url: '/api/runs', payload: body })
    t.equal(started.statusCode, 202, started.body)
    const run = await waitForRun(app, started.json().id)
    if (run.status !== 'completed') return { run, pairs: [] }
    const page = (await app.inject({ method: 'GET', url: `/api/runs/${run.id}/matches?limit=100` })).json()
    const pairs = page.items
      .map((m: { left_keys: string[]; right_keys: string[] }) => `${m.left_keys.join('+')}|${m.right_keys.join('+')}`)
      .sort()
    return { run, pairs }
  }

  const full = await runPairs({ recipe_id: id, mode: 'full' })
  t.equal(full.run.status, 'completed', JSON.stringify(full.run.error))
  t.same(full.pairs, matched)
  t.match(full.run.summary, { left: { unmatched: 1 }, right: { unmatched: 1 } })

  // a sample run reads the lookup whole, whatever the scoped tables hold
  await app.inject({
    method: 'POST',
    url: '/api/sources/sales/load-scoped',
    payload: { conditions: [{ column: 'brand', op: 'in', value: ['AMEX', 'MC'] }] },
  })
  await app.inject({ method: 'POST', url: '/api/sources/payouts/load-scoped', payload: { conditions: [] } })
  const sample = await runPairs({ recipe_id: id, mode: 'sample' })
  t.equal(sample.run.status, 'completed', JSON.stringify(sample.run.error))
  t.same(sample.pairs, ['S2|P2', 'S3|P3'])

  // the PostgreSQL engine does not read lookups (here it refuses CSV sides first)
  const pushed = await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe_id: id, engine: 'postgres' } })
  t.equal(pushed.statusCode, 400)
  t.equal(pushed.json().error, 'pushdown_unavailable')

  // a schedule with VISA twice fails the run with the key named, and keeps no results
  const twice = await app.inject({
    method: 'PUT',
    url: `/api/recipes/${id}`,
    payload: { ...recipe, lookups: { fees: { source: 'fees_twice', key: ['brand'] } } },
  })
  t.equal(twice.statusCode, 200, twice.body)
  const failed = await runPairs({ recipe_id: id })
  t.equal(failed.run.status, 'failed')
  t.match(failed.run.error, {
    error: 'lookup_not_unique',
    message: 'lookup "fees": source "fees_twice" has more than one row with brand = "VISA" (its rows 1 and 3)',
  })
  t.equal((await app.inject({ method: 'GET', url: `/api/runs/${failed.run.id}/matches` })).statusCode, 409)

  // the schedule removed: the saved recipe no longer validates, and no run is recorded
  const before = (await app.inject({ method: 'GET', url: '/api/runs' })).json()
  t.equal((await app.inject({ method: 'DELETE', url: '/api/sources/fees_twice' })).statusCode, 204)
  const gone = await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe_id: id } })
  t.equal(gone.statusCode, 400)
  t.match(gone.json(), { error: 'invalid_recipe', issues: [{ code: 'unknown_source', message: /lookup "fees"/ }] })
  t.same((await app.inject({ method: 'GET', url: '/api/runs' })).json(), before)
})

/** Streams that keep what is written. */
function capture() {
  const out = { stdout: '', stderr: '' }
  const io: CommandIO = {
    stdout: { write: (s: string | Uint8Array) => ((out.stdout += String(s)), true) },
    stderr: { write: (s: string | Uint8Array) => ((out.stderr += String(s)), true), isTTY: false },
  }
  return { out, io }
}

t.test('CLI: --lookup name=FILE, or the registered source the declaration names', async (t) => {
  const dataDir = t.testdir({ ...files, 'recipe.json': JSON.stringify(recipe) })
  const config = loadConfig({ DATA_DIR: dataDir, ...testEnv })
  const reconcile = async (args: string[], recipePath = join(dataDir, 'recipe.json')) => {
    const { out, io } = capture()
    const code = await reconcileCommand(
      ['--left', join(dataDir, 'sales.csv'), '--right', join(dataDir, 'payouts.csv'), '--recipe', recipePath, ...args],
      config,
      io,
    )
    return { code, ...out }
  }

  const byFile = await reconcile(['--lookup', `fees=${join(dataDir, 'fees.csv')}`, '--json'])
  t.equal(byFile.code, 0, byFile.stderr)
  t.match(JSON.parse(byFile.stdout), { matches: 4, left: { unmatched: 1 }, right: { unmatched: 1 } })

  const out = join(dataDir, 'out')
  const written = await reconcile(['--lookup', `fees=${join(dataDir, 'fees.csv')}`, '--out', out])
  t.equal(written.code, 0, written.stderr)
  t.match(written.stdout, /net_of_fees\s+1:1\s+done\s+4/)

  const unknown = await reconcile(['--lookup', `fee=${join(dataDir, 'fees.csv')}`])
  t.equal(unknown.code, 2)
  t.match(unknown.stderr, /--lookup fee: the recipe has no lookup "fee"\ndid you mean fees\?/)

  const twice = await reconcile(['--lookup', `fees=${join(dataDir, 'fees-twice.csv')}`])
  t.equal(twice.code, 2)
  t.match(twice.stderr, /lookup "fees": source "fees" has more than one row with brand = "VISA"/)

  // no --lookup: the alias "fees" from the service's database in DATA_DIR
  const database = await openDatabase({ pgliteDir: embeddedDir(dataDir) })
  await migrateToLatest(database.db)
  const app = await buildApp({ config, database, logger: false })
  await app.ready()
  const res = await app.inject({
    method: 'POST',
    url: '/api/sources',
    payload: { alias: 'fees', type: 'csv', path: 'fees.csv' },
  })
  t.equal(res.statusCode, 201, res.body)
  await app.close()
  await database.close()

  const byAlias = await reconcile(['--json'])
  t.equal(byAlias.code, 0, byAlias.stderr)
  t.match(JSON.parse(byAlias.stdout), { matches: 4 })

  const elsewhere = join(dataDir, 'rates-recipe.json')
  await writeFile(elsewhere, JSON.stringify({ ...recipe, lookups: { fees: { source: 'rates', key: ['brand'] } } }))
  const missing = await reconcile([], elsewhere)
  t.equal(missing.code, 2)
  t.match(
    missing.stderr,
    /lookup "fees": "rates" is neither a file nor a source registered in workspace "default"\ngive it with --lookup fees=FILE, or register "rates" first/,
  )
})
