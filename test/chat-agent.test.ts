// The chat agent's loop through the real @anthropic-ai/sdk against a scripted fake Messages API:
// what the agent does with each kind of model reply, and what it sends back (tools offered,
// prompts, tool_results), on two small CSV sources.

import t, { type Test } from 'tap'
import { Lease, SessionStore } from '../src/orchestrator/store.js'
import { testApp } from './helpers/app.js'
import { type FakeAnthropic, fakeAnthropic, toolCalls } from './helpers/fake-anthropic.js'

const files = {
  'bank.csv': 'txn_id,ref,amount,day\nT1,R1,10.00,2024-01-05\nT2,R2,20.00,2024-01-06\nT3,R3,30.00,2024-02-01\n',
  'inv.csv': 'id,ref,total,day\nI1,R1,10.00,2024-01-04\nI2,R2,20.00,2024-01-06\nI3,R3,30.00,2024-01-30\n',
}

type Content = { type: string; id?: string; tool_use_id?: string; content?: string; is_error?: boolean; name?: string }

async function build(t: Test, env: Record<string, string> = {}) {
  const fake: FakeAnthropic = await fakeAnthropic(t)
  const { app } = await testApp(t, {
    files,
    env: {
      ANTHROPIC_API_KEY: 'k',
      ANTHROPIC_BASE_URL: fake.baseURL,
      AI_MAX_RETRIES: '0',
      AI_MODE: 'deterministic',
      ...env,
    },
  })
  for (const [alias, path] of [
    ['bank', 'bank.csv'],
    ['inv', 'inv.csv'],
  ])
    await app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type: 'csv', path } })
  const chat = async (payload: Record<string, unknown>) => {
    const res = await app.inject({ method: 'POST', url: '/api/chat', payload })
    return { status: res.statusCode, body: res.json() }
  }
  const events = async (id: string) =>
    (await app.inject({ method: 'GET', url: `/api/sessions/${id}/events` })).json().events as {
      type: string
      reason?: string
      tool?: string
      phase: string
    }[]
  return { fake, app, chat, events }
}

// one app and one fake for every test that needs no settings of its own: building an app is most
// of a test's time. Each test starts its own session and sees only its own requests.
const shared = await build(t)

async function setup(_t: Test) {
  shared.fake.requests.length = 0
  return shared
}

const toolsOf = (fake: FakeAnthropic, n: number) => fake.requests[n].tools?.map((x) => x.name)
const lastResults = (fake: FakeAnthropic, n: number) => {
  const messages = fake.requests[n].messages
  return messages[messages.length - 1].content as Content[]
}

/** Scripts and runs the first turn: sources listed, both previewed (the session ends in scoping). */
async function toScoping(s: Awaited<ReturnType<typeof setup>>) {
  s.fake.script(
    { body: toolCalls(['list_sources', {}]) },
    { body: toolCalls(['get_source_preview', { alias: 'bank' }], ['get_source_preview', { alias: 'inv' }]) },
    { text: 'Both sources are loaded. Which period?' },
  )
  const first = await s.chat({ message: 'reconcile bank with inv' })
  if (first.status !== 200) throw new Error(JSON.stringify(first.body))
  return first.body.session_id as string
}

t.test("a turn advances mid-turn: the next request has the new phase's prompt and tools", async (t) => {
  const s = await setup(t)
  const id = await toScoping(s)
  t.same(toolsOf(s.fake, 0), ['list_sources'])
  t.match(s.fake.requests[0].system, /Current phase: greeting/)
  t.same(toolsOf(s.fake, 1), ['list_sources', 'get_source_preview'], 'intent, in the same turn')
  t.match(s.fake.requests[1].system, /Current phase: intent/)
  t.same(toolsOf(s.fake, 2), ['get_source_preview', 'load_scoped'], 'scoping, still the same turn')
  t.match(s.fake.requests[2].system, /Left source bank: txn_id string, ref string, amount decimal, day date/)
  const session = (await s.app.inject({ method: 'GET', url: `/api/sessions/${id}` })).json()
  t.match(session, {
    phase: 'scoping',
    left_alias: 'bank',
    right_alias: 'inv',
    sources_list: [{ alias: 'bank' }, { alias: 'inv' }],
  })
  const transitions = (await s.events(id)).filter((e) => e.type === 'transition').map((e) => e.phase)
  t.same(transitions, ['intent', 'scoping'])
  // every tool_use of the turn was answered by a tool_result with its id
  const results = lastResults(s.fake, 2)
  const uses = (s.fake.requests[2].messages[3].content as Content[]).map((b) => b.id)
  t.same(
    results.map((r) => r.tool_use_id),
    uses,
  )
})

t.test("the second turn replays the first turn's tool_use / tool_result pairs", async (t) => {
  const s = await setup(t)
  const id = await toScoping(s)
  s.fake.script({ text: 'Which period do you want?' })
  await s.chat({ session_id: id, message: 'hmm' })
  const request = s.fake.requests[3]
  t.equal(request.messages.length, 7, 'user, (assistant tool_use, user tool_result) × 2, assistant text, user')
  const uses = request.messages.flatMap((m) =>
    (m.content as Content[]).filter((b) => b.type === 'tool_use').map((b) => b.id),
  )
  const results = request.messages.flatMap((m) =>
    (m.content as Content[]).filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id),
  )
  t.equal(uses.length, 3)
  t.same(results, uses)
  t.match(request.messages[6], { role: 'user', content: [{ type: 'text', text: 'hmm' }] })
})

t.test('a call to a tool of another phase is not executed and answered is_error', async (t) => {
  const s = await setup(t)
  s.fake.script({ body: toolCalls(['run_full', {}]) }, { text: 'Sorry.' })
  const res = await s.chat({ message: 'just run it' })
  t.equal(res.status, 200)
  const [result] = lastResults(s.fake, 1)
  t.match(result, { is_error: true, content: /tool_not_allowed: run_full is not available in phase greeting/ })
  t.equal((await s.app.inject({ method: 'GET', url: '/api/runs' })).json().total, 0, 'no run was started')
  t.ok((await s.events(res.body.session_id)).some((e) => e.reason === 'tool_not_allowed' && e.tool === 'run_full'))
})

t.test('the same call twice in one turn is executed once', async (t) => {
  const s = await setup(t)
  s.fake.script({ body: toolCalls(['list_sources', {}], ['list_sources', {}]) }, { text: 'Here they are.' })
  const res = await s.chat({ message: 'what do we have' })
  const results = lastResults(s.fake, 1)
  t.equal(results[0].is_error, false)
  t.match(results[1], { is_error: false, content: /^duplicate_tool_call_skipped/ })
  const calls = (await s.events(res.body.session_id)).filter((e) => e.type === 'tool_call')
  t.equal(calls.length, 1)
})

t.test('a tool failing until its budget is spent is no longer offered', async (t) => {
  const s = await setup(t)
  const id = await toScoping(s)
  const bad = (n: number) => ({
    body: toolCalls([
      'load_scoped',
      { alias: 'bank', conditions: [{ column: `dayz${n}`, op: 'gte', value: '2024-01-01' }] },
    ]),
  })
  s.fake.script(bad(1), bad(2), bad(3), { text: 'I cannot load that scope.' })
  const res = await s.chat({ session_id: id, message: 'January please' })
  t.equal(res.status, 200)
  t.match(lastResults(s.fake, 4)[0], {
    is_error: true,
    content: /unknown_column: .*\nhint: did you mean "day"\?\nretries left this turn: 2/,
  })
  t.match(lastResults(s.fake, 5)[0], { content: /retries left this turn: 1/ })
  t.match(lastResults(s.fake, 6)[0], {
    content: /retries left this turn: 0\nload_scoped is no longer available this turn/,
  })
  t.same(toolsOf(s.fake, 4), ['get_source_preview', 'load_scoped'])
  t.same(toolsOf(s.fake, 6), ['get_source_preview'], 'the exhausted tool is removed for the rest of the turn')
  t.ok((await s.events(id)).some((e) => e.reason === 'retry_budget_exhausted'))
  // a new turn offers it again
  s.fake.script({ text: 'ok' })
  await s.chat({ session_id: id, message: 'try again' })
  t.same(toolsOf(s.fake, 7), ['get_source_preview', 'load_scoped'])
})

t.test('a model that never stops calling tools ends the turn at the limit, gracefully', async (t) => {
  const s = await setup(t)
  // AGENT_LOOP_LIMIT=3 on the shared app: the limit is read at the start of every turn
  const limit = s.app.config.agentLoopLimit
  s.app.config.agentLoopLimit = 3
  t.teardown(() => {
    s.app.config.agentLoopLimit = limit
  })
  s.fake.script(
    { body: toolCalls(['list_sources', {}]) },
    { body: toolCalls(['list_sources', { x: 1 }]) },
    { body: toolCalls(['list_sources', { x: 2 }]) },
    { body: toolCalls(['list_sources', { x: 3 }]) },
  )
  const res = await s.chat({ message: 'go' })
  t.equal(res.status, 200)
  t.equal(s.fake.requests.length, 3)
  t.match(res.body.message, /as many steps as I can in one turn/)
  t.ok((await s.events(res.body.session_id)).some((e) => e.type === 'loop_limit_reached'))
  // the stored history still alternates and every tool_use has its result: a next turn works
  s.fake.script({ text: 'fine' })
  t.equal((await s.chat({ session_id: res.body.session_id, message: 'stop' })).status, 200)
})

t.test('undo and redo restore phase and fields', async (t) => {
  const s = await setup(t)
  const id = await toScoping(s)
  s.fake.script(
    {
      body: toolCalls([
        'load_scoped',
        { alias: 'bank', conditions: [{ column: 'day', op: 'lt', value: '2024-02-01' }] },
      ]),
    },
    { text: 'Left side loaded.' },
  )
  await s.chat({ session_id: id, message: 'January for bank' })
  const get = async () => (await s.app.inject({ method: 'GET', url: `/api/sessions/${id}` })).json()
  t.match(await get(), { phase: 'scoping', sample_left: { total_rows: 2 } })
  const undone = await s.app.inject({ method: 'POST', url: `/api/sessions/${id}/undo` })
  t.equal(undone.statusCode, 200)
  t.match(undone.json(), { phase: 'scoping', sample_left: null, left_alias: 'bank' })
  t.match(await get(), { sample_left: null })
  const redone = await s.app.inject({ method: 'POST', url: `/api/sessions/${id}/redo` })
  t.match(redone.json(), { sample_left: { total_rows: 2 } })
  t.equal((await s.app.inject({ method: 'POST', url: `/api/sessions/${id}/redo` })).json().error, 'nothing_to_redo')
  await s.app.inject({ method: 'POST', url: `/api/sessions/${id}/undo` })
  await s.app.inject({ method: 'POST', url: `/api/sessions/${id}/undo` })
  t.match(await get(), { phase: 'greeting', sources_list: null })
  // a turn after an undo continues from the restored conversation
  s.fake.script({ text: 'Hello again.' })
  await s.chat({ session_id: id, message: 'hello' })
  t.equal(s.fake.requests.at(-1)!.messages.length, 1, 'the undone turns are not replayed')
})

t.test('two concurrent turns on one session: the second is a 409 session_busy', async (t) => {
  const s = await setup(t)
  s.fake.script({ text: 'hello' })
  const id = (await s.chat({ message: 'hi' })).body.session_id
  s.fake.script({ delayMs: 400, text: 'slow answer' })
  const asked = s.fake.requests.length
  const first = s.chat({ session_id: id, message: 'one' })
  // the first turn holds the session once its model call has reached the fake
  while (s.fake.requests.length === asked) await new Promise((r) => setImmediate(r))
  const second = await s.chat({ session_id: id, message: 'two' })
  t.equal(second.status, 409)
  t.equal(second.body.error, 'session_busy')
  t.equal((await first).status, 200)
  s.fake.script({ text: 'now' })
  t.equal((await s.chat({ session_id: id, message: 'three' })).status, 200, 'free again after the turn')
})

t.test('a turn longer than its lease renews it: a second turn meanwhile is a 409, and then runs', async (t) => {
  const s = await build(t, { CHAT_LEASE_MS: '150' })
  s.fake.script({ text: 'hello' })
  const id = (await s.chat({ message: 'hi' })).body.session_id
  // a model call of a second, more than six leases long
  s.fake.script({ delayMs: 1000, text: 'slow answer' })
  const asked = s.fake.requests.length
  const first = s.chat({ session_id: id, message: 'one' })
  while (s.fake.requests.length === asked) await new Promise((r) => setImmediate(r))
  await new Promise((r) => setTimeout(r, 600)) // four leases in: renewed, not expired
  const second = await s.chat({ session_id: id, message: 'two' })
  t.match(second, { status: 409, body: { error: 'session_busy' } })
  t.equal((await first).status, 200, 'the long turn finished and saved')
  s.fake.script({ text: 'now' })
  t.equal((await s.chat({ session_id: id, message: 'two again' })).status, 200)
  const stored = await s.app.db
    .selectFrom('session_messages')
    .select(['seq', 'role', 'content'])
    .where('session_id', '=', id)
    .orderBy('seq')
    .execute()
  const said = stored.map((m) => `${m.role}: ${(m.content as { text?: string }[])[0]?.text}`)
  t.same(
    said,
    ['user: hi', 'assistant: hello', 'user: one', 'assistant: slow answer', 'user: two again', 'assistant: now'],
    'both turns whole, in order, nothing interleaved',
  )
})

t.test('a turn that lost its lease saves nothing and leaves the next holder alone', async (t) => {
  const s = await setup(t)
  const store = new SessionStore(s.app.db)
  const state = await store.create('default')
  // a turn on an instance that died: it held the session, then stopped renewing
  await s.app.db
    .updateTable('sessions')
    .set({ busy_until: new Date(Date.now() + 100), busy_token: 'dead-turn' })
    .where('id', '=', state.id)
    .execute()
  t.equal(await store.acquire(state.id, 60_000), null, 'busy while its lease lasts')
  await new Promise((r) => setTimeout(r, 150))
  const next = await store.acquire(state.id, 60_000)
  t.ok(next, 'once the lease has run out, the next turn takes the session')
  t.teardown(() => next?.release())
  // the dead turn's process comes back to life and tries to finish
  const dead = new Lease(s.app.db, state.id, 'dead-turn', 60_000)
  const before = await store.counts(state.id)
  const user = { role: 'user' as const, content: [{ type: 'text' as const, text: 'late' }] }
  await t.rejects(store.saveTurn(dead, state, 0, [user], []), { code: 'lease_lost' }, 'it saves nothing')
  await t.rejects(
    store.recordEvents(state.id, 1, [{ type: 'turn_finished', reason: 'turn_finished', phase: 'greeting' }], dead),
    {
      code: 'lease_lost',
    },
  )
  t.same(await store.counts(state.id), before, 'no message or snapshot of it was kept')
  t.notOk(await dead.renew(), 'it cannot renew a lease that is not its own')
  await dead.release()
  t.equal(await store.acquire(state.id, 60_000), null, "its release did not free the next turn's session")
  t.equal(await store.saveTurn(next!, state, 0, [user], []), 1, 'the holder saves')
  await next!.release()
  const again = await store.acquire(state.id, 60_000)
  t.ok(again, 'free after the holder released it')
  await again?.release()
})

t.test('a model 529 mid-turn leaves the session as it was, and the turn can be sent again', async (t) => {
  const s = await setup(t)
  s.fake.script(
    { body: toolCalls(['list_sources', {}]) },
    { status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } },
  )
  const sessions = async () => s.app.db.selectFrom('sessions').select(['id', 'created_at']).execute()
  const before = new Set((await sessions()).map((x) => x.id))
  const failed = await s.chat({ message: 'hi' })
  t.equal(failed.status, 502)
  t.equal(failed.body.error, 'model_overloaded')
  const created = (await sessions()).filter((x) => !before.has(x.id))
  t.equal(created.length, 1, 'the session was created, and is kept')
  const id = created[0].id
  t.match((await s.app.inject({ method: 'GET', url: `/api/sessions/${id}` })).json(), {
    phase: 'greeting',
    sources_list: null,
  })
  t.ok((await s.events(id)).some((e) => e.type === 'model_error' && e.reason === 'model_overloaded'))
  s.fake.script({ body: toolCalls(['list_sources', {}]) }, { text: 'Two sources.' })
  const retried = await s.chat({ session_id: id, message: 'hi' })
  t.equal(retried.status, 200)
  t.equal(retried.body.phase, 'intent')
  t.equal(s.fake.requests.at(-1)!.messages.length, 3, 'the failed turn left nothing in the history')
})

t.test('phases, the prompt preview, and instructions that name only their own tools', async (t) => {
  const s = await setup(t)
  const phases = (await s.app.inject({ method: 'GET', url: '/api/phases' })).json().phases
  t.same(
    phases.map((p: { name: string }) => p.name),
    ['greeting', 'intent', 'scoping', 'demonstration', 'inference', 'validation', 'execution'],
  )
  const tools = [
    'list_sources',
    'get_source_preview',
    'load_scoped',
    'propose_match',
    'infer_rules',
    'build_recipe',
    'validate_recipe',
    'run_sample',
    'run_full',
    'show_exceptions',
  ]
  for (const p of phases as { name: string; tools: string[]; instructions: string }[]) {
    const named = tools.filter((tool) => p.instructions.includes(tool))
    t.same(
      named.filter((n) => !p.tools.includes(n)),
      [],
      `${p.name} mentions only its own tools`,
    )
  }
  t.match(phases[2], {
    transitions: { next: 'demonstration', back: ['intent'] },
    prerequisites: { sessionFields: ['schema_left', 'schema_right'] },
  })
  const id = await toScoping(s)
  const prompt = (await s.app.inject({ method: 'GET', url: `/api/sessions/${id}/prompt` })).json()
  t.equal(prompt.phase, 'scoping')
  t.same(
    prompt.tools.map((x: { name: string }) => x.name),
    ['get_source_preview', 'load_scoped'],
  )
  // the preview is the exact prompt the next call gets
  s.fake.script({ text: 'ok' })
  await s.chat({ session_id: id, message: 'next' })
  t.equal(s.fake.requests.at(-1)!.system, prompt.system)
  const noKey = await testApp(t)
  const refused = await noKey.app.inject({ method: 'POST', url: '/api/chat', payload: { message: 'hi' } })
  t.equal(refused.statusCode, 503)
  t.equal(refused.json().error, 'model_not_configured')
})
