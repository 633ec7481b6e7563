// The chat agent's execution phase shows the exceptions of the run it started: show_exceptions is
// offered there (and named in its instructions), nowhere earlier; through the real SDK against a
// scripted Messages API, a full run then show_exceptions answers counts by reason and the largest
// amounts at risk as an `exceptions` card.

import t from 'tap'
import { SessionStore } from '../src/orchestrator/store.js'
import { testApp } from './helpers/app.js'
import { bankRecipe, dayOne, registerBankSources } from './helpers/exceptions.js'
import { fakeAnthropic, toolCalls } from './helpers/fake-anthropic.js'

t.test('execution offers show_exceptions, and it shows the exceptions of the run the session started', async (t) => {
  const fake = await fakeAnthropic(t)
  const { app } = await testApp(t, {
    files: { 'bank.csv': dayOne.bank, 'invoices.csv': dayOne.invoices },
    env: { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: fake.baseURL, AI_MAX_RETRIES: '0', AI_MODE: 'deterministic' },
  })
  await registerBankSources(app)
  const store = new SessionStore(app.db)

  // a session that has reached execution: sources chosen, recipe built and approved
  const { id } = await store.create('default')
  await app.db
    .updateTable('sessions')
    .set({
      phase: 'execution',
      left_alias: 'bank',
      right_alias: 'invoices',
      recipe_draft: JSON.stringify(bankRecipe),
      validation: JSON.stringify({ valid: true, issues: [], suggestions: [] }),
      validation_approved: true,
    })
    .where('id', '=', id)
    .execute()
  const prompt = (await app.inject({ url: `/api/sessions/${id}/prompt` })).json()
  t.same(
    prompt.tools.map((x: { name: string }) => x.name),
    ['run_full', 'run_sample', 'show_exceptions'],
  )
  t.match(prompt.system, /call show_exceptions/)

  // an earlier phase neither offers it nor names it
  const early = await store.create('default')
  const greeting = (await app.inject({ url: `/api/sessions/${early.id}/prompt` })).json()
  t.notOk(greeting.tools.some((x: { name: string }) => x.name === 'show_exceptions'))
  t.notMatch(greeting.system, /show_exceptions/)

  fake.script(
    { body: toolCalls(['show_exceptions', {}]) },
    { body: toolCalls(['run_full', {}]) },
    { body: toolCalls(['show_exceptions', { top: 3 }]) },
    { text: 'Eleven exceptions: the largest is the tie on R6.' },
  )
  const res = await app.inject({
    method: 'POST',
    url: '/api/chat',
    payload: { session_id: id, message: 'run it and tell me what is left to work' },
  })
  t.equal(res.statusCode, 200, res.body)
  const reply = res.json()
  // the first call, before any full run, is answered with an error and its hint
  const firstResult = (fake.requests[1].messages.at(-1)!.content as { content: string; is_error: boolean }[])[0]
  t.match(firstResult, { is_error: true, content: /no full run yet[^]*run_full first/ })

  const card = reply.segments.find(
    (s: { type: string; card?: { type: string } }) => s.type === 'card' && s.card?.type === 'exceptions',
  )
  t.ok(card, 'an exceptions card')
  const run = (await app.inject({ url: '/api/runs' })).json().runs[0]
  t.match(card.card.data, {
    run_id: run.id,
    total: 11,
    open: 11,
    by_reason: [
      { reason: 'fee_variance', count: 4, open: 4, amount_at_risk: '16.00' },
      { reason: 'amount_outside_tolerance', count: 2, amount_at_risk: '100.00' },
      { reason: 'date_outside_window', count: 2, amount_at_risk: '400.00' },
      { reason: 'missing_counterpart', count: 2, amount_at_risk: '135.25' },
      { reason: 'ambiguous', count: 1, amount_at_risk: '600.00' },
    ],
  })
  t.same(
    card.card.data.largest.map((x: { record_key: string; amount_at_risk: string }) => [x.record_key, x.amount_at_risk]),
    [
      ['T6,T7 ⇄ I6', '600.00'],
      ['I4', '200.00'],
      ['T4', '200.00'],
    ],
    'the three largest amounts at risk (the alias top → limit)',
  )
  // the model is told the same numbers it interprets
  const told = (fake.requests[3].messages.at(-1)!.content as { content: string }[])[0].content
  t.match(told, /"total":11/)
  t.match(reply.segments.at(-1), { type: 'text', text: /Eleven exceptions/ })
})
