// Schedules through REST with the scheduler's clock in the test's hands: validation with hints,
// create / list / get / update / delete, a due schedule firing once with its rolling parameters
// resolved at that moment (and carrying open items by default), occurrences missed while down
// firing once, an operator's fire-now, and every change reaching the audit/webhook seam.

import t, { type Test } from 'tap'
import type { ExceptionChange } from '../src/exceptions/changes.js'
import type { Recipe } from '../src/recipes/schema.js'
import { testApp } from './helpers/app.js'
import { bankRecipe, dayOne, registerBankSources, saveRecipe } from './helpers/exceptions.js'
import { waitForRun } from './helpers/runs.js'

const files = { 'bank.csv': dayOne.bank, 'invoices.csv': dayOne.invoices }
const daily: Recipe = {
  ...bankRecipe,
  params: [{ name: 'day', type: 'date', left: { column: 'txn_date', op: 'gte' } }],
}
const T0 = Date.UTC(2024, 2, 11, 4, 0) // 04:00Z, Monday 11 March 2024

async function setup(t: Test) {
  const { app } = await testApp(t, { files, env: { SCHEDULER_TICK_MS: '0' } })
  await registerBankSources(app)
  const recipeId = await saveRecipe(app, daily)
  let now = T0
  app.schedules.clock = () => now
  const changes: ExceptionChange[] = []
  app.schedules.setOnChange(async (_trx, change) => {
    changes.push(change)
  })
  return { app, recipeId, changes, setNow: (ms: number) => (now = ms) }
}

t.test('a schedule is checked when made: cron, zone, parameters, recipe', async (t) => {
  const { app, recipeId } = await setup(t)
  const create = (body: object) => app.inject({ method: 'POST', url: '/api/schedules', payload: body })
  const bad = await create({ recipe_id: recipeId, cron: '0 25 * * *', params: { day: { rolling: 'yesterday' } } })
  t.equal(bad.statusCode, 400)
  t.match(bad.json(), {
    error: 'invalid_cron',
    message: /hour: 25 is outside 0-23/,
    suggestion: /five fields.*"0 6 \* \* \*"/,
  })
  t.match((await create({ recipe_id: recipeId, cron: '0 0 30 2 *', params: { day: '2024-01-01' } })).json(), {
    error: 'invalid_cron',
    message: /never fires/,
  })
  t.match(
    (
      await create({ recipe_id: recipeId, cron: '@daily', timezone: 'Mars/Olympus', params: { day: '2024-01-01' } })
    ).json(),
    { error: 'invalid_timezone' },
  )
  t.match((await create({ recipe_id: recipeId, cron: '@daily', params: { day: { rolling: 'someday' } } })).json(), {
    error: 'invalid_param',
    suggestion: /yesterday/,
  })
  t.match((await create({ recipe_id: recipeId, cron: '@daily' })).json(), { error: 'missing_param' })
  t.match((await create({ recipe_id: recipeId, cron: '@daily', params: { day: '2024-01-01', x: 1 } })).json(), {
    error: 'unknown_param',
  })
  t.equal((await create({ recipe_id: 'nope', cron: '@daily' })).statusCode, 404)
  t.same((await app.inject({ url: '/api/schedules' })).json(), { schedules: [] }, 'nothing was stored')
})

t.test('create, read, change and delete; the next occurrence follows the cron and the zone', async (t) => {
  const { app, recipeId, changes } = await setup(t)
  const made = await app.inject({
    method: 'POST',
    url: '/api/schedules',
    payload: {
      recipe_id: recipeId,
      name: 'daily bank',
      cron: '0 6 * * *',
      timezone: 'America/Sao_Paulo',
      params: { day: { rolling: 'yesterday' } },
    },
  })
  t.equal(made.statusCode, 201, made.body)
  const s = made.json()
  // 06:00 in São Paulo (UTC-3) after 04:00Z on the 11th is 09:00Z that day
  t.match(s, {
    name: 'daily bank',
    cron: '0 6 * * *',
    timezone: 'America/Sao_Paulo',
    carry_open_items: true,
    active: true,
    next_run_at: '2024-03-11T09:00:00.000Z',
    last_run_id: null,
    version: 1,
  })
  t.same(
    (await app.inject({ url: '/api/schedules' })).json().schedules.map((x: { id: string }) => x.id),
    [s.id],
  )
  t.match((await app.inject({ url: `/api/schedules/${s.id}` })).json(), { id: s.id })

  const patch = (body: object) => app.inject({ method: 'PATCH', url: `/api/schedules/${s.id}`, payload: body })
  t.match((await patch({ cron: '30 7 * * 1-5', timezone: 'UTC', version: 1 })).json(), {
    next_run_at: '2024-03-11T07:30:00.000Z',
    version: 2,
  })
  t.equal((await patch({ active: false, version: 1 })).statusCode, 409, 'a stale version')
  t.match((await patch({ active: false })).json(), { active: false, next_run_at: null })
  t.match((await patch({ active: true })).json(), { next_run_at: '2024-03-11T07:30:00.000Z' })
  t.equal((await patch({ cron: 'every day' })).statusCode, 400)

  t.equal((await app.inject({ method: 'DELETE', url: `/api/schedules/${s.id}` })).statusCode, 204)
  t.equal((await app.inject({ url: `/api/schedules/${s.id}` })).statusCode, 404)
  t.same(
    changes.map((c) => c.action),
    ['schedule.create', 'schedule.update', 'schedule.update', 'schedule.update', 'schedule.delete'],
  )
  t.ok(changes.every((c) => c.entity.type === 'schedule' && c.entity.id === s.id && c.event === undefined))
})

t.test('a due schedule fires once, its rolling parameters resolved then; missed ones fire once', async (t) => {
  const { app, recipeId, setNow, changes } = await setup(t)
  const s = (
    await app.inject({
      method: 'POST',
      url: '/api/schedules',
      payload: { recipe_id: recipeId, cron: '0 6 * * *', params: { day: { rolling: 'yesterday' } } },
    })
  ).json()
  t.same(await app.schedules.tick(Date.UTC(2024, 2, 11, 5, 59)), [], 'not due yet')
  const at = Date.UTC(2024, 2, 11, 6, 0, 20)
  setNow(at)
  const fired = await app.schedules.tick(at)
  t.equal(fired.length, 1)
  t.same(await app.schedules.tick(at), [], 'claimed: the same tick again fires nothing')
  const run = await waitForRun(app, fired[0])
  t.equal(run.status, 'completed', JSON.stringify(run.error))
  t.match(run, { params: { day: '2024-03-10' }, carry_open_items: true, recipe_id: recipeId })
  t.match((await app.inject({ url: `/api/schedules/${s.id}` })).json(), {
    next_run_at: '2024-03-12T06:00:00.000Z',
    last_run_id: run.id,
    last_fired_at: new Date(at).toISOString(),
    last_error: null,
  })

  // down from the 12th to the 15th: three occurrences missed, one run, and the next is the 16th
  const back = Date.UTC(2024, 2, 15, 9, 30)
  const caughtUp = await app.schedules.tick(back)
  t.equal(caughtUp.length, 1)
  t.match((await waitForRun(app, caughtUp[0])).params, { day: '2024-03-14' })
  t.equal((await app.inject({ url: `/api/schedules/${s.id}` })).json().next_run_at, '2024-03-16T06:00:00.000Z')

  // an operator fires it now: the next occurrence stays
  const now = await app.inject({ method: 'POST', url: `/api/schedules/${s.id}/fire` })
  t.equal(now.statusCode, 202, now.body)
  t.match(
    now.json(),
    { params: { day: '2024-03-10' }, status: 'queued' },
    'the clock says the 11th: yesterday is the 10th',
  )
  await waitForRun(app, now.json().id)
  t.equal((await app.inject({ url: `/api/schedules/${s.id}` })).json().next_run_at, '2024-03-16T06:00:00.000Z')
  t.same(
    changes.map((c) => [c.action, c.actor]),
    [
      ['schedule.create', 'bootstrap'],
      ['schedule.fire', 'system:scheduler'],
      ['schedule.fire', 'system:scheduler'],
      ['schedule.fire', 'bootstrap'],
    ],
  )
  const runs = (await app.inject({ url: '/api/runs' })).json()
  t.equal(runs.total, 3, 'three runs in all')
})

t.test('a schedule whose run cannot start says why', async (t) => {
  const { app, recipeId } = await setup(t)
  const s = (
    await app.inject({
      method: 'POST',
      url: '/api/schedules',
      payload: { recipe_id: recipeId, cron: '@hourly', params: { day: '2024-03-01' }, carry_open_items: false },
    })
  ).json()
  await app.inject({ method: 'DELETE', url: '/api/sources/bank' })
  const res = await app.inject({ method: 'POST', url: `/api/schedules/${s.id}/fire` })
  t.equal(res.statusCode, 400)
  t.match(res.json(), { error: 'invalid_recipe', message: /bank/ })
  t.match((await app.inject({ url: `/api/schedules/${s.id}` })).json(), {
    last_error: { error: 'invalid_recipe' },
    last_run_id: null,
  })
  t.equal((await app.schedules.tick(T0 + 3_600_000)).length, 0, 'the occurrence is used; nothing started')
  t.match((await app.inject({ url: `/api/schedules/${s.id}` })).json(), { next_run_at: '2024-03-11T06:00:00.000Z' })
})
