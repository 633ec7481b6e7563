// The chat agent end to end on ../shared/datasets/kalla/: one conversation from the greeting to a
// completed full run, driven through POST /api/chat (messages and card responses) with the real
// @anthropic-ai/sdk against a scripted fake Messages API. Asserts the replies, the session, and
// what the fake received: the tools offered in each phase and what each system prompt says.
// Skips visibly when the datasets are absent.

import { join } from 'node:path'
import t from 'tap'
import { AGENT_TOOLS } from '../src/orchestrator/tools.js'
import { datasetsDir, datasetsSkip, testApp } from './helpers/app.js'
import { fakeAnthropic, toolCalls } from './helpers/fake-anthropic.js'

type Block = { type: string; id?: string; name?: string; tool_use_id?: string; content?: string; is_error?: boolean }
type Reply = {
  session_id: string
  phase: string
  status: string
  message: string
  segments: { type: string; text?: string; card?: { type: string; data: unknown } }[]
  recipe_draft: { name: string; left: { source: string }; right: { source: string }; passes: unknown[] } | null
}

const ALL_TOOLS = AGENT_TOOLS.map((x) => x.name)

t.test('kalla: greeting to a completed full run, three pairs confirmed on cards', { skip: datasetsSkip }, async (t) => {
  const fake = await fakeAnthropic(t)
  const { app } = await testApp(t, {
    dataDir: join(datasetsDir, 'kalla'),
    env: { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: fake.baseURL, AI_MAX_RETRIES: '0', AI_MODE: 'deterministic' },
  })
  for (const alias of ['invoices', 'payments']) {
    const res = await app.inject({
      method: 'POST',
      url: '/api/sources',
      payload: { alias, type: 'csv', path: `${alias}.csv` },
    })
    t.equal(res.statusCode, 201, res.body)
  }
  const chat = async (payload: Record<string, unknown>): Promise<Reply> => {
    const res = await app.inject({ method: 'POST', url: '/api/chat', payload })
    if (res.statusCode !== 200) throw new Error(`${res.statusCode} ${res.body}`)
    return res.json()
  }
  const resultsOf = (n: number) => fake.requests[n].messages.at(-1)!.content as Block[]
  /** Requests sent since `from`: each one's phase (from its prompt) and tools. */
  const seen = (from: number) =>
    fake.requests
      .slice(from)
      .map((r) => [/Current phase: (\w+)/.exec(r.system ?? '')?.[1], r.tools?.map((x) => x.name)])

  // 1. greeting: the sources are listed, and the same turn goes on in intent
  fake.script({ body: toolCalls(['list_sources', {}]) }, { text: 'Hello! You have invoices and payments registered.' })
  const hello = await chat({ message: 'Hi, I need to reconcile something' })
  const id = hello.session_id
  t.match(hello, { phase: 'intent', status: 'active', message: 'Hello! You have invoices and payments registered.' })
  t.same(seen(0), [
    ['greeting', ['list_sources']],
    ['intent', ['list_sources', 'get_source_preview']],
  ])
  t.match(fake.requests[0].system, /The registered sources are not known yet/)
  t.match(fake.requests[1].system, /Registered sources: invoices \(csv, 9 columns\), payments \(csv, 10 columns\)/)
  t.match(resultsOf(1)[0], { is_error: false, content: /"alias":"invoices"/ })

  // 2. intent: invoices previewed first (left), payments second (right) → scoping mid-turn
  fake.script(
    { body: toolCalls(['get_source_preview', { alias: 'invoices' }]) },
    { body: toolCalls(['get_source_preview', { alias: 'payments', limit: 5 }]) },
    { text: 'Invoices on the left, payments on the right. Which period?' },
  )
  const sides = await chat({ session_id: id, message: 'Invoices against payments please' })
  t.equal(sides.phase, 'scoping')
  t.same(
    sides.segments.filter((s) => s.card).map((s) => s.card!.type),
    ['source_preview', 'source_preview'],
  )
  t.same(seen(2), [
    ['intent', ['list_sources', 'get_source_preview']],
    ['intent', ['list_sources', 'get_source_preview']],
    ['scoping', ['get_source_preview', 'load_scoped']],
  ])
  t.match(fake.requests[4].system, /Left source invoices: invoice_id string, .*amount decimal/)
  t.match(fake.requests[4].system, /Right source payments: payment_id string, .*paid_amount decimal/)
  t.match(fake.requests[4].system, /Left sample: not loaded yet/)

  // 3. scoping: both sides loaded (first quarter) → demonstration; propose_match shows cards
  fake.script(
    {
      body: toolCalls(
        [
          'load_scoped',
          {
            alias: 'invoices',
            conditions: [{ column: 'invoice_date', op: 'between', value: ['2024-01-01', '2024-03-31'] }],
          },
        ],
        [
          'load_scoped',
          {
            alias: 'payments',
            conditions: [{ column: 'payment_date', op: 'between', value: ['2024-01-01', '2024-03-31'] }],
          },
        ],
      ),
    },
    { body: toolCalls(['propose_match', { limit: 5 }]) },
    { text: 'Here are some candidate pairs: please confirm or reject them.' },
  )
  const scoped = await chat({ session_id: id, message: 'The first quarter of 2024 on both sides' })
  t.equal(scoped.phase, 'demonstration')
  t.same(seen(5), [
    ['scoping', ['get_source_preview', 'load_scoped']],
    ['demonstration', ['propose_match', 'load_scoped']],
    ['demonstration', ['propose_match', 'load_scoped']],
  ])
  t.match(fake.requests[6].system, /Left sample of invoices, scope .*\(showing 15 of 15\):/)
  t.match(fake.requests[6].system, /Right sample of payments, scope .*\(showing 15 of 15\):/)
  t.match(fake.requests[6].system, /Confirmed pairs \(0 of the 3 needed\)/)
  t.match(fake.requests[6].system, /Artifact inventory:\n- a1 sample: invoices: 15 rows in scope/)
  const proposed = scoped.segments.find((s) => s.card?.type === 'match_proposals')!.card!.data as {
    id: string
    left: Record<string, string>
    right: Record<string, string>
  }[]
  t.ok(proposed.length >= 4, `${proposed.length} pairs proposed`)
  t.match(fake.requests[7].system, new RegExp(`Proposed pairs awaiting the user \\(cards\\): ${proposed[0].id}: `))
  // the deterministic proposals on kalla are true pairs: the payment names the invoice
  for (const p of proposed.slice(0, 4)) t.equal(p.right.reference_number, p.left.invoice_id, `${p.id} is a true pair`)

  // 4. demonstration: a reject, then three confirmations; the third starts inference
  const before = fake.requests.length
  fake.script({ text: 'Understood, that one is not a match.' })
  const rejected = await chat({ session_id: id, card_response: { type: 'reject_match', proposal_id: proposed[3].id } })
  t.match(rejected, { phase: 'demonstration', message: 'Understood, that one is not a match.' })
  t.match(
    (fake.requests[before].messages.at(-1)!.content as { text: string }[])[0].text,
    new RegExp(`^\\[card\\] The user rejected the pair .*${proposed[3].left.invoice_id}`),
  )
  for (const [n, p] of proposed.slice(0, 2).entries()) {
    fake.script({ text: `Thanks, ${n + 1} confirmed.` })
    const confirmed = await chat({ session_id: id, card_response: { type: 'confirm_match', proposal_id: p.id } })
    t.match(confirmed, { phase: 'demonstration', message: `Thanks, ${n + 1} confirmed.` })
  }
  t.match(fake.requests.at(-1)!.system, /Confirmed pairs \(2 of the 3 needed\)/)
  t.notMatch(fake.requests.at(-1)!.system, new RegExp(proposed[3].id), 'the rejected proposal is gone')
  const third = fake.requests.length
  fake.script(
    { body: toolCalls(['infer_rules', {}]) },
    { body: toolCalls(['build_recipe', { name: 'kalla-invoices-payments' }]) },
    { body: toolCalls(['validate_recipe', {}], ['run_sample', {}]) },
    { text: 'The recipe matches the samples. Please approve it on the validation card.' },
  )
  const inferred = await chat({
    session_id: id,
    card_response: { type: 'confirm_match', proposal_id: proposed[2].id },
    message: 'That is the third one.',
  })
  t.equal(inferred.phase, 'validation')
  t.same(seen(third), [
    ['inference', ['infer_rules', 'build_recipe', 'load_scoped']],
    ['inference', ['infer_rules', 'build_recipe', 'load_scoped']],
    ['validation', ['validate_recipe', 'run_sample', 'build_recipe', 'load_scoped']],
    ['validation', ['validate_recipe', 'run_sample', 'build_recipe', 'load_scoped']],
  ])
  t.match(fake.requests[third].messages.at(-1), {
    role: 'user',
    content: [
      { type: 'text', text: /^\[card\] The user confirmed the pair .*\(3 confirmed\)\.$/ },
      { text: 'That is the third one.' },
    ],
  })
  t.match(fake.requests[third].system, /Confirmed pairs \(3 of the 3 needed\):\n1\. .*INV-2024-0/)
  t.match(fake.requests[third].system, /There is no recipe draft yet\./)
  t.match(fake.requests[third + 2].system, /Recipe draft: \{"name":"kalla-invoices-payments"/)
  t.match(fake.requests[third + 2].system, /- a3 recipe: recipe draft "kalla-invoices-payments"/)
  t.match(inferred.recipe_draft, {
    name: 'kalla-invoices-payments',
    left: { source: 'invoices' },
    right: { source: 'payments' },
  })
  t.same(
    inferred.segments.filter((s) => s.card).map((s) => s.card!.type),
    ['rules', 'recipe', 'validation', 'run_summary'],
  )
  const [validated, sampled] = resultsOf(third + 3)
  t.match(validated, { is_error: false, content: /"valid":true/ })
  const sampleRun = JSON.parse(sampled.content!) as { mode: string; matches: number; left: { unmatched: number } }
  t.equal(sampleRun.mode, 'sample')
  t.ok(sampleRun.matches >= 8, `the sample run matches ${sampleRun.matches} pairs`)
  t.match(fake.requests[third + 3].system, /Validation: valid; approved by the user: not yet\./)

  // 5. validation approved on its card → execution; the full run completes the session
  const approval = fake.requests.length
  fake.script({ body: toolCalls(['run_full', {}]) }, { text: 'Done: the full run has completed.' })
  const done = await chat({ session_id: id, card_response: { type: 'approve_validation' } })
  t.match(done, { phase: 'execution', status: 'completed', message: 'Done: the full run has completed.' })
  t.same(seen(approval), [
    ['execution', ['run_full', 'run_sample', 'show_exceptions']],
    ['execution', ['run_full', 'run_sample', 'show_exceptions']],
  ])
  t.match(fake.requests[approval].messages.at(-1), {
    content: [{ type: 'text', text: '[card] The user approved the recipe draft.' }],
  })
  const full = JSON.parse(resultsOf(approval + 1)[0].content!) as {
    run_id: string
    mode: string
    matches: number
    left: { rows: number; matched: number; unmatched: number }
    right: { rows: number; matched: number; unmatched: number }
  }
  t.match(full, { mode: 'full', left: { rows: 15 }, right: { rows: 15 } })
  // every record is in exactly one of matched / unmatched on each side
  t.equal(full.left.matched + full.left.unmatched, 15)
  t.equal(full.right.matched + full.right.unmatched, 15)
  t.match(fake.requests[approval + 1].system, new RegExp(`Last run: \\{"run_id":"${full.run_id}","mode":"full"`))
  const run = (await app.inject({ method: 'GET', url: `/api/runs/${full.run_id}` })).json()
  t.match(run, { status: 'completed', summary: { matches: full.matches } })

  // across the whole conversation: the prompt names only tools offered with it, every tool_use
  // has its tool_result, and the session, events and snapshots tell the same story
  for (const [n, r] of fake.requests.entries()) {
    const offered = r.tools?.map((x) => x.name) ?? []
    const named = ALL_TOOLS.filter((name) => new RegExp(`\\b${name}\\b`).test(r.system ?? ''))
    t.same(
      named.filter((x) => !offered.includes(x)),
      [],
      `request ${n} names only offered tools`,
    )
  }
  const last = fake.requests.at(-1)!.messages
  const uses = last.flatMap((m) => (m.content as Block[]).filter((b) => b.type === 'tool_use').map((b) => b.id))
  const results = last.flatMap((m) =>
    (m.content as Block[]).filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id),
  )
  t.equal(uses.length, 11, 'eleven tool calls in the conversation')
  t.same(results.slice(0, uses.length), uses.slice(0, results.length))
  const session = (await app.inject({ method: 'GET', url: `/api/sessions/${id}` })).json()
  t.match(session, {
    phase: 'execution',
    status: 'completed',
    left_alias: 'invoices',
    right_alias: 'payments',
    validation_approved: true,
    last_run: { id: full.run_id, mode: 'full' },
    snapshot: 8,
  })
  t.equal(session.confirmed_pairs.length, 3)
  t.same(
    session.artifacts.map((a: { kind: string }) => a.kind),
    ['sample', 'sample', 'recipe', 'run', 'run'],
  )
  const events = (await app.inject({ method: 'GET', url: `/api/sessions/${id}/events` })).json().events as {
    type: string
    reason?: string
    phase: string
    detail?: { from: string; to: string }
  }[]
  t.same(
    events.filter((e) => e.type === 'transition').map((e) => `${e.detail!.from}→${e.detail!.to}`),
    [
      'greeting→intent',
      'intent→scoping',
      'scoping→demonstration',
      'demonstration→inference',
      'inference→validation',
      'validation→execution',
    ],
  )
  t.same(
    events.filter((e) => e.type === 'card_response').map((e) => e.reason),
    ['reject_match', 'confirm_match', 'confirm_match', 'confirm_match', 'approve_validation'],
  )
  t.equal(fake.requests.length, 17)
})
