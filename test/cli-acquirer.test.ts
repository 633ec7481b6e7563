// `concord reconcile --json` on acquirer-settlement (a CSV ledger against a JSON settlement file)
// gives the counts of the same recipe run through REST, pass by pass.

import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { datasetsDir, datasetsSkip, testApp } from './helpers/app.js'
import { acquirerRecipe } from './helpers/recipes.js'
import { waitForRun } from './helpers/runs.js'

const run = promisify(execFile)
const bin = new URL('../bin/concord.js', import.meta.url).pathname

interface Summary {
  matches: number
  ambiguous: number
  left: { rows: number; matched: number; unmatched: number; amount: string | null }
  right: { rows: number; matched: number; unmatched: number; amount: string | null }
  passes: { name: string; matches: number; ambiguous: number }[]
}

const counts = (s: Summary) => ({
  matches: s.matches,
  ambiguous: s.ambiguous,
  left: [s.left.rows, s.left.matched, s.left.unmatched, s.left.amount],
  right: [s.right.rows, s.right.matched, s.right.unmatched, s.right.amount],
  passes: s.passes.map((p) => [p.name, p.matches, p.ambiguous]),
})

t.test('acquirer settlement: the CLI and REST give the same counts', { skip: datasetsSkip }, async (t) => {
  const dir = t.testdir({ 'recipe.json': JSON.stringify(acquirerRecipe) })
  const cli = await run(
    process.execPath,
    [
      bin,
      'reconcile',
      '--left',
      join(datasetsDir, 'acquirer-settlement/ledger-midaz.csv'),
      '--right',
      join(datasetsDir, 'acquirer-settlement/acquirer-settlement.json'),
      '--recipe',
      join(dir, 'recipe.json'),
      '--json',
    ],
    { env: { ...process.env, DATA_DIR: join(dir, 'data') } },
  )
  const fromCli = counts(JSON.parse(cli.stdout) as Summary)

  const { app } = await testApp(t, { dataDir: datasetsDir })
  for (const [alias, type, path] of [
    ['ledger', 'csv', 'acquirer-settlement/ledger-midaz.csv'],
    ['settlement', 'json', 'acquirer-settlement/acquirer-settlement.json'],
  ]) {
    const res = await app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type, path } })
    t.equal(res.statusCode, 201, res.body)
  }
  const started = (await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe: acquirerRecipe } })).json()
  const rest = await waitForRun(app, started.id)
  t.equal(rest.status, 'completed', JSON.stringify(rest.error))
  t.same(fromCli, counts(rest.summary as Summary))
  t.match(fromCli, { matches: 800, ambiguous: 15, left: [1000, 800, 200] })
})
