// Open items across runs: each day's file holds only that day's records, and a run with
// carry_open_items appends the records earlier runs of the recipe left open (read from the run
// that stored them) before matching. A carried record matched today closes its exception (both
// runs and the match linked); one still unmatched stays the same exception (no duplicate, the run
// noted); one resolved by hand is not carried; every record is in exactly one of matched,
// unmatched-left, unmatched-right. Without carry_open_items nothing is carried. A stored column
// that cannot take today's type fails the run clearly.

import { randomUUID } from 'node:crypto'
import { utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import t, { type Test } from 'tap'
import { testApp } from './helpers/app.js'
import { waitForRun } from './helpers/runs.js'
import {
  allExceptions,
  bankHeader,
  bankRecipe,
  byKey,
  completedRun,
  invoiceHeader,
  registerBankSources,
  saveRecipe,
} from './helpers/exceptions.js'

const day1 = {
  bank: [
    bankHeader,
    'T1,100.00,2024-03-10,R1',
    'T5,75.25,2024-03-09,R5',
    'T9,200.00,2024-03-10,R9',
    'T7,42.00,2024-03-10,R7',
  ],
  invoices: [invoiceHeader, 'I1,100.00,2024-03-09,R1,', 'I5,60.00,2024-03-08,RX,'],
}
const day2 = {
  bank: [bankHeader, 'T10,300.00,2024-03-11,R10'],
  invoices: [
    invoiceHeader,
    'I10,300.00,2024-03-11,R10,',
    'I9,200.00,2024-03-09,R9,', // T9's invoice, a day late
    'I55,75.25,2024-03-08,R5,', // T5's
    'I7,42.00,2024-03-10,R7,', // T7's, but T7 was written off yesterday
  ],
}

let tick = 0
/** Today's files replace yesterday's (a fresh mtime, so no cache serves yesterday's). */
async function drop(dir: string, files: { bank: string[]; invoices: string[] }) {
  const at = new Date(Date.now() + ++tick * 10_000)
  for (const [name, lines] of [
    ['bank.csv', files.bank],
    ['invoices.csv', files.invoices],
  ] as const) {
    await writeFile(join(dir, name), lines.join('\n'))
    await utimes(join(dir, name), at, at)
  }
}

async function setup(t: Test) {
  const { app, dataDir } = await testApp(t, { files: {} })
  await drop(dataDir, day1)
  await registerBankSources(app)
  const recipeId = await saveRecipe(app)
  return { app, dataDir, recipeId }
}

const rows = (run: { summary: { left: { rows: number; matched: number; unmatched: number } } }) => run.summary.left

async function match(app: FastifyInstance, runId: string, key: string) {
  return (await app.inject({ url: `/api/runs/${runId}/matches?key=${key}` })).json().items[0]
}

t.test('carried open items meet their counterparts in a later run and close', async (t) => {
  const { app, dataDir, recipeId } = await setup(t)
  const first = await completedRun(app, { recipe_id: recipeId, carry_open_items: true })
  t.equal(first.status, 'completed', JSON.stringify(first.error))
  t.same((await allExceptions(app)).map((x) => x.record_key).sort(), ['I5', 'T5', 'T7', 'T9'])
  const before = byKey(await allExceptions(app))
  const off = await app.inject({
    method: 'POST',
    url: `/api/exceptions/${before.T7.id}/write-off`,
    payload: { reason: 'duplicate booking, reversed' },
  })
  t.equal(off.statusCode, 200)

  await drop(dataDir, day2)
  const second = await completedRun(app, { recipe_id: recipeId, carry_open_items: true })
  t.equal(second.status, 'completed', JSON.stringify(second.error))
  t.equal(second.carry_open_items, true)
  // T10 from today, T5 and T9 carried (T7 was written off); I5 carried beside today's four
  t.match(second.summary, {
    left: { rows: 3, matched: 3, unmatched: 0 },
    right: { rows: 5, matched: 3, unmatched: 2 },
    matches: 3,
  })
  for (const side of ['left', 'right'] as const) {
    const s = second.summary[side]
    t.equal(s.matched + s.unmatched, s.rows, `${side}: every record in exactly one set`)
  }

  const after = byKey(await allExceptions(app, 'status=all'))
  for (const key of ['T5', 'T9']) {
    const m = await match(app, second.id, key)
    t.match(after[key], {
      id: before[key].id,
      status: 'resolved',
      resolution: 'matched_by_later_run',
      resolution_detail: { run_id: second.id, match_id: m.match_id },
      run_id: first.id,
      resolved_by: `system:run:${second.id}`,
    })
  }
  t.same((await match(app, second.id, 'T9')).right_keys, ['I9'])
  // I5 is still unmatched: the same exception, noting the run that saw it
  t.match(after.I5, { id: before.I5.id, status: 'open', run_id: first.id, last_run_id: second.id })
  t.equal(Object.values(after).filter((x) => x.record_key === 'I5').length, 1, 'no duplicate')
  // I7 is new today (its bank line was written off, so not carried); T7 stays written off
  t.match(after.I7, { status: 'open', run_id: second.id, reason: 'missing_counterpart' })
  t.match(after.T7, { status: 'resolved', resolution: 'written_off' })
  // the carried record's evidence is still its own, read from the run that stored it
  const i5 = (await app.inject({ url: `/api/exceptions/${after.I5.id}` })).json()
  t.match(i5.evidence.record, { invoice_id: 'I5', total_amount: '60.00' })

  // aging of the second run: what it created (I7) and what it saw still open (I5)
  const aging = (await app.inject({ url: `/api/runs/${second.id}/exceptions/aging` })).json()
  t.same(
    aging.map((b: { count: number }) => b.count),
    [0, 0, 0, 2],
  )
  t.equal(aging[3].amount, '102.00')
})

t.test('without carry_open_items nothing is carried; a key today already has is not appended twice', async (t) => {
  const { app, dataDir, recipeId } = await setup(t)
  const first = await completedRun(app, { recipe_id: recipeId })
  await drop(dataDir, day2)
  const second = await completedRun(app, { recipe_id: recipeId })
  t.equal(second.carry_open_items, false)
  t.match(second.summary, { left: { rows: 1 }, right: { rows: 4 } })
  const open = byKey(await allExceptions(app))
  t.match(open.T9, { status: 'open', run_id: first.id, last_run_id: null }, 'not carried, not seen')
  t.match(open.I9, { run_id: second.id, reason: 'missing_counterpart' })

  // a cumulative file: today's holds T5 again; carried, it would be there twice
  await drop(dataDir, { bank: [...day2.bank, 'T5,75.25,2024-03-09,R5'], invoices: day2.invoices })
  const third = await completedRun(app, { recipe_id: recipeId, carry_open_items: true })
  t.equal(third.status, 'completed', JSON.stringify(third.error))
  // today: T10, T5; carried: T9, T7 (T5 is today's copy)
  t.equal(rows(third).rows, 4)
  t.match(byKey(await allExceptions(app, 'status=all')).T5, {
    status: 'resolved',
    resolution: 'matched_by_later_run',
    resolution_detail: { run_id: third.id },
  })

  const refused = await app.inject({
    method: 'POST',
    url: '/api/runs',
    payload: { recipe_id: recipeId, carry_open_items: true, dry_run: true },
  })
  t.equal(refused.statusCode, 400)
  t.match(refused.json(), { error: 'carry_unavailable' })
})

t.test("a stored column that cannot take today's type fails the run clearly", async (t) => {
  const { app, dataDir, recipeId } = await setup(t)
  // day one's bank lines carry a text batch label; today's batch is a number
  await drop(dataDir, {
    bank: ['txn_id,amount,txn_date,reference,batch', 'T5,75.25,2024-03-09,R5,B-1'],
    invoices: day1.invoices,
  })
  const first = await completedRun(app, { recipe_id: recipeId })
  t.equal(first.status, 'completed')
  await drop(dataDir, {
    bank: ['txn_id,amount,txn_date,reference,batch', 'T10,300.00,2024-03-11,R10,7'],
    invoices: day2.invoices,
  })
  const second = await completedRun(app, { recipe_id: recipeId, carry_open_items: true })
  t.equal(second.status, 'failed')
  t.match(second.error, {
    error: 'carry_incompatible',
    message: /left source's columns changed.*"batch" was string and is integer now/,
    suggestion: /carry_open_items false/,
  })
  t.equal((await allExceptions(app, `run_id=${second.id}`)).length, 0)

  // a column the source gained is NULL in the carried records
  await drop(dataDir, {
    bank: ['txn_id,amount,txn_date,reference,batch,memo', 'T10,300.00,2024-03-11,R10,B-2,x'],
    invoices: day2.invoices,
  })
  const third = await completedRun(app, { recipe_id: recipeId, carry_open_items: true })
  t.equal(third.status, 'completed', JSON.stringify(third.error))
  t.match(byKey(await allExceptions(app, 'status=all')).T5, { resolution: 'matched_by_later_run' })
})

t.test("a recipe's full runs take turns, so two started together open each record once", async (t) => {
  const { app, dataDir } = await testApp(t, { files: {} })
  await drop(dataDir, day1)
  await registerBankSources(app)
  const recipeId = await saveRecipe(app)
  const other = await saveRecipe(app, { ...bankRecipe, name: 'another' })
  const start = async (body: Record<string, unknown>) => {
    const res = await app.inject({ method: 'POST', url: '/api/runs', payload: body })
    t.equal(res.statusCode, 202, res.body)
    return res.json().id as string
  }
  // started in one burst, with two runs allowed at a time (RUN_CONCURRENCY's default)
  const ids = await Promise.all([
    start({ recipe_id: recipeId }),
    start({ recipe_id: recipeId }),
    start({ recipe_id: other }),
    start({ recipe_id: recipeId, dry_run: true }),
  ])
  const [first, second, ofOther, dry] = await Promise.all(ids.map((id) => waitForRun(app, id)))
  for (const run of [first, second, ofOther, dry]) t.equal(run.status, 'completed', JSON.stringify(run.error))
  const [a, b] = Date.parse(first.started_at) <= Date.parse(second.started_at) ? [first, second] : [second, first]
  t.ok(Date.parse(b.started_at) >= Date.parse(a.finished_at), 'the second full run started after the first finished')

  // every record the two left open is one open exception of the recipe, seen by the later run
  const open = await allExceptions(app, `recipe_id=${recipeId}`)
  const keys = open.map((e) => `${e.side} ${e.record_key}`)
  t.same(keys.length, new Set(keys).size, `no record opened twice: ${keys.sort().join(', ')}`)
  t.same(keys.sort(), ['left T5', 'left T7', 'left T9', 'right I5'])
  t.ok(
    open.every((e) => e.run_id === a.id && e.last_run_id === b.id),
    'opened by the first, seen still open by the second',
  )
  t.equal((await allExceptions(app, `recipe_id=${other}`)).length, 4, 'the other recipe has its own')
})

t.test(
  "a full run waits while another instance's run of its recipe is running, and can be cancelled meanwhile",
  async (t) => {
    const { app, dataDir } = await testApp(t, { files: {} })
    await drop(dataDir, day1)
    await registerBankSources(app)
    const recipeId = await saveRecipe(app)
    const first = await completedRun(app, { recipe_id: recipeId })
    // another instance, alive, running the recipe (a copy of the first run's row, as that instance's)
    await sql`insert into instances (id) values ('elsewhere')`.execute(app.db)
    const elsewhere = randomUUID()
    await sql`
    insert into runs (id, workspace_id, recipe_id, recipe_version, recipe, mode, engine, dry_run, params, status, progress, owner, started_at)
    select ${elsewhere}, workspace_id, recipe_id, recipe_version, recipe, mode, engine, dry_run, params, 'running', progress, 'elsewhere', now()
    from runs where id = ${first.id}
  `.execute(app.db)
    const start = async () => {
      const res = await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe_id: recipeId } })
      t.equal(res.statusCode, 202, res.body)
      return res.json().id as string
    }
    const status = async (id: string) => (await app.inject({ url: `/api/runs/${id}` })).json().status
    const waiting = await start()
    await new Promise((r) => setTimeout(r, 700))
    t.equal(await status(waiting), 'queued', 'it waits, queued')
    const cancelled = await app.inject({ method: 'POST', url: `/api/runs/${waiting}/cancel` })
    t.match(cancelled.json(), { status: 'cancelled', error: { error: 'cancelled' } })

    const next = await start()
    await new Promise((r) => setTimeout(r, 400))
    t.equal(await status(next), 'queued')
    const freed = Date.now()
    await sql`update runs set status = 'completed', finished_at = now() where id = ${elsewhere}`.execute(app.db)
    const done = await waitForRun(app, next)
    t.equal(done.status, 'completed', 'it runs once the other has finished')
    t.ok(Date.parse(done.started_at) >= freed, 'started after the other finished')

    // a row of this instance's own left 'running' (its outcome could not be recorded) is no run to wait for
    const own = await app.db
      .selectFrom('instances')
      .select('id')
      .where('id', '<>', 'elsewhere')
      .executeTakeFirstOrThrow()
    await sql`
      insert into runs (id, workspace_id, recipe_id, recipe_version, recipe, mode, engine, dry_run, params, status, progress, owner, started_at)
      select ${randomUUID()}, workspace_id, recipe_id, recipe_version, recipe, mode, engine, dry_run, params, 'running', progress, ${own.id}, now()
      from runs where id = ${first.id}
    `.execute(app.db)
    t.equal((await waitForRun(app, await start())).status, 'completed', 'not held by a stale row of its own')
  },
)

t.test('deleting the run that closed earlier exceptions leaves them closed, as rows', async (t) => {
  const { app, dataDir, recipeId } = await setup(t)
  const first = await completedRun(app, { recipe_id: recipeId, carry_open_items: true })
  const before = byKey(await allExceptions(app))
  await drop(dataDir, day2)
  const second = await completedRun(app, { recipe_id: recipeId, carry_open_items: true })
  t.equal(second.status, 'completed', JSON.stringify(second.error))
  const all = Object.values(byKey(await allExceptions(app, 'status=all')))
  const closedBySecond = all.filter((x) => x.resolution_detail?.run_id === second.id)
  t.same(closedBySecond.map((x) => x.record_key).sort(), ['T5', 'T7', 'T9'], 'the second run closed three')
  t.equal(
    await app.db
      .selectFrom('exceptions')
      .select('id')
      .execute()
      .then((r) => r.length),
    0,
    'no rows yet',
  )

  const res = await app.inject({ method: 'DELETE', url: `/api/runs/${second.id}` })
  t.equal(res.statusCode, 204, res.body)
  const after = byKey(await allExceptions(app, 'status=all'))
  for (const x of closedBySecond)
    t.match(
      after[x.record_key],
      {
        id: before[x.record_key].id,
        run_id: first.id,
        status: 'resolved',
        resolution: 'matched_by_later_run',
        resolution_detail: { run_id: second.id },
        version: x.version,
      },
      `${x.record_key} stays as the deleted run left it`,
    )
  t.same(
    Object.keys(after).sort(),
    Object.keys(before).sort(),
    "the first run's exceptions are all there; the deleted run's own went with it",
  )
  t.same(
    (await allExceptions(app)).map((x) => x.record_key),
    ['I5'],
    'open: what the first run opened and the second did not close',
  )
  const rows = await app.db.selectFrom('exceptions').select('id').execute()
  t.same(
    rows.map((r) => Number(r.id)).sort((a, b) => a - b),
    closedBySecond.map((x) => x.id).sort((a, b) => a - b),
    'the closed ones are rows now',
  )
})
