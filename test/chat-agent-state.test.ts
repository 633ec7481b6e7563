// The chat agent's session state through the real @anthropic-ai/sdk against a scripted fake
// Messages API: going back (a new scope clears what depended on the old one, by the transitions
// the phase configs declare), refused transitions and prerequisites (invalid_state), events and
// metrics with reason codes, the SSE stream, compacted tool results, empty model replies, and
// sessions kept in a real PostgreSQL. One app and one fake serve the tests on the embedded
// database; each test starts its own session.

import t, { type Test } from 'tap'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { EMPTY_REPLY } from '../src/orchestrator/loop.js'
import { COMPACT_ABOVE } from '../src/orchestrator/prompt.js'
import { testApp, testEnv } from './helpers/app.js'
import { fakeAnthropic, messageWithText, toolCalls } from './helpers/fake-anthropic.js'
import { type TestDatabase, testDatabase } from './helpers/pg.js'

const days = ['2024-01-05', '2024-01-12', '2024-01-20', '2024-02-02', '2024-02-10', '2024-02-21']
const files = {
  'bank.csv': `txn_id,ref,amount,day\n${days.map((d, n) => `T${n + 1},R${n + 1},${(n + 1) * 10}.00,${d}`).join('\n')}\n`,
  'inv.csv': `id,ref,total,day\n${days.map((d, n) => `I${n + 1},R${n + 1},${(n + 1) * 10}.00,${d}`).join('\n')}\n`,
  // wide rows: a preview of 50 is far past what a tool result may send whole
  'wide.csv': `id,note\n${Array.from({ length: 60 }, (_, n) => `W${n},${'note '.repeat(30)}${n}`).join('\n')}\n`,
}

type Block = { type: string; id?: string; tool_use_id?: string; content?: string; is_error?: boolean }
type Reply = {
  session_id: string
  phase: string
  status: string
  message: string
  segments: { type: string; card?: { type: string; data: unknown } }[]
}

const fake = await fakeAnthropic(t)
const { app } = await testApp(t, {
  files,
  env: { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: fake.baseURL, AI_MAX_RETRIES: '0', AI_MODE: 'deterministic' },
})
for (const alias of ['bank', 'inv', 'wide'])
  await app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type: 'csv', path: `${alias}.csv` } })

async function post(payload: Record<string, unknown>) {
  const res = await app.inject({ method: 'POST', url: '/api/chat', payload })
  return { status: res.statusCode, body: res.json() }
}
async function chat(payload: Record<string, unknown>): Promise<Reply> {
  const res = await post(payload)
  if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}
const session = async (id: string) => (await app.inject({ method: 'GET', url: `/api/sessions/${id}` })).json()
const events = async (id: string) =>
  (await app.inject({ method: 'GET', url: `/api/sessions/${id}/events` })).json().events as {
    type: string
    reason?: string
    tool?: string
    phase: string
    detail?: Record<string, unknown>
  }[]
const phaseOf = (n: number) => /Current phase: (\w+)/.exec(fake.requests[n].system ?? '')?.[1]
const toolsOf = (n: number) => fake.requests[n].tools?.map((x) => x.name)
const between = (alias: string, from: string, to: string) => [
  'load_scoped',
  { alias, conditions: [{ column: 'day', op: 'between', value: [from, to] }] },
]

/** A new session in demonstration: both sources previewed, both sides scoped, pairs proposed. */
async function toDemonstration(from = '2024-01-01', to = '2024-02-29') {
  fake.script(
    { body: toolCalls(['list_sources', {}]) },
    { body: toolCalls(['get_source_preview', { alias: 'bank' }], ['get_source_preview', { alias: 'inv' }]) },
    { text: 'Which period?' },
  )
  const id = (await chat({ message: 'bank against inv' })).session_id
  return { id, ...(await scopeAndPropose(id, from, to)) }
}

async function scopeAndPropose(id: string, from: string, to: string) {
  fake.script(
    { body: toolCalls(between('bank', from, to) as [string, unknown], between('inv', from, to) as [string, unknown]) },
    { body: toolCalls(['propose_match', { limit: 6 }]) },
    { text: 'Please confirm some pairs.' },
  )
  const reply = await chat({ session_id: id, message: 'that period' })
  if (reply.phase !== 'demonstration') throw new Error(`in ${reply.phase}`)
  const proposals = reply.segments.find((s) => s.card?.type === 'match_proposals')!.card!.data as { id: string }[]
  return { proposals }
}

async function confirm(id: string, proposal: string, ...script: Parameters<typeof fake.script>) {
  fake.script(...(script.length ? script : [{ text: 'Noted.' }]))
  return chat({ session_id: id, card_response: { type: 'confirm_match', proposal_id: proposal } })
}

t.test('a scope change in demonstration goes back to scoping and clears what depended on it', async (t) => {
  const { id, proposals } = await toDemonstration()
  t.ok(proposals.length >= 3, `${proposals.length} proposals`)
  await confirm(id, proposals[0].id)
  await confirm(id, proposals[1].id)
  t.match(await session(id), { phase: 'demonstration', confirmed_pairs: [{}, {}], sample_right: { total_rows: 6 } })

  const mark = fake.requests.length
  fake.script(
    { body: toolCalls(between('bank', '2024-01-01', '2024-01-31') as [string, unknown]) },
    { text: 'Bank is now January only. Shall I load January for inv too?' },
  )
  const back = await chat({ session_id: id, message: 'Only January, please' })
  t.match(back, { phase: 'scoping', message: /January for inv too/ })
  t.equal(phaseOf(mark), 'demonstration')
  // the next request of the same turn is scoping's: its prompt, its tools, and no stale right sample
  t.equal(phaseOf(mark + 1), 'scoping')
  t.same(toolsOf(mark + 1), ['get_source_preview', 'load_scoped'])
  t.match(fake.requests[mark + 1].system, /Left sample of bank, scope .*2024-01-31.*\(showing 3 of 3\)/)
  t.match(fake.requests[mark + 1].system, /Right sample: not loaded yet/)
  t.notMatch(fake.requests[mark + 1].system, /Confirmed pairs/)
  const after = await session(id)
  t.match(after, {
    phase: 'scoping',
    scope_left: [{ column: 'day', op: 'between', value: ['2024-01-01', '2024-01-31'] }],
    scope_right: null,
    sample_left: { total_rows: 3 },
    sample_right: null,
    proposals: null,
    confirmed_pairs: [],
    recipe_draft: null,
  })
  const wentBack = (await events(id)).filter((e) => e.reason === 'went_back')
  t.equal(wentBack.length, 1)
  t.match(wentBack[0], {
    type: 'transition',
    phase: 'scoping',
    detail: {
      from: 'demonstration',
      to: 'scoping',
      cleared: ['scope_left', 'scope_right', 'sample_left', 'sample_right'],
    },
  })
  // it stays in scoping on the next turn too: only a new right sample moves it on
  fake.script({ text: 'Waiting for your answer.' })
  t.equal((await chat({ session_id: id, message: 'hmm' })).phase, 'scoping')
})

t.test('a scope change after the recipe draft exists clears the pairs, rules and draft', async (t) => {
  const { id, proposals } = await toDemonstration('2024-01-01', '2024-01-31')
  t.equal(proposals.length, 3)
  await confirm(id, proposals[0].id)
  await confirm(id, proposals[1].id)
  const mark = fake.requests.length
  const drafted = await confirm(
    id,
    proposals[2].id,
    { body: toolCalls(['infer_rules', {}]) },
    { body: toolCalls(['build_recipe', {}]) },
    { text: 'Here is the draft.' },
  )
  t.equal(drafted.phase, 'validation')
  t.same(toolsOf(mark), ['infer_rules', 'build_recipe', 'load_scoped'])
  t.match(await session(id), { confirmed_pairs: [{}, {}, {}], rules: { rules: [{}] }, recipe_draft: { passes: [{}] } })

  fake.script(
    { body: toolCalls(between('inv', '2024-02-01', '2024-02-29') as [string, unknown]) },
    { text: 'Inv is now February.' },
  )
  const back = await chat({ session_id: id, message: 'February for inv' })
  t.equal(back.phase, 'scoping')
  t.match(await session(id), {
    phase: 'scoping',
    sample_left: null,
    sample_right: { total_rows: 3 },
    confirmed_pairs: [],
    rules: null,
    recipe_draft: null,
    validation: null,
    validation_approved: false,
  })
  t.match(
    (await events(id)).filter((e) => e.reason === 'went_back'),
    [{ detail: { from: 'validation', to: 'scoping' } }],
  )
  t.match(fake.requests.at(-1)!.system, /Current phase: scoping/)
})

t.test('another source for one side goes back to intent; the other side stays chosen', async (t) => {
  fake.script(
    { body: toolCalls(['list_sources', {}]) },
    { body: toolCalls(['get_source_preview', { alias: 'bank' }], ['get_source_preview', { alias: 'inv' }]) },
    { body: toolCalls(between('bank', '2024-01-01', '2024-01-31') as [string, unknown]) },
    { text: 'Bank is scoped.' },
  )
  const id = (await chat({ message: 'bank against inv, January' })).session_id
  t.match(await session(id), { phase: 'scoping', sample_left: { total_rows: 3 } })
  fake.script({ body: toolCalls(['get_source_preview', { alias: 'wide', side: 'right' }]) }, { text: 'Wide it is.' })
  const replaced = await chat({ session_id: id, message: 'use wide instead of inv' })
  t.equal(replaced.phase, 'scoping', 'both sides known again: straight back to scoping')
  t.match(await session(id), {
    left_alias: 'bank',
    right_alias: 'wide',
    schema_right: [{ name: 'id' }, { name: 'note' }],
    scope_left: null,
    sample_left: null,
  })
  const moves = (await events(id)).filter((e) => e.type === 'transition').map((e) => `${e.reason}:${e.phase}`)
  t.same(moves.slice(-2), ['went_back:intent', 'advanced:scoping'])
})

t.test('loading the same scope again is not a change: the session stays where it is', async (t) => {
  const { id, proposals } = await toDemonstration()
  await confirm(id, proposals[0].id)
  fake.script({ body: toolCalls(between('bank', '2024-01-01', '2024-02-29') as [string, unknown]) }, { text: 'Same.' })
  t.equal((await chat({ session_id: id, message: 'reload bank' })).phase, 'demonstration')
  t.match(await session(id), { confirmed_pairs: [{}] })
  t.notOk((await events(id)).some((e) => e.reason === 'went_back'))
})

t.test('an undeclared transition is refused with invalid_state and changes nothing', async (t) => {
  const demonstration = app.chat.phases.get('demonstration')
  const declared = demonstration.back
  demonstration.back = []
  t.teardown(() => {
    demonstration.back = declared
  })
  const phases = (await app.inject({ method: 'GET', url: '/api/phases' })).json().phases
  t.match(phases[3], { name: 'demonstration', transitions: { next: 'inference', back: [] } })
  const { id, proposals } = await toDemonstration()
  await confirm(id, proposals[0].id)
  const before = await session(id)
  const mark = fake.requests.length
  fake.script(
    { body: toolCalls(between('bank', '2024-01-01', '2024-01-31') as [string, unknown]) },
    { text: 'I cannot change the scope now.' },
  )
  const refused = await chat({ session_id: id, message: 'Only January' })
  t.equal(refused.phase, 'demonstration')
  const [result] = fake.requests[mark + 1].messages.at(-1)!.content as Block[]
  t.match(result, {
    is_error: true,
    content: /^invalid_state: phase demonstration cannot go back to scoping\nhint: it may go back to no phase/,
  })
  const after = await session(id)
  t.same(
    [after.phase, after.scope_left, after.sample_left, after.confirmed_pairs],
    [before.phase, before.scope_left, before.sample_left, before.confirmed_pairs],
  )
  t.match(
    (await events(id)).filter((e) => e.reason === 'invalid_state'),
    [{ type: 'tool_error', tool: 'load_scoped', phase: 'demonstration' }],
  )
})

t.test('a session whose prerequisites are missing answers invalid_state, and nothing runs', async (t) => {
  fake.script({ body: toolCalls(['list_sources', {}]) }, { text: 'Hi.' })
  const id = (await chat({ message: 'hi' })).session_id
  // a phase whose prerequisites the fields do not meet (a damaged row, a restored old snapshot)
  await app.db.updateTable('sessions').set({ phase: 'inference' }).where('id', '=', id).execute()
  const asked = fake.requests.length
  const refused = await post({ session_id: id, message: 'go on' })
  t.equal(refused.status, 409)
  t.match(refused.body, { error: 'invalid_state', message: /phase inference needs confirmed_pairs/ })
  t.equal(fake.requests.length, asked, 'the model was not called')
  const prompt = await app.inject({ method: 'GET', url: `/api/sessions/${id}/prompt` })
  t.equal(prompt.statusCode, 409)
  t.equal(prompt.json().error, 'invalid_state')
  t.match(await session(id), { phase: 'inference', snapshot: 1 })
  t.match((await events(id)).at(-1), { type: 'invalid_state', reason: 'invalid_state', phase: 'inference' })
})

/** The value of concord_agent_events_total for one type and reason in /metrics (0 when absent). */
async function counted(type: string, reason: string): Promise<number> {
  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`concord_agent_events_total{type="${type}",reason="${reason}"}`))
  return line ? Number(line.split(' ').at(-1)) : 0
}

t.test('every event has a reason code and is counted in /metrics, refusals included', async (t) => {
  const watched = [
    ['tool_call', 'called'],
    ['tool_duplicate', 'duplicate_tool_call_skipped'],
    ['tool_denied', 'tool_not_allowed'],
    ['tool_error', 'unknown_column'],
    ['tool_retry', 'retry'],
    ['transition', 'advanced'],
    ['model_call', 'model_call'],
    ['card_error', 'unknown_proposal'],
    ['turn_refused', 'session_busy'],
    ['turn_finished', 'turn_finished'],
  ] as const
  const before = await Promise.all(watched.map(([type, reason]) => counted(type, reason)))
  fake.script(
    { body: toolCalls(['list_sources', {}], ['list_sources', {}], ['run_full', {}]) },
    { body: toolCalls(['get_source_preview', { alias: 'bank' }], ['get_source_preview', { alias: 'inv' }]) },
    {
      body: toolCalls([
        'load_scoped',
        { alias: 'bank', conditions: [{ column: 'dayz', op: 'gte', value: '2024-01-01' }] },
      ]),
    },
    {
      body: toolCalls([
        'load_scoped',
        { alias: 'bank', conditions: [{ column: 'day', op: 'gte', value: '2024-01-01' }] },
      ]),
    },
    { text: 'Bank is loaded.' },
  )
  const id = (await chat({ message: 'bank against inv, from January' })).session_id
  const bad = await post({ session_id: id, card_response: { type: 'confirm_match', proposal_id: 'nope' } })
  t.equal(bad.status, 400)
  t.match(bad.body, { error: 'unknown_proposal', suggestion: /the proposals shown are none/ })

  // a second turn while the first waits on the model
  fake.script({ delayMs: 300, text: 'slow' })
  const asked = fake.requests.length
  const first = post({ session_id: id, message: 'one' })
  while (fake.requests.length === asked) await new Promise((r) => setImmediate(r))
  const second = await post({ session_id: id, message: 'two' })
  t.match(second, { status: 409, body: { error: 'session_busy' } })
  t.equal((await first).status, 200)

  const after = await Promise.all(watched.map(([type, reason]) => counted(type, reason)))
  t.same(Object.fromEntries(watched.map(([type, reason], n) => [`${type}:${reason}`, after[n] - before[n]])), {
    'tool_call:called': 5, // the failing load_scoped ran too
    'tool_duplicate:duplicate_tool_call_skipped': 1,
    'tool_denied:tool_not_allowed': 1,
    'tool_error:unknown_column': 1,
    'tool_retry:retry': 1,
    'transition:advanced': 2,
    'model_call:model_call': 6,
    'card_error:unknown_proposal': 1,
    'turn_refused:session_busy': 1,
    'turn_finished:turn_finished': 2,
  })
  const stored = await events(id)
  t.same(
    stored.filter((e) => !e.reason),
    [],
    'no event without a reason code',
  )
  t.match(
    stored.find((e) => e.type === 'tool_retry'),
    { tool: 'load_scoped', detail: { failures: 1 } },
  )
  t.match(
    stored.find((e) => e.type === 'card_error'),
    {
      reason: 'unknown_proposal',
      phase: 'scoping',
      detail: { card: { type: 'confirm_match', proposal_id: 'nope' } },
    },
  )
  t.ok(stored.some((e) => e.type === 'turn_refused' && e.reason === 'session_busy'))
  t.match(await session(id), { phase: 'scoping', snapshot: 2 }, 'the refused requests changed nothing')
})

t.test('the prompt names only the tools offered with it, also after one is withdrawn', async (t) => {
  const { id } = await (async () => {
    fake.script(
      { body: toolCalls(['list_sources', {}]) },
      { body: toolCalls(['get_source_preview', { alias: 'bank' }], ['get_source_preview', { alias: 'inv' }]) },
      { text: 'Which period?' },
    )
    return chat({ message: 'bank against inv' }).then((r) => ({ id: r.session_id }))
  })()
  const mark = fake.requests.length
  const bad = (n: number) => ({
    body: toolCalls(['load_scoped', { alias: 'bank', conditions: [{ column: `x${n}`, op: 'eq', value: 1 }] }]),
  })
  fake.script(bad(1), bad(2), bad(3), { text: 'That column does not exist.' })
  await chat({ session_id: id, message: 'by x' })
  t.match(fake.requests[mark].system, /Tools available now: get_source_preview, load_scoped\./)
  t.match(fake.requests[mark].system, /load each side with load_scoped/)
  t.same(toolsOf(mark + 3), ['get_source_preview'])
  t.match(fake.requests[mark + 3].system, /Tools available now: get_source_preview\./)
  t.notMatch(fake.requests[mark + 3].system, /load_scoped/, 'the withdrawn tool is not named')
  const prompt = (await app.inject({ method: 'GET', url: `/api/sessions/${id}/prompt` })).json()
  t.match(prompt.system, /Tools available now: get_source_preview, load_scoped\./, 'a new turn offers it again')
})

t.test('a large tool result is stored whole and sent compacted, its metadata kept', async (t) => {
  fake.script(
    { body: toolCalls(['list_sources', {}]) },
    { body: toolCalls(['get_source_preview', { alias: 'wide', limit: 50 }]) },
    { text: 'Wide has long notes.' },
  )
  const id = (await chat({ message: 'show me wide' })).session_id
  const rows = await app.db
    .selectFrom('session_messages')
    .select(['seq', 'content'])
    .where('session_id', '=', id)
    .orderBy('seq')
    .execute()
  const storedResult = (rows[4].content as { type: string; content: string }[])[0]
  t.equal(storedResult.type, 'tool_result')
  const whole = JSON.parse(storedResult.content) as { rows: unknown[]; columns: { name: string }[] }
  t.ok(storedResult.content.length > COMPACT_ABOVE, `${storedResult.content.length} characters stored`)
  t.equal(whole.rows.length, 50, 'stored whole')
  const sent = (fake.requests.at(-1)!.messages[4].content as { content: string }[])[0].content
  t.ok(sent.length < storedResult.content.length / 3, `${sent.length} characters sent`)
  t.match(sent, new RegExp(`\\(shortened: the full result has ${storedResult.content.length} characters\\)$`))
  const [json] = sent.split('\n(shortened')
  const compacted = JSON.parse(json) as { rows: unknown[]; columns: { name: string; type: string }[]; side: string }
  t.equal(compacted.rows.length, 6)
  t.equal(compacted.rows[5], '… 45 more (50 in all)')
  t.same(compacted.columns, whole.columns, 'the column metadata is kept')
  t.equal(compacted.side, 'left')
  // the next turn replays it compacted too, while the stored history stays whole
  fake.script({ text: 'ok' })
  await chat({ session_id: id, message: 'thanks' })
  t.equal((fake.requests.at(-1)!.messages[4].content as { content: string }[])[0].content, sent)
})

t.test('a model reply with no text and no tool call gets a readable placeholder', async (t) => {
  fake.script({ body: messageWithText('') })
  const first = await chat({ message: 'hello?' })
  t.equal(first.message, EMPTY_REPLY)
  fake.script({ body: { ...messageWithText(''), content: [] } })
  const second = await chat({ session_id: first.session_id, message: 'anyone?' })
  t.equal(second.message, EMPTY_REPLY)
  fake.script({ text: 'Here now.' })
  await chat({ session_id: first.session_id, message: 'hi' })
  // the history holds the placeholder, never an empty assistant message
  t.same(
    fake.requests.at(-1)!.messages.map((m) => [m.role, (m.content as { text?: string }[])[0].text]),
    [
      ['user', 'hello?'],
      ['assistant', EMPTY_REPLY],
      ['user', 'anyone?'],
      ['assistant', EMPTY_REPLY],
      ['user', 'hi'],
    ],
  )
  t.match(
    (await events(first.session_id)).filter((e) => e.type === 'empty_reply'),
    [{ reason: 'empty_model_reply', detail: { stop_reason: 'end_turn' } }, { reason: 'empty_model_reply' }],
  )
})

type Frame = { id: number; event: string; data: { seq: number; type: string; turn: number } }

/** The frames of a Server-Sent Events response, and a reader that reads until one satisfies `until`. */
function sse(res: Response) {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  const frames: Frame[] = []
  const readUntil = async (until: (f: Frame) => boolean) => {
    for (;;) {
      const done = frames.find(until)
      if (done) return done
      const { value } = await reader.read()
      buffer += value ?? ''
      let end
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const frame = Object.fromEntries(
          buffer
            .slice(0, end)
            .split('\n')
            .map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)]),
        )
        buffer = buffer.slice(end + 2)
        frames.push({ id: Number(frame.id), event: frame.event, data: JSON.parse(frame.data) })
      }
    }
  }
  return { frames, readUntil }
}

t.test("the events endpoint streams a session's events as Server-Sent Events", async (t) => {
  fake.script({ text: 'Hello.' })
  const id = (await chat({ message: 'hi' })).session_id
  const address = await app.listen({ port: 0, host: '127.0.0.1' })
  const abort = new AbortController()
  t.teardown(() => abort.abort())
  const res = await fetch(`${address}/api/sessions/${id}/events`, {
    headers: { accept: 'text/event-stream' },
    signal: abort.signal,
  })
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^text\/event-stream/)
  const { frames, readUntil } = sse(res)
  // what happened before the stream opened comes first
  await readUntil((f) => f.data.type === 'turn_finished')
  t.same(
    frames.map((f) => f.data.type),
    ['turn_started', 'model_call', 'turn_finished'],
  )
  t.same(
    frames.map((f) => f.id),
    [0, 1, 2],
  )
  t.ok(frames.every((f) => f.event === 'session_event' && f.id === f.data.seq))
  // a new turn's events arrive live
  fake.script({ body: toolCalls(['list_sources', {}]) }, { text: 'Two sources.' })
  await chat({ session_id: id, message: 'what is there' })
  await readUntil((f) => f.data.type === 'turn_finished' && f.data.turn === 2)
  t.same(
    frames.slice(3).map((f) => f.data.type),
    ['turn_started', 'model_call', 'tool_call', 'tool_result', 'transition', 'model_call', 'turn_finished'],
  )
  t.same(
    frames.map((f) => f.id),
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    'each event once, in order',
  )
  abort.abort()
})

/** An instance of the service keeping its tables in the test's PostgreSQL schema, on the fake model. */
async function pgInstance(t: Test, pgdb: TestDatabase, env: Record<string, string> = {}) {
  const url = new URL(pgdb.url)
  url.searchParams.set('options', `-c search_path=${pgdb.schema}`)
  const app = await buildApp({
    config: loadConfig({
      ...testEnv,
      DATA_DIR: t.testdir(files),
      DATABASE_URL: url.toString(),
      ANTHROPIC_API_KEY: 'k',
      ANTHROPIC_BASE_URL: fake.baseURL,
      AI_MAX_RETRIES: '0',
      AI_MODE: 'deterministic',
      ...env,
    }),
    logger: false,
  })
  t.teardown(() => app.close())
  return app
}

t.test('sessions kept in PostgreSQL: turns, cards, events, snapshots, undo and busy', async (t) => {
  const pgdb = await testDatabase(t)
  t.comment(
    `service database: ${pgdb.kind === 'local' ? 'the local PostgreSQL' : 'PGlite over the wire (no local server)'}`,
  )
  const pgApp = await pgInstance(t, pgdb)
  t.equal((await pgApp.inject('/ready')).json().database, 'postgres')
  for (const alias of ['bank', 'inv'])
    await pgApp.inject({ method: 'POST', url: '/api/sources', payload: { alias, type: 'csv', path: `${alias}.csv` } })
  const turn = async (payload: Record<string, unknown>) => {
    const res = await pgApp.inject({ method: 'POST', url: '/api/chat', payload })
    return { status: res.statusCode, body: res.json() }
  }
  fake.script(
    { body: toolCalls(['list_sources', {}]) },
    { body: toolCalls(['get_source_preview', { alias: 'bank' }], ['get_source_preview', { alias: 'inv' }]) },
    {
      body: toolCalls(
        between('bank', '2024-01-01', '2024-01-31') as [string, unknown],
        between('inv', '2024-01-01', '2024-01-31') as [string, unknown],
      ),
    },
    { body: toolCalls(['propose_match', {}]) },
    { text: 'Confirm these?' },
  )
  const first = await turn({ message: 'bank against inv, January' })
  t.match(first, { status: 200, body: { phase: 'demonstration' } })
  const id = first.body.session_id
  const proposal = (first.body.segments as Reply['segments']).find((s) => s.card?.type === 'match_proposals')!.card!
    .data as { id: string }[]
  fake.script({ text: 'One confirmed.' })
  t.match(await turn({ session_id: id, card_response: { type: 'confirm_match', proposal_id: proposal[0].id } }), {
    status: 200,
    body: { phase: 'demonstration', message: 'One confirmed.' },
  })
  // in PostgreSQL: the state row, the whole conversation, the events and a snapshot per turn
  const row = (
    await pgdb.query('SELECT phase, left_alias, confirmed_pairs, snapshot FROM sessions WHERE id = $1', [id])
  ).rows[0]
  t.match(row, { phase: 'demonstration', left_alias: 'bank', snapshot: 2 })
  t.equal(row.confirmed_pairs.length, 1)
  const count = async (table: string) =>
    (await pgdb.query(`SELECT count(*)::int AS n FROM ${table} WHERE session_id = $1`, [id])).rows[0].n
  t.equal(await count('session_messages'), 12, 'user, 4 × (tool_use, tool_result), text; card, text')
  t.equal(await count('session_snapshots'), 3)
  const reasons = (await pgdb.query('SELECT reason FROM session_events WHERE session_id = $1 ORDER BY seq', [id])).rows
  t.ok(reasons.length > 15 && reasons.every((r) => r.reason), `${reasons.length} events, each with a reason`)
  // the next turn replays the stored conversation from PostgreSQL
  fake.script({ text: 'Next?' })
  await turn({ session_id: id, message: 'and now?' })
  t.equal(fake.requests.at(-1)!.messages.length, 13)
  // undo through PostgreSQL
  const undone = await pgApp.inject({ method: 'POST', url: `/api/sessions/${id}/undo` })
  t.match(undone.json(), { snapshot: 2, confirmed_pairs: [{}] })
  await pgApp.inject({ method: 'POST', url: `/api/sessions/${id}/undo` })
  t.match((await pgdb.query('SELECT snapshot, confirmed_pairs FROM sessions WHERE id = $1', [id])).rows[0], {
    snapshot: 1,
    confirmed_pairs: [],
  })
  // one turn at a time, across the pool's connections
  fake.script({ delayMs: 300, text: 'slow' })
  const asked = fake.requests.length
  const slow = turn({ session_id: id, message: 'one' })
  while (fake.requests.length === asked) await new Promise((r) => setImmediate(r))
  t.match(await turn({ session_id: id, message: 'two' }), { status: 409, body: { error: 'session_busy' } })
  t.equal((await slow).status, 200)
  t.equal(
    (
      await pgdb.query(
        `SELECT count(*)::int AS n FROM session_events WHERE session_id = $1 AND reason = 'session_busy'`,
        [id],
      )
    ).rows[0].n,
    1,
  )
})

t.test('a stream on one instance sees the turns another instance runs, in order, each once', async (t) => {
  const pgdb = await testDatabase(t)
  const a = await pgInstance(t, pgdb, { CHAT_EVENTS_POLL_MS: '100' })
  const b = await pgInstance(t, pgdb, { CHAT_EVENTS_POLL_MS: '100' })
  const turnOnA = async (payload: Record<string, unknown>) =>
    (await a.inject({ method: 'POST', url: '/api/chat', payload })).json()
  fake.script({ text: 'Hello.' })
  const id = (await turnOnA({ message: 'hi' })).session_id
  const address = await b.listen({ port: 0, host: '127.0.0.1' })
  const abort = new AbortController()
  t.teardown(() => abort.abort())
  const stream = (headers: Record<string, string> = {}) =>
    fetch(`${address}/api/sessions/${id}/events`, {
      headers: { accept: 'text/event-stream', ...headers },
      signal: abort.signal,
    })
  const { frames, readUntil } = sse(await stream())
  await readUntil((f) => f.data.type === 'turn_finished')
  // two more turns on A, while B streams: B has no turn of its own to wake it
  for (const [n, message] of [
    [2, 'again'],
    [3, 'and again'],
  ] as const) {
    fake.script({ text: `Turn ${n}.` })
    t.match(await turnOnA({ session_id: id, message }), { message: `Turn ${n}.` })
    await readUntil((f) => f.data.type === 'turn_finished' && f.data.turn === n)
  }
  const stored = (await a.inject({ method: 'GET', url: `/api/sessions/${id}/events` })).json().events as {
    seq: number
  }[]
  t.same(
    frames.map((f) => f.id),
    stored.map((e) => e.seq),
    `all ${stored.length} events of A's turns, each once, in order`,
  )
  // a client reconnecting with Last-Event-ID gets what came after it, nothing again
  const resumed = sse(await stream({ 'last-event-id': String(stored[4].seq) }))
  await resumed.readUntil((f) => f.id === stored.at(-1)!.seq)
  t.same(
    resumed.frames.map((f) => f.id),
    stored.slice(5).map((e) => e.seq),
  )
  abort.abort()
})
