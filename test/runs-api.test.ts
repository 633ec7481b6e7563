// Runs through REST: start, poll to completion, page, filter, export (CSV and Arrow, read back),
// parameters, sample mode, cancel, delete, and what a restart leaves (interrupted, no partial
// results). Real-data runs read ../shared/datasets in place (it is the data folder there) and
// keep their results in a test folder.

import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { tableFromIPC } from 'apache-arrow'
import { parse } from 'csv-parse/sync'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { datasetsDir, datasetsSkip, freshDatabase, testApp } from './helpers/app.js'
import { acquirerRecipe, kallaRecipe } from './helpers/recipes.js'
import { waitForProgress, waitForRun } from './helpers/runs.js'

async function register(app: FastifyInstance, alias: string, type: string, path: string) {
  const res = await app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type, path } })
  if (res.statusCode !== 201) throw new Error(res.body)
}

t.test(
  'kalla/generated through REST: run, poll, page, filter, export and delete',
  { skip: datasetsSkip },
  async (t) => {
    const runsDir = t.testdir({})
    const { app } = await testApp(t, { dataDir: datasetsDir, env: { RUNS_DIR: runsDir } })
    await register(app, 'invoices', 'csv', 'kalla/generated/invoices.csv')
    await register(app, 'payments', 'csv', 'kalla/generated/payments.csv')
    const saved = (await app.inject({ method: 'POST', url: '/api/recipes', payload: kallaRecipe })).json()

    const started = await app.inject({
      method: 'POST',
      url: '/api/runs',
      payload: { recipe_id: saved.id, mode: 'full' },
    })
    t.equal(started.statusCode, 202, started.body)
    t.match(started.json(), { status: 'queued', recipe_id: saved.id, recipe_version: 1, mode: 'full' })
    const run = await waitForRun(app, started.json().id)
    t.equal(run.status, 'completed', JSON.stringify(run.error))
    t.match(run.summary, {
      recipe_version: 1,
      matches: 39,
      left: { rows: 50, matched: 39, unmatched: 11 },
      right: { rows: 46, matched: 41, unmatched: 5 },
    })
    t.same(run.progress, { phase: 'done', rows_loaded: { left: 50, right: 46 }, pass: 'split', percent: 100 })

    const page = (await app.inject({ method: 'GET', url: `/api/runs/${run.id}/matches?offset=30&limit=5` })).json()
    t.equal(page.total, 39)
    t.same(
      page.items.map((m: { match_id: string; pass: string }) => [m.match_id, m.pass]),
      [
        ['m0000031', 'tolerance'],
        ['m0000032', 'tolerance'],
        ['m0000033', 'tolerance'],
        ['m0000034', 'tolerance'],
        ['m0000035', 'tolerance'],
      ],
    )
    const splits = (await app.inject({ method: 'GET', url: `/api/runs/${run.id}/matches?pass=split` })).json()
    t.same(
      splits.items.map((m: { left_keys: string[]; right_keys: string[] }) => [m.left_keys, m.right_keys]),
      [
        [['INV-000038'], ['PAY-000038', 'PAY-000039']],
        [['INV-000039'], ['PAY-000040', 'PAY-000041']],
      ],
    )
    const left = (await app.inject({ method: 'GET', url: `/api/runs/${run.id}/unmatched/left?limit=100` })).json()
    t.equal(left.total, 11)
    t.match(left.items[0], { record_key: 'INV-000040', record: { amount: '36704.79', invoice_date: '2024-06-21' } })
    // unmatched records filtered by the pass a page shows they failed in: the filters partition them
    let filtered = 0
    for (const pass of ['exact', 'tolerance', 'split']) {
      const page = (
        await app.inject({ method: 'GET', url: `/api/runs/${run.id}/unmatched/left?failed_pass=${pass}` })
      ).json()
      t.ok(
        page.items.every((u: { failed: { pass: string } }) => u.failed.pass === pass),
        `failed_pass=${pass}: ${page.total}`,
      )
      filtered += page.total
    }
    t.equal(filtered, left.total, 'every unmatched invoice is in exactly one failed_pass filter')
    const right = (await app.inject({ method: 'GET', url: `/api/runs/${run.id}/unmatched/right` })).json()
    t.same(
      right.items.map((u: { record_key: string }) => u.record_key),
      ['PAY-000042', 'PAY-000043', 'PAY-000044', 'PAY-000045', 'PAY-000046'],
    )

    const csv = await app.inject({ method: 'GET', url: `/api/runs/${run.id}/export?format=csv` })
    t.equal(csv.statusCode, 200)
    t.match(csv.headers['content-type'], /text\/csv/)
    const rows = parse(csv.body, { columns: true }) as Record<string, string>[]
    t.equal(rows.length, 39)
    t.same(rows[37], {
      match_id: 'm0000038',
      pass: 'split',
      pattern: '1:N',
      left_keys: 'INV-000038',
      right_keys: 'PAY-000038;PAY-000039',
      score: '1',
      amount_delta: '0.00',
      days_delta: '',
      ambiguous: 'false',
    })
    const arrow = await app.inject({ method: 'GET', url: `/api/runs/${run.id}/export?format=arrow&set=unmatched-left` })
    t.equal(arrow.statusCode, 200)
    const table = tableFromIPC(arrow.rawPayload)
    t.equal(table.numRows, 11)
    t.ok(table.schema.fields.some((f) => f.name === 'l.amount' && String(f.type).startsWith('Decimal')))

    // results are read from disk: a second read gives the same without a new run
    t.same((await app.inject({ method: 'GET', url: `/api/runs/${run.id}/matches?offset=30&limit=5` })).json(), page)
    const list = (await app.inject({ method: 'GET', url: '/api/runs' })).json()
    t.same(
      list.runs.map((r: { id: string }) => r.id),
      [run.id],
    )

    t.ok(existsSync(join(runsDir, run.id)))
    t.equal((await app.inject({ method: 'DELETE', url: `/api/runs/${run.id}` })).statusCode, 204)
    t.notOk(existsSync(join(runsDir, run.id)), 'the results go with the run')
    t.equal((await app.inject({ method: 'GET', url: `/api/runs/${run.id}` })).statusCode, 404)
  },
)

t.test('acquirer settlement through REST: a JSON and a CSV source', { skip: datasetsSkip }, async (t) => {
  const { app } = await testApp(t, { dataDir: datasetsDir, env: { RUNS_DIR: t.testdir({}) } })
  await register(app, 'ledger', 'csv', 'acquirer-settlement/ledger-midaz.csv')
  await register(app, 'settlement', 'json', 'acquirer-settlement/acquirer-settlement.json')
  const recipe = acquirerRecipe
  const started = (await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe } })).json()
  const run = await waitForRun(app, started.id)
  t.equal(run.status, 'completed', JSON.stringify(run.error))
  t.match(run.summary, { matches: 800, ambiguous: 15, left: { rows: 1000, unmatched: 200 }, right: { rows: 1000 } })
  const ambiguous = (
    await app.inject({ method: 'GET', url: `/api/runs/${run.id}/matches?ambiguous=true&limit=1` })
  ).json()
  t.equal(ambiguous.total, 15)
  t.ok(ambiguous.items[0].right_keys.length > 1, 'a duplicate settlement is held with its twin')

  // exports read back: CSV and Arrow hold every record of the summary, amounts as in the sources
  const exported = async (set: string, format: string) => {
    const res = await app.inject({ method: 'GET', url: `/api/runs/${run.id}/export?format=${format}&set=${set}` })
    t.equal(res.statusCode, 200, `${set}.${format}`)
    return res
  }
  // the matches export holds the clean matches; the ambiguous ones are a set of their own
  const matchRows = parse((await exported('matches', 'csv')).body, { columns: true }) as Record<string, string>[]
  t.equal(matchRows.length, 785)
  t.equal(matchRows.filter((r) => r.ambiguous === 'true').length, 0)
  const matchTable = tableFromIPC((await exported('matches', 'arrow')).rawPayload)
  t.equal(matchTable.numRows, 785)
  const held = parse((await exported('ambiguous', 'csv')).body, { columns: true }) as Record<string, string>[]
  t.equal(held.length, run.summary.ambiguous)
  t.ok(held.every((r) => r.ambiguous === 'true' && r.right_keys.includes(';')))
  t.equal(tableFromIPC((await exported('ambiguous', 'arrow')).rawPayload).numRows, 15)
  t.same(
    matchRows.slice(0, 3).map((r) => r.left_keys),
    [0, 1, 2].map((i) => [...(matchTable.getChild('left_keys')!.get(i) as Iterable<string>)].join(';')),
    'CSV and Arrow list the same matches in the same order',
  )
  const unmatchedLeft = parse((await exported('unmatched-left', 'csv')).body, { columns: true }) as Record<
    string,
    string
  >[]
  t.equal(unmatchedLeft.length, run.summary.left.unmatched)
  const ledger = parse(await readFile(join(datasetsDir, 'acquirer-settlement/ledger-midaz.csv')), {
    columns: true,
  }) as Record<string, string>[]
  const byKey = new Map(ledger.map((r) => [r.ledger_tx_id, r]))
  t.same(
    unmatchedLeft.map((r) => [r.record_key, r['l.amount']]),
    unmatchedLeft.map((r) => [r.record_key, byKey.get(r.record_key)?.amount]),
    'unmatched amounts exactly as in the ledger',
  )
  const unmatchedRight = tableFromIPC((await exported('unmatched-right', 'arrow')).rawPayload)
  t.equal(unmatchedRight.numRows, run.summary.right.unmatched)
  t.ok(unmatchedRight.schema.fields.some((f) => f.name === 'r.gross_amount'))
})

const bank = ['txn_id,account,amount,txn_date,reference']
const invoices = ['invoice_id,customer,total_amount,invoice_date,ref']
for (let n = 1; n <= 12; n++) {
  const month = String(((n - 1) % 3) + 1).padStart(2, '0')
  bank.push(`T${n},ACC-${n % 2},${n}00.00,2024-${month}-10,R${n}`)
  invoices.push(`I${n},ACC-${n % 2},${n}00.00,2024-${month}-08,R${n}`)
}
const smallFiles = { 'bank.csv': `${bank.join('\n')}\n`, 'invoices.csv': `${invoices.join('\n')}\n` }
const monthly = {
  name: 'monthly',
  left: { source: 'bank', key: ['txn_id'] },
  right: { source: 'invoices', key: ['invoice_id'] },
  passes: [
    {
      name: 'p',
      pattern: '1:1',
      when: "l.reference = r.ref AND l.amount = r.total_amount AND r.invoice_date BETWEEN l.txn_date - INTERVAL '3 days' AND l.txn_date",
    },
  ],
  params: [
    {
      name: 'period_start',
      type: 'date',
      left: { column: 'txn_date', op: 'gte' },
      right: { column: 'invoice_date', op: 'gte' },
    },
    {
      name: 'period_end',
      type: 'date',
      left: { column: 'txn_date', op: 'lte' },
      right: { column: 'invoice_date', op: 'lte' },
    },
    { name: 'account', type: 'string', left: { column: 'account', op: 'eq' }, required: false },
  ],
}

async function smallApp(t: Test) {
  const ctx = await testApp(t, { files: smallFiles })
  await register(ctx.app, 'bank', 'csv', 'bank.csv')
  await register(ctx.app, 'invoices', 'csv', 'invoices.csv')
  return ctx
}

t.test('run parameters fill the scopes; missing or ill-typed values are 400s; the run records them', async (t) => {
  const { app } = await smallApp(t)
  const saved = (await app.inject({ method: 'POST', url: '/api/recipes', payload: monthly })).json()
  t.equal(saved.recipe.params.length, 3)
  const start = (params: Record<string, unknown>) =>
    app.inject({ method: 'POST', url: '/api/runs', payload: { recipe_id: saved.id, params } })

  const february = await start({ period_start: '2024-02-01', period_end: '2024-02-29' })
  t.equal(february.statusCode, 202, february.body)
  const run = await waitForRun(app, february.json().id)
  t.same(run.params, { period_start: '2024-02-01', period_end: '2024-02-29' })
  t.match(run.summary, { matches: 4, left: { rows: 4 }, right: { rows: 4 } })
  const keys = (await app.inject({ method: 'GET', url: `/api/runs/${run.id}/matches` })).json()
  t.same(keys.items.map((m: { left_keys: string[] }) => m.left_keys[0]).sort(), ['T11', 'T2', 'T5', 'T8'])
  t.equal(run.summary.recipe_version, 1)

  // a retry runs the same saved recipe version with the same parameters, and says so from the
  // start: in the queued view and in its summary (the summary was null when the version was set
  // only after the run was queued)
  const again = await app.inject({ method: 'POST', url: `/api/runs/${run.id}/retry` })
  t.match(again.json(), { retry_of: run.id, recipe_id: saved.id, recipe_version: 1, params: run.params })
  const retried = await waitForRun(app, again.json().id)
  t.match(retried, { recipe_id: saved.id, recipe_version: 1, params: run.params, summary: { recipe_version: 1 } })
  await app.inject({ method: 'DELETE', url: `/api/runs/${retried.id}` })

  const oneAccount = await waitForRun(
    app,
    (await start({ period_start: '2024-01-01', period_end: '2024-03-31', account: 'ACC-1' })).json().id,
  )
  t.match(oneAccount.summary, { left: { rows: 6 }, right: { rows: 12 } }, 'the account filters the left side only')

  const missing = await start({ period_start: '2024-02-01' })
  t.equal(missing.statusCode, 400)
  t.match(missing.json(), { error: 'missing_param', message: /period_end/ })
  const illTyped = await start({ period_start: '2024-02-31', period_end: '2024-03-01' })
  t.equal(illTyped.statusCode, 400)
  t.match(illTyped.json(), { error: 'invalid_param', message: /period_start/ })
  const unknown = await start({ period_start: '2024-02-01', period_end: '2024-02-29', perod: 'x' })
  t.match(unknown.json(), { error: 'unknown_param', suggestion: /period_start, period_end, account/ })
  t.equal((await app.inject({ method: 'GET', url: '/api/runs' })).json().total, 2, 'refused runs leave nothing behind')

  const badDeclaration = await app.inject({
    method: 'POST',
    url: '/api/recipes',
    payload: { ...monthly, params: [{ name: 'when', type: 'date', left: { column: 'txn_dat', op: 'gte' } }] },
  })
  t.equal(badDeclaration.statusCode, 400)
  t.match(badDeclaration.json().issues[0], { code: 'unknown_column', message: /parameter "when"/ })
})

t.test('sample runs use the loaded scopes; dry runs keep only the summary; retry', async (t) => {
  const { app } = await smallApp(t)
  const recipe = { ...monthly, params: undefined }
  const refused = await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe, mode: 'sample' } })
  t.equal(refused.statusCode, 409)
  t.equal(refused.json().error, 'scope_not_loaded')

  for (const alias of ['bank', 'invoices'])
    await app.inject({
      method: 'POST',
      url: `/api/sources/${alias}/load-scoped`,
      payload: {
        conditions: [{ column: alias === 'bank' ? 'txn_date' : 'invoice_date', op: 'lt', value: '2024-02-01' }],
      },
    })
  const sample = await waitForRun(
    app,
    (await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe, mode: 'sample' } })).json().id,
  )
  t.match(sample.summary, { matches: 4, left: { rows: 4 }, right: { rows: 4 } })

  const dry = await waitForRun(
    app,
    (await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe, dry_run: true } })).json().id,
  )
  t.match(dry, { status: 'completed', dry_run: true, summary: { matches: 12 } })
  const none = await app.inject({ method: 'GET', url: `/api/runs/${dry.id}/matches` })
  t.equal(none.statusCode, 409)
  t.equal(none.json().error, 'no_results')

  const again = await app.inject({ method: 'POST', url: `/api/runs/${sample.id}/retry` })
  t.equal(again.statusCode, 202)
  const retried = await waitForRun(app, again.json().id)
  t.match(retried, { retry_of: sample.id, mode: 'sample', summary: { matches: 4 } })
})

/** A CSV pair big enough that a run takes a while (the loading alone is hundreds of milliseconds). */
async function bigPair(dir: string, rows: number) {
  const l = ['id,ref,amount']
  const r = ['id,ref,amount']
  for (let i = 0; i < rows; i++) {
    l.push(`L${i},R${i},${i % 1000}.25`)
    r.push(`M${i},R${i},${i % 1000}.25`)
  }
  await writeFile(join(dir, 'big-left.csv'), `${l.join('\n')}\n`)
  await writeFile(join(dir, 'big-right.csv'), `${r.join('\n')}\n`)
}

const bigRecipe = {
  name: 'big',
  left: { source: 'bl', key: ['id'] },
  right: { source: 'br', key: ['id'] },
  passes: [{ name: 'p', pattern: '1:1', when: 'l.ref = r.ref AND l.amount = r.amount' }],
}

t.test('cancel a running run: it stops, frees its worker, keeps nothing', async (t) => {
  const { app, dataDir } = await testApp(t)
  await bigPair(dataDir, 400_000)
  await register(app, 'bl', 'csv', 'big-left.csv')
  await register(app, 'br', 'csv', 'big-right.csv')
  const id = (await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe: bigRecipe } })).json().id
  // progress is read live: the left side is loaded while the right one loads
  const live = await waitForProgress(app, id, (p) => p.rows_loaded.left !== null)
  t.match(live, { status: 'running', progress: { rows_loaded: { left: 400_000 } } })
  t.ok(live.progress.percent >= 15 && live.progress.percent < 100, `${live.progress.percent}% while running`)
  const cancelled = await app.inject({ method: 'POST', url: `/api/runs/${id}/cancel` })
  t.equal(cancelled.statusCode, 200, cancelled.body)
  t.match(cancelled.json(), { status: 'cancelled', error: { error: 'cancelled' } })
  const kept = cancelled.json().progress
  t.not(kept.phase, 'done', 'a cancelled run keeps the phase it stopped in')
  t.ok(kept.percent >= live.progress.percent && kept.percent < 100, `stopped at ${kept.percent}%`)
  t.equal(kept.rows_loaded.left, 400_000)
  t.equal((await app.inject({ method: 'GET', url: `/api/runs/${id}/matches` })).json().error, 'results_not_ready')
  t.same(await readdir(join(dataDir, 'runs')), [], 'no results and no temporary files remain')
  const again = await app.inject({ method: 'POST', url: `/api/runs/${id}/cancel` })
  t.equal(again.statusCode, 409)
  t.equal(again.json().error, 'run_finished')
})

t.test('a restart mid-run leaves the run interrupted, with no partial results', async (t) => {
  const dataDir = t.testdir({})
  await bigPair(dataDir, 400_000)
  const database = await freshDatabase()
  t.teardown(() => database.close())
  const first = await testApp(t, { dataDir, database })
  await register(first.app, 'bl', 'csv', 'big-left.csv')
  await register(first.app, 'br', 'csv', 'big-right.csv')
  const id = (await first.app.inject({ method: 'POST', url: '/api/runs', payload: { recipe: bigRecipe } })).json().id
  await waitForRun(first.app, id, ['running'])
  await first.app.close()

  // and the crash case: a row still `running` with a temporary folder, as a killed process leaves them
  await database.db
    .insertInto('runs')
    .values({
      id: 'crashed',
      workspace_id: 'default',
      recipe: JSON.stringify(bigRecipe),
      mode: 'full',
      engine: 'memory',
      dry_run: false,
      params: '{}',
      status: 'running',
      progress: JSON.stringify({ phase: 'matching', rows_loaded: { left: 1, right: 1 }, pass: 'p', percent: 50 }),
    })
    .execute()
  await mkdir(join(dataDir, 'runs', '.tmp-crashed'), { recursive: true })
  await writeFile(join(dataDir, 'runs', '.tmp-crashed', 'matches.arrow'), 'half a file')

  const second = await testApp(t, { dataDir, database })
  for (const runId of [id, 'crashed']) {
    const run = (await second.app.inject({ method: 'GET', url: `/api/runs/${runId}` })).json()
    t.match(run, { status: 'interrupted', error: { error: 'interrupted' } }, runId)
    t.not(run.progress.phase, 'done', 'an interrupted run keeps the progress it had')
    t.equal((await second.app.inject({ method: 'GET', url: `/api/runs/${runId}/matches` })).statusCode, 409)
  }
  t.same(await readdir(join(dataDir, 'runs')), [], 'partial files are removed')
  const retried = await second.app.inject({ method: 'POST', url: `/api/runs/${id}/retry` })
  t.equal(retried.statusCode, 202)
  t.match(await waitForRun(second.app, retried.json().id), { status: 'completed', summary: { matches: 400_000 } })
})
