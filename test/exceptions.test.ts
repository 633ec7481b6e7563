// Exceptions made by completed runs: one per unmatched record and per ambiguous match, classified
// from the run's evidence, listed with filters, sorted and keyset-paged, read one at a time with
// the record's stored evidence, aged per run; none from dry or sample runs; and every change
// reaching the audit/webhook seam once, in the run's transaction (a failing seam stores nothing).

import { sql } from 'kysely'
import t from 'tap'
import type { ExceptionChange } from '../src/exceptions/changes.js'
import { testApp } from './helpers/app.js'
import {
  allExceptions,
  bankRecipe,
  byKey,
  completedRun,
  dayOne,
  registerBankSources,
  saveRecipe,
} from './helpers/exceptions.js'

const files = { 'bank.csv': dayOne.bank, 'invoices.csv': dayOne.invoices }
const daysSince = (date: string) => Math.floor((Date.now() - Date.parse(`${date}T00:00:00Z`)) / 86_400_000)

t.test('a completed run turns its unmatched records and ambiguous matches into classified exceptions', async (t) => {
  const { app } = await testApp(t, { files })
  await registerBankSources(app)
  const recipeId = await saveRecipe(app)
  const run = await completedRun(app, { recipe_id: recipeId })
  t.equal(run.status, 'completed', JSON.stringify(run.error))
  t.match(run.summary, { matches: 2, ambiguous: 1, left: { unmatched: 5 }, right: { unmatched: 5 } })

  const items = await allExceptions(app)
  const e = byKey(items)
  t.same(
    Object.fromEntries(items.map((x) => [x.record_key, x.reason])),
    {
      T2: 'fee_variance',
      I2: 'fee_variance',
      T3: 'amount_outside_tolerance',
      I3: 'amount_outside_tolerance',
      T4: 'date_outside_window',
      I4: 'date_outside_window',
      T5: 'missing_counterpart',
      I5: 'missing_counterpart',
      T8: 'fee_variance',
      I8: 'fee_variance',
      'T6,T7 ⇄ I6': 'ambiguous',
    },
    'every unmatched record (both sides) and the ambiguous match, each with its reason',
  )
  // exact decimals: the record's amount, the difference to its closest candidate, what is at risk
  t.match(e.T2, {
    side: 'left',
    amount: '100.00',
    difference: '3.00',
    amount_at_risk: '3.00',
    candidate_key: 'I2',
    record_date: '2024-03-10',
    recipe_version: 1,
    run_id: run.id,
    status: 'open',
    version: 1,
    carry: true,
  })
  t.match(e.I3, { side: 'right', amount: '450.00', difference: '-50.00', amount_at_risk: '50.00' })
  t.match(e.T5, { amount: '75.25', amount_at_risk: '75.25', difference: null, candidate_key: null })
  t.equal(e.T5.age_days, daysSince('2024-03-09'), 'age counts from the record date')
  t.match(e['T6,T7 ⇄ I6'], {
    side: 'both',
    keys: { left: ['T6', 'T7'], right: ['I6'] },
    match_id: 'm0000002',
    amount: '600.00',
    carry: false,
  })

  // one exception with its evidence, read back from the run's stored results
  const detail = (await app.inject({ url: `/api/exceptions/${e.T4.id}` })).json()
  t.match(detail, {
    exception: { id: e.T4.id, reason: 'date_outside_window' },
    comments: [],
    history: [],
    evidence: {
      closest_candidate: 'I4',
      failed: { pass: 'exact', conjunct: "r.invoice_date BETWEEN l.txn_date - INTERVAL '3 days' AND l.txn_date" },
      record: { txn_id: 'T4', amount: '200.00', reference: 'R4' },
    },
  })
  t.equal((await app.inject({ url: '/api/exceptions/999999' })).statusCode, 404)

  // the run's open exceptions by age: all of these are old
  const aging = (await app.inject({ url: `/api/runs/${run.id}/exceptions/aging` })).json()
  t.same(aging, [
    { bucket: '0-1 d', count: 0, amount: '0' },
    { bucket: '2-7 d', count: 0, amount: '0' },
    { bucket: '8-30 d', count: 0, amount: '0' },
    // 3.00 + 3.00 + 50.00 + 50.00 + 200.00 + 200.00 + 75.25 + 60.00 + 5.00 + 5.00 + 600.00
    { bucket: '>30 d', count: 11, amount: '1251.25' },
  ])
})

t.test('the list filters, sorts and pages by keyset', async (t) => {
  const { app } = await testApp(t, { files })
  await registerBankSources(app)
  const run = await completedRun(app, { recipe_id: await saveRecipe(app) })
  const keys = async (query: string) => (await allExceptions(app, query)).map((x) => x.record_key)

  const feeAsc = await allExceptions(app, 'reason=fee_variance&sort=amount&order=asc')
  t.same(
    feeAsc.map((x) => x.amount_at_risk),
    ['3.00', '3.00', '5.00', '5.00'],
    'sorted by amount at risk, ascending',
  )
  t.same(await keys('reason=missing_counterpart,date_outside_window&side=left&sort=created&order=asc'), ['T4', 'T5'])
  t.same(
    (await allExceptions(app, 'amount_min=50.00&amount_max=75.25&sort=amount')).map((x) => x.amount_at_risk),
    ['75.25', '60.00', '50.00', '50.00'],
    'exact bounds, both inclusive',
  )
  t.same(await keys(`run_id=${run.id}&age_max=10`), [], 'nothing is younger than ten days')
  t.equal((await keys('age_min=10')).length, 11)
  t.same(await keys('assignee=-&reason=ambiguous'), ['T6,T7 ⇄ I6'])

  // pages of two, by amount descending: every exception once, in order, then the end
  const seen: string[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const res: { json(): unknown } = await app.inject({
      url: `/api/exceptions?sort=amount&limit=2${cursor ? `&cursor=${cursor}` : ''}`,
    })
    const page = res.json() as { items: { amount_at_risk: string }[]; next_cursor: string | null }
    seen.push(...page.items.map((x: { amount_at_risk: string }) => x.amount_at_risk))
    cursor = page.next_cursor
    pages++
  } while (cursor)
  t.equal(pages, 6)
  t.same(seen, ['600.00', '200.00', '200.00', '75.25', '60.00', '50.00', '50.00', '5.00', '5.00', '3.00', '3.00'])
  const counted = (await app.inject({ url: '/api/exceptions?limit=1&count=true&side=right' })).json()
  t.equal(counted.total, 5)
  t.equal(counted.items.length, 1)

  const bad = await app.inject({ url: '/api/exceptions?reason=lost' })
  t.equal(bad.statusCode, 400)
  t.match(bad.json(), { error: 'invalid_request', suggestion: /missing_counterpart/ })
  t.equal((await app.inject({ url: '/api/exceptions?cursor=nonsense' })).statusCode, 400)
  t.equal((await app.inject({ url: '/api/exceptions?amount_min=1e3' })).statusCode, 400)
  t.equal((await allExceptions(app, 'status=resolved')).length, 0)
})

t.test('dry runs and sample runs make no exceptions', async (t) => {
  const { app } = await testApp(t, { files })
  await registerBankSources(app)
  const recipeId = await saveRecipe(app)
  const dry = await completedRun(app, { recipe_id: recipeId, dry_run: true })
  t.equal(dry.status, 'completed')
  for (const alias of ['bank', 'invoices'])
    await app.inject({ method: 'POST', url: `/api/sources/${alias}/load-scoped`, payload: { conditions: [] } })
  const sample = await completedRun(app, { recipe_id: recipeId, mode: 'sample' })
  t.equal(sample.status, 'completed')
  t.equal(sample.summary.left.unmatched, 5)
  t.same(await allExceptions(app, 'status=all'), [])
  // an inline recipe's full run makes them (it carries nothing: there is no recipe to carry for)
  const inline = await completedRun(app, { recipe: bankRecipe })
  t.equal((await allExceptions(app, `run_id=${inline.id}`)).length, 11)
})

t.test('every change reaches the seam once, in the run transaction; a failing seam stores nothing', async (t) => {
  const { app } = await testApp(t, { files })
  await registerBankSources(app)
  const recipeId = await saveRecipe(app)
  // a real recorder: a table written in the caller's transaction
  await sql`create table seam_log (action text, entity text, event text, payload jsonb)`.execute(app.db)
  const calls: ExceptionChange[] = []
  let failOn: string | null = null
  app.exceptions.setOnChange(async (trx, change) => {
    calls.push(change)
    await sql`insert into seam_log values (${change.action}, ${change.entity.id}, ${change.event?.type ?? null},
      ${JSON.stringify(change.event?.payload ?? null)})`.execute(trx)
    if (change.action === failOn) throw new Error('the audit trail is down')
  })
  const run = await completedRun(app, { recipe_id: recipeId })
  const logged = (
    await sql<{ action: string; entity: string; event: string; payload: Record<string, unknown> }>`
    select * from seam_log`.execute(app.db)
  ).rows
  t.same(
    logged.map((r) => [r.action, r.entity, r.event]),
    [['exceptions.create_for_run', run.id, 'exception.created']],
    'one change, one event for the whole run',
  )
  t.match(logged[0].payload, {
    run_id: run.id,
    recipe_id: recipeId,
    count: 11,
    by_reason: {
      fee_variance: { count: 4, amount_at_risk: '16.00' },
      amount_outside_tolerance: { count: 2, amount_at_risk: '100.00' },
      date_outside_window: { count: 2, amount_at_risk: '400.00' },
      missing_counterpart: { count: 2, amount_at_risk: '135.25' },
      ambiguous: { count: 1, amount_at_risk: '600.00' },
    },
  })

  // the same run again, the seam failing: the run fails, and neither its exceptions nor the
  // seam's row outlive the transaction
  failOn = 'exceptions.create_for_run'
  await app.db.deleteFrom('exceptions').execute()
  await app.db.deleteFrom('exception_sets').execute()
  // behind the service's back: its copy of the sets is told (it is the embedded database's only writer)
  app.exceptions.sets.invalidate()
  await sql`delete from seam_log`.execute(app.db)
  const failed = await completedRun(app, { recipe_id: recipeId })
  t.equal(failed.status, 'failed')
  t.match(failed.error, { error: 'exceptions_not_stored', message: /audit trail is down/ })
  t.same(await allExceptions(app, 'status=all'), [])
  t.equal((await sql`select * from seam_log`.execute(app.db)).rows.length, 0)
  const results = await app.inject({ url: `/api/runs/${failed.id}/matches` })
  t.equal(results.statusCode, 409, 'its results are not kept either')
})
