// `concord reconcile` with registered aliases: read from the service's embedded database in
// DATA_DIR, in the workspace --workspace names, a registered file confined to DATA_DIR as in the
// service. Run in process with test streams, which also shows the progress bar a terminal gets.

import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { embeddedDir, migrateToLatest, openDatabase } from '../src/db/connect.js'
import { type CommandIO, reconcileCommand } from '../src/runs/cli.js'
import { testEnv } from './helpers/app.js'

const bank = 'txn_id,amount,day\nT1,10.00,2024-01-05\nT2,20.00,2024-02-05\nT3,30.00,2024-03-05\n'
const acmeBank = 'txn_id,amount,day\nA1,20.00,2024-02-05\n'
const inv = JSON.stringify([
  { id: 'I1', total: '10.00', day: '2024-01-04' },
  { id: 'I2', total: '20.00', day: '2024-02-05' },
  { id: 'I9', total: '99.00', day: '2024-02-05' },
])
const recipe = {
  name: 'bank-vs-inv',
  left: { source: 'bank', key: ['txn_id'] },
  right: { source: 'inv', key: ['id'] },
  passes: [{ name: 'amount', pattern: '1:1', when: 'l.amount = r.total AND l.day >= r.day' }],
}

/** Streams that keep what is written; stderr says it is a terminal when asked to. */
function capture(tty: boolean) {
  const out = { stdout: '', stderr: '' }
  const io: CommandIO = {
    stdout: { write: (s: string | Uint8Array) => ((out.stdout += String(s)), true) },
    stderr: { write: (s: string | Uint8Array) => ((out.stderr += String(s)), true), isTTY: tty },
  }
  return { out, io }
}

t.test('aliases come from the embedded database of DATA_DIR, per workspace, confined', async (t) => {
  const dataDir = t.testdir({ 'bank.csv': bank, 'acme-bank.csv': acmeBank, 'inv.json': inv })
  const outside = await mkdtemp(join(tmpdir(), 'concord-outside-'))
  t.teardown(() => rm(outside, { recursive: true, force: true }))
  await writeFile(join(outside, 'secret.csv'), bank)
  await writeFile(join(dataDir, 'recipe.json'), JSON.stringify(recipe))

  // the service's database, on disk in DATA_DIR, with sources registered through REST (migrated,
  // not started from the tests' dump: PGlite loading a dump into a folder keeps the process alive)
  const database = await openDatabase({ pgliteDir: embeddedDir(dataDir) })
  await migrateToLatest(database.db)
  const config = loadConfig({ DATA_DIR: dataDir, ...testEnv })
  const app = await buildApp({ config, database, logger: false })
  await app.ready()
  for (const [alias, type, path] of [
    ['bank', 'csv', 'bank.csv'],
    ['inv', 'json', 'inv.json'],
  ]) {
    const res = await app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type, path } })
    t.equal(res.statusCode, 201, res.body)
  }
  await app.close()
  // a second workspace with its own "bank", and a row whose path leaves the data folder (as a
  // hand-edited or older database could hold): written directly, the API would refuse it
  await database.db.insertInto('workspaces').values({ id: 'acme', name: 'Acme' }).execute()
  const columns = JSON.stringify([])
  await database.db
    .insertInto('sources')
    .values([
      { workspace_id: 'acme', alias: 'bank', type: 'csv', config: JSON.stringify({ path: 'acme-bank.csv' }), columns },
      {
        workspace_id: 'default',
        alias: 'escape',
        type: 'csv',
        config: JSON.stringify({ path: join(outside, 'secret.csv') }),
        columns,
      },
    ])
    .execute()
  await database.close()

  const reconcile = async (args: string[], tty = false) => {
    const { out, io } = capture(tty)
    const code = await reconcileCommand([...args, '--recipe', join(dataDir, 'recipe.json')], config, io)
    return { code, ...out }
  }

  const both = await reconcile(['--left', 'bank', '--right', 'inv', '--json'])
  t.equal(both.code, 0, both.stderr)
  t.match(JSON.parse(both.stdout), {
    matches: 2,
    left: { rows: 3, matched: 2, unmatched: 1 },
    right: { rows: 3, matched: 2 },
  })
  t.equal(both.stderr, '', 'no progress bar when stderr is not a terminal')

  const acme = await reconcile([
    '--workspace',
    'acme',
    '--left',
    'bank',
    '--right',
    join(dataDir, 'inv.json'),
    '--json',
  ])
  t.equal(acme.code, 0, acme.stderr)
  t.match(JSON.parse(acme.stdout), { matches: 1, left: { rows: 1, matched: 1 } }, "acme's bank, not default's")

  const notThere = await reconcile(['--workspace', 'acme', '--left', 'bank', '--right', 'inv'])
  t.equal(notThere.code, 2)
  t.match(notThere.stderr, /"inv" is neither a file nor a source registered in workspace "acme"/)
  t.match(notThere.stderr, /registered in workspace "default": add --workspace/)

  const noWorkspace = await reconcile(['--workspace', 'nope', '--left', 'bank', '--right', 'inv'])
  t.equal(noWorkspace.code, 2)
  t.match(noWorkspace.stderr, /no workspace "nope"\nthe workspaces: acme, default/)

  const escape = await reconcile(['--left', 'escape', '--right', 'inv'])
  t.equal(escape.code, 2)
  t.match(escape.stderr, /is outside the data folder/)
  t.notMatch(escape.stdout, /matches/, 'nothing ran')

  // on a terminal: a progress bar redrawn in place on stderr, the summary table on stdout
  const terminal = await reconcile(['--left', 'bank', '--right', 'inv'], true)
  t.equal(terminal.code, 0)
  const frames = terminal.stderr.split('\r').filter(Boolean)
  t.ok(frames.length >= 3, 'one frame per progress report')
  t.match(frames[0], /^\[\.{30}\] {3}0% loading/)
  t.ok(
    frames.some((f) => /matching \(pass amount\)\s+3 × 3 rows/.test(f)),
    'a frame names the pass and the rows loaded',
  )
  t.equal(frames.at(-1), `[${'#'.repeat(30)}] 100% done  3 × 3 rows\u001b[K\n`, 'the bar ends full, the line cleared')
  t.match(terminal.stdout, /recipe bank-vs-inv: completed, 2 matches/)
})
