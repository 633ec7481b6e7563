// `concord mcp` as a real child process, driven by the MCP SDK's own client over stdio: the seven
// tools listed with input and output schemas, every tool called (each answer feeding the next, as
// the wizard chains them), and the client's own check of each answer against its declared output
// schema; errors come back as isError results with the gateway's codes.

import { resolve } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import t from 'tap'

const root = resolve(import.meta.dirname, '..')

const ledger = [
  { name: 'ledger_tx_id', type: 'string' },
  { name: 'order_id', type: 'string' },
  { name: 'amount', type: 'decimal', scale: 2 },
  { name: 'occurred_at', type: 'timestamp' },
]
const settlement = [
  { name: 'acquirer_tx_id', type: 'string' },
  { name: 'order_id', type: 'string' },
  { name: 'gross_amount', type: 'decimal', scale: 2 },
  { name: 'settlement_date', type: 'date' },
]
const ledgerRows = [
  { ledger_tx_id: 'L1', order_id: 'ORD-1', amount: '100.00', occurred_at: '2026-01-05T10:00:00.000Z' },
  { ledger_tx_id: 'L2', order_id: 'ORD-2', amount: '55.10', occurred_at: '2026-01-06T10:00:00.000Z' },
  { ledger_tx_id: 'L3', order_id: 'ORD-3', amount: '80.00', occurred_at: '2026-01-07T10:00:00.000Z' },
  { ledger_tx_id: 'L4', order_id: 'ORD-4', amount: '20.00', occurred_at: '2026-01-08T10:00:00.000Z' },
]
const settlementRows = [
  { acquirer_tx_id: 'S1', order_id: 'ORD-1', gross_amount: '100.00', settlement_date: '2026-01-06' },
  { acquirer_tx_id: 'S2', order_id: 'ORD-2', gross_amount: '55.10', settlement_date: '2026-01-08' },
  { acquirer_tx_id: 'S3', order_id: 'ORD-3', gross_amount: '80.00', settlement_date: '2026-01-09' },
  { acquirer_tx_id: 'S4', order_id: 'ORD-9', gross_amount: '20.00', settlement_date: '2026-01-09' },
]

type Structured = Record<string, unknown>

t.test('concord mcp over stdio: list and call every tool; errors as isError results', async (t) => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [resolve(root, 'bin/concord.js'), 'mcp'],
    cwd: root,
    // no key reaches the child, and AI_MODE says so anyway: the deterministic engine answers
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', AI_MODE: 'deterministic' },
    stderr: 'pipe',
  })
  let stderr = ''
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const client = new Client({ name: 'concord-test', version: '1.0.0' })
  await client.connect(transport)
  const pid = transport.pid
  t.ok(pid, 'a child process')
  // the SDK keeps its child private; its exit shows whether end of stdin alone stopped the server
  // (the transport sends SIGTERM only if the child is still there two seconds after)
  const child = (transport as unknown as { _process: import('node:child_process').ChildProcess })._process
  const exited = new Promise<[number | null, string | null]>((done) =>
    child.once('exit', (code: number | null, signal: string | null) => done([code, signal])),
  )

  const { tools } = await client.listTools()
  t.same(
    tools.map((x) => x.name),
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
  for (const tool of tools) {
    t.equal(tool.inputSchema.type, 'object', `${tool.name}: input schema`)
    t.ok(Object.keys(tool.inputSchema.properties ?? {}).length > 0, `${tool.name}: input properties`)
    t.equal(tool.outputSchema?.type, 'object', `${tool.name}: output schema`)
    t.ok(Object.keys(tool.outputSchema?.properties ?? {}).length > 0, `${tool.name}: output properties`)
    t.ok(tool.description && tool.description.length > 20, `${tool.name}: described`)
  }

  /** One call; the client has already checked structuredContent against the declared output schema. */
  const call = async (name: string, args: Record<string, unknown>) => {
    const res = await client.callTool({ name, arguments: args })
    if (res.isError) t.fail(`${name}: ${JSON.stringify(res.content)}`)
    t.same(res._meta, { engine: 'deterministic' }, `${name}: the engine that answered`)
    const structured = res.structuredContent as Structured
    const [text] = res.content as { type: string; text: string }[]
    t.same(JSON.parse(text.text), structured, `${name}: the text content is the same answer`)
    return structured
  }

  const detected = await call('detect_field_mappings', {
    schema_a: ledger,
    schema_b: settlement,
    sample_a: ledgerRows,
    sample_b: settlementRows,
  })
  const mappings = detected.mappings as { field_a: string; field_b: string }[]
  t.same(
    mappings.map((m) => `${m.field_a}=${m.field_b}`),
    ['amount=gross_amount', 'order_id=order_id', 'occurred_at=settlement_date'],
  )

  const scoped = await call('parse_nl_filter', {
    text: 'only January 2026 sales',
    schema_a: ledger,
    schema_b: settlement,
    current_mappings: mappings,
    today: '2026-03-15',
  })
  t.same(scoped.filters, [
    { source: 'a', column: 'occurred_at', op: 'gte', value: '2026-01-01' },
    { source: 'a', column: 'occurred_at', op: 'lt', value: '2026-02-01' },
    { source: 'b', column: 'settlement_date', op: 'between', value: ['2026-01-01', '2026-01-31'] },
    { source: 'a', column: 'amount', op: 'gt', value: 0 },
    { source: 'b', column: 'gross_amount', op: 'gt', value: 0 },
  ])

  const proposed = await call('propose_match', {
    rows_a: ledgerRows,
    rows_b: settlementRows,
    schemas: { a: ledger, b: settlement },
    mappings,
  })
  const proposals = proposed.proposals as { left: number; right: number; confidence: number }[]
  const sure = proposals.filter((p) => p.confidence >= 0.9)
  t.same(
    sure.map((p) => [p.left, p.right]),
    [
      [0, 0],
      [1, 1],
      [2, 2],
    ],
  )

  const inferred = await call('infer_rules', {
    schema_a: ledger,
    schema_b: settlement,
    sample_a: ledgerRows,
    sample_b: settlementRows,
    mappings,
    confirmed_pairs: sure.map(({ left, right }) => ({ left, right })),
  })
  t.same(inferred.primary_keys, { left: ['ledger_tx_id'], right: ['acquirer_tx_id'] })
  const rules = inferred.rules as { name: string; sql: string }[]
  t.match(rules[0], {
    name: 'order_id_amount_date',
    sql: /^l\.order_id = r\.order_id AND l\.amount = r\.gross_amount/,
  })

  const built = await call('build_recipe', {
    rules,
    sources: { left: 'ledger', right: 'settlement' },
    primary_keys: inferred.primary_keys,
    pattern: inferred.pattern,
    scope: scoped.filters,
  })
  const recipe = built.recipe as { passes: { when: string }[]; left: { scope: unknown[] } }
  t.equal(recipe.passes[0].when, rules[0].sql)
  t.equal(recipe.left.scope.length, 3, 'the scope in words became the left scope')

  const validated = await call('validate_recipe', { recipe, schemas: { left: ledger, right: settlement } })
  t.same(validated, { valid: true, issues: [], suggestions: [], warnings: [] })

  const written = await call('nl_to_sql', {
    text: 'same order id, amount within 5 cents, up to 4 days after',
    schema_a: ledger,
    schema_b: settlement,
    mappings,
  })
  t.equal(
    written.sql,
    "l.order_id = r.order_id AND ABS(l.amount - r.gross_amount) <= 0.05 AND r.settlement_date BETWEEN CAST(l.occurred_at AS date) AND CAST(l.occurred_at AS date) + INTERVAL '4 days'",
  )

  // errors: a result flagged isError whose text is the gateway's error body
  const failing = async (name: string, args: Record<string, unknown>) => {
    const res = await client.callTool({ name, arguments: args })
    t.equal(res.isError, true, `${name}: isError`)
    t.equal(res.structuredContent, undefined)
    return JSON.parse((res.content as { text: string }[])[0].text)
  }
  t.match(await failing('build_recipes', {}), { error: 'unknown_tool', suggestion: /build_recipe/ })
  t.match(await failing('nl_to_sql', { schema_a: ledger, schema_b: settlement }), {
    error: 'invalid_input',
    message: /nl_to_sql: .*text/,
  })
  t.match(await failing('nl_to_sql', { text: 'frobnicate the widgets', schema_a: ledger, schema_b: settlement }), {
    error: 'cannot_parse',
    message: /cannot read "frobnicate the widgets"/,
    suggestion: /phrases it reads/,
  })

  // the server is still answering after the errors
  t.equal((await client.listTools()).tools.length, 7)
  // End stdin as close() does, but wait for the exit without the SDK's two-second SIGTERM: on a
  // busy machine the child may need longer, and a kill would hide whether it stops by itself.
  child.stdin?.end()
  t.same(await exited, [0, null], 'the child exits by itself once its stdin ends')
  await client.close()
  t.equal(stderr, '', 'nothing on stderr')
})
