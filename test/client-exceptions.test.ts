// The generated client SDK covers the exceptions and schedules routes, typed, against a listening server.

import t from 'tap'
import { createConcordClient } from '../openapi/client/index.js'
import { testApp } from './helpers/app.js'
import { completedRun, dayOne, registerBankSources, saveRecipe } from './helpers/exceptions.js'

t.test('the typed client lists, reads and works exceptions, and manages schedules', async (t) => {
  const { app } = await testApp(t, { files: { 'bank.csv': dayOne.bank, 'invoices.csv': dayOne.invoices } })
  await registerBankSources(app)
  const recipeId = await saveRecipe(app)
  const run = await completedRun(app, { recipe_id: recipeId })
  const concord = createConcordClient(await app.listen({ port: 0, host: '127.0.0.1' }))

  const page = await concord.GET('/api/exceptions', { params: { query: { sort: 'amount', limit: 3, count: true } } })
  t.equal(page.data?.total, 11)
  t.same(
    page.data?.items.map((x) => x.amount_at_risk),
    ['600.00', '200.00', '200.00'],
  )
  const first = page.data!.items[0]
  const detail = await concord.GET('/api/exceptions/{id}', { params: { path: { id: first.id } } })
  t.equal(detail.data?.exception.reason, 'ambiguous')
  const assigned = await concord.POST('/api/exceptions/{id}/assign', {
    params: { path: { id: first.id } },
    body: { assignee: 'ana', version: first.version },
  })
  t.equal(assigned.data?.version, 2)
  const aging = await concord.GET('/api/runs/{id}/exceptions/aging', { params: { path: { id: run.id } } })
  t.equal(aging.data?.length, 4)
  const conflict = await concord.POST('/api/exceptions/{id}/accept', {
    params: { path: { id: first.id } },
    body: { reason: 'fine', version: 1 },
  })
  t.equal(conflict.response.status, 409)
  t.equal(conflict.error?.error, 'version_conflict')

  const schedule = await concord.POST('/api/schedules', { body: { recipe_id: recipeId, cron: '@daily' } })
  t.equal(schedule.response.status, 201)
  t.equal(schedule.data?.carry_open_items, true)
  const listed = await concord.GET('/api/schedules')
  t.equal(listed.data?.schedules.length, 1)
  const paused = await concord.PATCH('/api/schedules/{id}', {
    params: { path: { id: schedule.data!.id } },
    body: { active: false },
  })
  t.equal(paused.data?.next_run_at, null)
})
