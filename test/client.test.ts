// The generated client SDK against a real listening server.

import t from 'tap'
import { createConcordClient } from '../openapi/client/index.js'
import { testApp } from './helpers/app.js'
import { fakeAnthropic, messageWithText } from './helpers/fake-anthropic.js'
import { tinyFiles, tinyRecipe } from './helpers/tiny.js'

t.test('the typed client drives a listening server', async (t) => {
  const { app } = await testApp(t, {
    files: {
      'bank.json': JSON.stringify([
        { id: 1, amount: '10.50' },
        { id: 2, amount: '20.00' },
      ]),
    },
  })
  const address = await app.listen({ port: 0, host: '127.0.0.1' })
  const concord = createConcordClient(address)

  const created = await concord.POST('/api/sources', { body: { alias: 'bank', type: 'json', path: 'bank.json' } })
  t.equal(created.response.status, 201)
  t.equal(created.data?.alias, 'bank')

  const described = await concord.GET('/api/sources/{alias}', { params: { path: { alias: 'bank' } } })
  t.same(
    described.data?.columns.map((c) => c.type),
    ['integer', 'decimal'],
  )

  const scoped = await concord.POST('/api/sources/{alias}/load-scoped', {
    params: { path: { alias: 'bank' } },
    body: { conditions: [{ column: 'amount', op: 'gt', value: '15' }] },
  })
  t.equal(scoped.data?.total_rows, 1)
  t.same(scoped.data?.rows, [{ id: 2, amount: '20.00' }])

  const missing = await concord.GET('/api/sources/{alias}', { params: { path: { alias: 'nope' } } })
  t.equal(missing.response.status, 404)
  t.equal(missing.error?.error, 'source_not_found')
})

t.test('the typed client covers every route family against a listening server', async (t) => {
  const fake = await fakeAnthropic(t)
  const { app } = await testApp(t, {
    files: tinyFiles,
    env: { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: fake.baseURL, AI_MAX_RETRIES: '0' },
  })
  const concord = createConcordClient(await app.listen({ port: 0, host: '127.0.0.1' }))

  // ops
  t.equal((await concord.GET('/health')).response.status, 200)
  t.equal((await concord.GET('/ready')).response.status, 200)

  // sources: defaulted query parameters may be left out (strict tsc checks this file)
  for (const [alias, path] of [
    ['bank', 'bank.csv'],
    ['inv', 'inv.csv'],
  ])
    t.equal((await concord.POST('/api/sources', { body: { alias, type: 'csv', path } })).response.status, 201)
  t.equal((await concord.GET('/api/sources')).data?.sources.length, 2)
  const preview = await concord.GET('/api/sources/{alias}/preview', { params: { path: { alias: 'bank' } } })
  t.equal(preview.data?.preview_rows, 2)

  // recipes
  const recipe = { ...tinyRecipe, passes: [{ ...tinyRecipe.passes[0], pattern: '1:1' as const }] }
  const saved = await concord.POST('/api/recipes', { body: recipe })
  t.equal(saved.response.status, 201)
  const id = saved.data!.id
  t.equal((await concord.GET('/api/recipes/{id}', { params: { path: { id } } })).data?.version, 1)
  t.equal((await concord.GET('/api/recipes')).data?.recipes.length, 1)
  const validated = await concord.POST('/api/recipes/validate', { body: recipe })
  t.same(validated.data, { valid: true, issues: [], suggestions: [], warnings: [] })
  t.equal((await concord.POST('/api/recipes/explain', { body: recipe })).response.status, 200)

  // runs: list, page and export with their defaults
  const started = await concord.POST('/api/runs', { body: { recipe_id: id } })
  t.equal(started.response.status, 202)
  const runId = started.data!.id
  let run = (await concord.GET('/api/runs/{id}', { params: { path: { id: runId } } })).data
  while (run && (run.status === 'queued' || run.status === 'running')) {
    await new Promise((r) => setTimeout(r, 50))
    run = (await concord.GET('/api/runs/{id}', { params: { path: { id: runId } } })).data
  }
  t.equal(run?.summary?.matches, 2)
  t.equal((await concord.GET('/api/runs')).data?.total, 1)
  const matches = await concord.GET('/api/runs/{id}/matches', { params: { path: { id: runId } } })
  t.same(
    matches.data?.items.map((m) => m.match_id),
    ['m0000001', 'm0000002'],
  )
  const unmatched = await concord.GET('/api/runs/{id}/unmatched/left', { params: { path: { id: runId } } })
  t.equal(unmatched.data?.total, 0)
  const exported = await concord.GET('/api/runs/{id}/export', { params: { path: { id: runId } }, parseAs: 'text' })
  t.match(exported.data, /^match_id,pass,pattern/)
  const retried = await concord.POST('/api/runs/{id}/retry', { params: { path: { id: runId } } })
  t.equal(retried.data?.retry_of, runId)
  const cancelled = await concord.POST('/api/runs/{id}/cancel', { params: { path: { id: retried.data!.id } } })
  t.ok([200, 409].includes(cancelled.response.status), 'cancelled, or already finished')

  // the reasoning tools: 200, typed
  t.ok((await concord.GET('/api/ai/tools')).data?.tools.some((tool) => tool.name === 'nl_to_sql'))
  const ai = await concord.POST('/api/ai', {
    body: {
      tool: 'detect_field_mappings',
      input: { schema_a: [{ name: 'amount', type: 'decimal' }], schema_b: [{ name: 'total', type: 'decimal' }] },
    },
  })
  t.equal(ai.response.status, 200)
  t.equal(ai.data?.engine, 'deterministic')

  // the chat agent: a turn, the session, its prompt and events, undo, the phases
  fake.script({ body: messageWithText('Hello: which two sources shall we reconcile?') })
  const turn = await concord.POST('/api/chat', { body: { message: 'hi' } })
  t.equal(turn.response.status, 200, JSON.stringify(turn.error))
  const segment = turn.data!.segments[0]
  t.equal(segment.type === 'text' ? segment.text : null, 'Hello: which two sources shall we reconcile?')
  const sid = turn.data!.session_id
  const session = await concord.GET('/api/sessions/{id}', { params: { path: { id: sid } } })
  t.equal(session.data?.status, 'active')
  t.equal(session.data?.recipe_draft, null)
  const prompt = await concord.GET('/api/sessions/{id}/prompt', { params: { path: { id: sid } } })
  t.ok(prompt.data?.tools.every((tool) => typeof tool.name === 'string'))
  const events = await concord.GET('/api/sessions/{id}/events', { params: { path: { id: sid } } })
  t.ok(events.data?.events.every((e) => typeof e.reason === 'string' && Number.isInteger(e.seq)))
  t.ok(
    [200, 409].includes(
      (await concord.POST('/api/sessions/{id}/undo', { params: { path: { id: sid } } })).response.status,
    ),
  )
  const phases = await concord.GET('/api/phases')
  t.equal(phases.data?.phases[0].transitions.next, 'intent')

  // keys last: the first key ends open mode
  const key = await concord.POST('/api/keys', { body: { name: 'ci', role: 'viewer' } })
  t.equal(key.response.status, 201)
  t.equal((await concord.GET('/api/keys')).response.status, 401, 'no key: refused now')
  const withKey = createConcordClient(app.listeningOrigin, { headers: { authorization: `Bearer ${key.data!.key}` } })
  t.equal((await withKey.GET('/api/runs')).data?.total, 2)
  t.equal((await withKey.GET('/api/keys')).response.status, 403, 'a viewer lists no keys')
})
