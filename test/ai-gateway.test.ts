// POST /api/ai with the Claude-backed implementation: the real @anthropic-ai/sdk against a scripted
// fake Messages API on loopback. Asserts what the model was sent (system prompt, messages, the
// retry carrying the validation error), not only what came back; and the gateway's errors.

import t, { type Test } from 'tap'
import { Type } from 'typebox'
import { AiService } from '../src/ai/service.js'
import type { AiTool } from '../src/ai/types.js'
import { ConcordError } from '../src/errors.js'
import { testApp } from './helpers/app.js'
import { type FakeAnthropic, fakeAnthropic } from './helpers/fake-anthropic.js'

const schemas = {
  left: [
    { name: 'txn_id', type: 'string' },
    { name: 'ref', type: 'string' },
    { name: 'amount', type: 'decimal', scale: 2 },
  ],
  right: [
    { name: 'inv_id', type: 'string' },
    { name: 'reference', type: 'string' },
    { name: 'total', type: 'decimal', scale: 2 },
  ],
}

const buildInput = {
  rules: [
    {
      name: 'by ref',
      sql: 'l.ref = r.reference AND l.amount = r.total',
      description: 'same reference and amount',
      confidence: 0.9,
    },
  ],
  sources: { left: 'bank', right: 'invoices' },
  primary_keys: { left: ['txn_id'], right: ['inv_id'] },
  pattern: '1:1',
}

const goodRecipe = {
  name: 'bank-vs-invoices',
  left: { source: 'bank', key: ['txn_id'] },
  right: { source: 'invoices', key: ['inv_id'] },
  passes: [{ name: 'by_ref', pattern: '1:1', when: 'l.ref = r.reference AND l.amount = r.total' }],
}

async function setup(t: Test, mode: string, extra: Record<string, string> = {}) {
  const fake: FakeAnthropic = await fakeAnthropic(t)
  const { app } = await testApp(t, {
    env: {
      AI_MODE: mode,
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: fake.baseURL,
      ANTHROPIC_MODEL: 'claude-test',
      AI_MAX_RETRIES: '0',
      ...extra,
    },
  })
  const call = (tool: string, input: unknown) =>
    app.inject({ method: 'POST', url: '/api/ai', payload: { tool, input } })
  return { fake, app, call }
}

t.test('a valid model answer is the result, and the request carries the prompt and the input', async (t) => {
  const { fake, call } = await setup(t, 'llm')
  fake.script({ text: JSON.stringify({ recipe: goodRecipe, explanation: 'one pass by reference' }) })
  const res = await call('build_recipe', buildInput)
  t.equal(res.statusCode, 200, res.body)
  t.same(res.json(), { result: { recipe: goodRecipe, explanation: 'one pass by reference' }, engine: 'llm' })
  t.equal(fake.requests.length, 1)
  const [request] = fake.requests
  t.equal(request.model, 'claude-test')
  t.match(request.system, /You assemble a reconciliation recipe/)
  t.match(request.system, /Answer with one JSON object and nothing else/)
  t.match(request.system, /"explanation"/, 'the output schema is in the system prompt')
  t.same(request.messages, [{ role: 'user', content: JSON.stringify(buildInput) }])
})

t.test('an invalid answer is retried once with the validation error, then accepted', async (t) => {
  const { fake, call } = await setup(t, 'llm')
  fake.script(
    { text: 'Sure! Here is the predicate: l.ref = r.reference' },
    {
      text: JSON.stringify({
        sql: 'UPPER(TRIM(l.ref)) = UPPER(TRIM(r.reference))',
        explanation: 'references, ignoring case',
      }),
    },
  )
  const res = await call('nl_to_sql', {
    text: 'same reference ignoring case',
    schema_a: schemas.left,
    schema_b: schemas.right,
  })
  t.equal(res.statusCode, 200, res.body)
  t.match(res.json(), { engine: 'llm', result: { sql: 'UPPER(TRIM(l.ref)) = UPPER(TRIM(r.reference))' } })
  t.equal(fake.requests.length, 2)
  const retry = fake.requests[1].messages
  t.equal(retry.length, 3)
  t.same(retry[1], { role: 'assistant', content: 'Sure! Here is the predicate: l.ref = r.reference' })
  t.match(retry[2], { role: 'user', content: /That answer is not valid:\n- the answer is not JSON/ })

  // an answer that is JSON but not a predicate the recipe parser accepts is refused the same way
  fake.script(
    { text: JSON.stringify({ sql: 'l.ref === r.reference', explanation: 'x' }) },
    { text: JSON.stringify({ sql: 'l.ref = r.reference', explanation: 'x' }) },
  )
  const second = await call('nl_to_sql', { text: 'same reference', schema_a: schemas.left, schema_b: schemas.right })
  t.equal(second.statusCode, 200)
  t.match(fake.requests[3].messages[2], { content: /cannot parse the predicate/ })

  // and one that does not fit the output schema
  fake.script(
    { text: JSON.stringify({ sql: 'l.ref = r.reference' }) },
    { text: JSON.stringify({ sql: 'l.ref = r.reference', explanation: 'x' }) },
  )
  t.equal(
    (await call('nl_to_sql', { text: 'same reference', schema_a: schemas.left, schema_b: schemas.right })).statusCode,
    200,
  )
  t.match(fake.requests[5].messages[2], { content: /explanation/ })
})

t.test('two invalid answers are a 502 that says so', async (t) => {
  const { fake, call } = await setup(t, 'llm')
  fake.script({ text: '{"recipe": 1}' }, { text: 'still not it' })
  const res = await call('build_recipe', buildInput)
  t.equal(res.statusCode, 502)
  t.match(res.json(), { error: 'model_invalid_output', message: /not valid twice/ })
})

t.test('a 529 overloaded answer: 502 in llm mode; the deterministic answer in auto mode', async (t) => {
  const overloaded = {
    status: 529,
    body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
  }
  const llm = await setup(t, 'llm')
  llm.fake.script(overloaded)
  const refused = await llm.call('build_recipe', buildInput)
  t.equal(refused.statusCode, 502)
  t.match(refused.json(), { error: 'model_overloaded' })

  const auto = await setup(t, 'auto')
  auto.fake.script(overloaded)
  const fallback = await auto.call('build_recipe', buildInput)
  t.equal(fallback.statusCode, 200, fallback.body)
  t.match(fallback.json(), {
    engine: 'deterministic',
    fallback: { error: 'model_overloaded' },
    result: { recipe: { passes: [{ name: 'by_ref', when: 'l.ref = r.reference AND l.amount = r.total' }] } },
  })
  t.equal(auto.fake.requests.length, 1, 'the model was asked once')
  // both modes sent the same request: the tool's prompt and the input, once (no retry on a 529)
  for (const fake of [llm.fake, auto.fake]) {
    t.equal(fake.requests.length, 1)
    t.match(fake.requests[0].system, /You assemble a reconciliation recipe/)
    t.match(fake.requests[0].system, /Answer with one JSON object and nothing else/)
    t.same(fake.requests[0].messages, [{ role: 'user', content: JSON.stringify(buildInput) }])
  }
})

t.test('a model that does not answer in time is a 502 model_timeout', async (t) => {
  const { fake, call } = await setup(t, 'llm', { AI_TIMEOUT_MS: '300' })
  // had the client waited for this late answer it would be invalid JSON for the tool, and the
  // retry would hit the fake's "no scripted reply": model_timeout can only come from the timeout
  fake.script({ delayMs: 1500, text: '{}' })
  const res = await call('build_recipe', buildInput)
  t.equal(res.statusCode, 502)
  t.match(res.json(), { error: 'model_timeout', message: /did not answer in time/ })
  t.equal(fake.requests.length, 1, 'asked once: no retry after a timeout')
  t.equal(fake.requests[0].model, 'claude-test')
  t.match(fake.requests[0].system, /You assemble a reconciliation recipe/)
  t.same(fake.requests[0].messages, [{ role: 'user', content: JSON.stringify(buildInput) }])
})

t.test('AI_MODE=auto with a key: the model answers when it can', async (t) => {
  const { fake, call } = await setup(t, 'auto')
  fake.script({ text: JSON.stringify({ recipe: goodRecipe, explanation: 'from the model' }) })
  const res = await call('build_recipe', buildInput)
  t.equal(res.statusCode, 200, res.body)
  t.same(res.json(), { result: { recipe: goodRecipe, explanation: 'from the model' }, engine: 'llm' })
  t.equal(fake.requests.length, 1)
  t.same(fake.requests[0].messages, [{ role: 'user', content: JSON.stringify(buildInput) }])
})

t.test('AI_MODE=auto falls back to the deterministic answer on a timeout, and says so', async (t) => {
  const { fake, call } = await setup(t, 'auto', { AI_TIMEOUT_MS: '300' })
  fake.script({ delayMs: 1500, text: '{}' })
  const res = await call('build_recipe', buildInput)
  t.equal(res.statusCode, 200, res.body)
  const body = res.json()
  t.equal(body.engine, 'deterministic', 'the deterministic implementation ran')
  t.match(body.fallback, { error: 'model_timeout', message: /did not answer in time/ })
  t.match(body.result.explanation, /Matches bank \(left, keyed by txn_id\) with invoices/)
  t.equal(fake.requests.length, 1)
})

t.test('AI_MODE=auto falls back after two invalid answers, and says so', async (t) => {
  const { fake, call } = await setup(t, 'auto')
  fake.script({ text: 'not json' }, { text: JSON.stringify({ sql: 'l.ref == r.reference', explanation: 'x' }) })
  const res = await call('nl_to_sql', {
    text: 'same reference ignoring case',
    schema_a: schemas.left,
    schema_b: schemas.right,
  })
  t.equal(res.statusCode, 200, res.body)
  t.same(res.json().result, {
    sql: 'UPPER(TRIM(l.ref)) = UPPER(TRIM(r.reference))',
    explanation: 'same reference ignoring case: ref = reference, ignoring case and spaces',
  })
  t.equal(res.json().engine, 'deterministic')
  t.match(res.json().fallback, { error: 'model_invalid_output', message: /not valid twice/ })
  t.equal(fake.requests.length, 2, 'the model had its one retry')
  t.match(fake.requests[1].messages[2], { role: 'user', content: /That answer is not valid/ })
})

t.test('AI_MODE=llm without a key is a clear error, and no model is called', async (t) => {
  const { app } = await testApp(t, { env: { AI_MODE: 'llm' } })
  const res = await app.inject({
    method: 'POST',
    url: '/api/ai',
    payload: { tool: 'build_recipe', input: buildInput },
  })
  t.equal(res.statusCode, 502)
  t.same(res.json(), {
    error: 'model_not_configured',
    message: 'AI_MODE=llm needs ANTHROPIC_API_KEY',
    suggestion: 'set the key, or AI_MODE=auto',
  })
})

t.test('a deterministic answer that fails its own check is a coded 500, not a bare exception', async (t) => {
  const broken = {
    name: 'broken_tool',
    description: 'answers outside its own output schema',
    input: Type.Object({}),
    output: Type.Object({ n: Type.Integer() }),
    prompt: '',
    deterministic: () => ({ n: 'many' }),
  } as unknown as AiTool
  const ai = new AiService({ mode: 'deterministic' }, undefined, undefined, [broken])
  const err = await ai.run('broken_tool', {}).then(
    () => undefined,
    (e: unknown) => e,
  )
  t.ok(err instanceof ConcordError, 'a ConcordError')
  t.match(err, {
    code: 'tool_failed',
    status: 500,
    message: /broken_tool produced an answer that fails its own check: \/n/,
  })
})

t.test('the gateway: deterministic without a key, unknown tools, invalid input, the tool list', async (t) => {
  const { app } = await testApp(t)
  const validate = await app.inject({
    method: 'POST',
    url: '/api/ai',
    payload: {
      tool: 'validate_recipe',
      input: {
        recipe: { ...goodRecipe, passes: [{ name: 'p', pattern: '1:1', when: 'l.ref = r.referense' }] },
        schemas,
      },
    },
  })
  t.equal(validate.statusCode, 200, validate.body)
  t.match(validate.json(), {
    engine: 'deterministic',
    result: { valid: false, issues: [{ code: 'unknown_column', suggestion: /r\.reference/ }] },
  })
  const unknown = await app.inject({ method: 'POST', url: '/api/ai', payload: { tool: 'build_recipes', input: {} } })
  t.equal(unknown.statusCode, 404)
  t.match(unknown.json(), { error: 'unknown_tool', suggestion: /build_recipe/ })
  const invalid = await app.inject({
    method: 'POST',
    url: '/api/ai',
    payload: { tool: 'build_recipe', input: { rules: [] } },
  })
  t.equal(invalid.statusCode, 400)
  t.match(invalid.json(), { error: 'invalid_input', message: /build_recipe: .*rules/ })
  const list = (await app.inject({ method: 'GET', url: '/api/ai/tools' })).json()
  t.same(
    list.tools.map((x: { name: string }) => x.name),
    [
      'detect_field_mappings',
      'parse_nl_filter',
      'propose_match',
      'infer_rules',
      'build_recipe',
      'validate_recipe',
      'nl_to_sql',
    ],
  )
  t.match(list.tools[4].input_schema, { type: 'object', required: ['rules', 'sources', 'primary_keys', 'pattern'] })
})
