// The wizard, end to end over REST on ../shared/datasets/acquirer-settlement: every step feeds the
// next one's input from the previous step's output, as a client stepping a person through it
// would. The final run's counts are computed independently, from the files' `scenario` columns.

import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { datasetsDir, datasetsSkip, testApp } from './helpers/app.js'
import { waitForRun } from './helpers/runs.js'

type Row = Record<string, string | number | boolean | null>
interface Filter {
  source: 'a' | 'b'
  column: string
  op: string
  value: unknown
}

/** POST /api/ai: every step must be answered by the deterministic engine, with no fallback. */
async function tool(t: Test, app: FastifyInstance, name: string, input: unknown) {
  const res = await app.inject({ method: 'POST', url: '/api/ai', payload: { tool: name, input } })
  t.equal(res.statusCode, 200, `${name}: ${res.statusCode === 200 ? 'answered' : res.body}`)
  const body = res.json()
  t.equal(body.engine, 'deterministic', `${name}: deterministic engine`)
  t.notOk(body.fallback, `${name}: no fallback`)
  return body.result
}

async function json(t: Test, app: FastifyInstance, method: 'GET' | 'POST', url: string, payload?: unknown) {
  const res = await app.inject({ method, url, payload: payload as never })
  t.ok(res.statusCode < 300, `${method} ${url}: ${res.statusCode < 300 ? res.statusCode : res.body}`)
  return res.json()
}

/** The raw files, read without the project's loaders, for the independent count. */
async function rawCsv(path: string): Promise<Record<string, string>[]> {
  const [header, ...lines] = (await readFile(join(datasetsDir, path), 'utf8')).trim().split(/\r?\n/)
  const names = header.split(',')
  return lines.map((line) => Object.fromEntries(line.split(',').map((v, k) => [names[k], v])))
}

/**
 * What the final run must report, from the scenario labels alone (the truth test/ai-rules.test.ts
 * writes down): in the January-sales scope, a sale's settlement is matched when its scenario is an
 * exact, lag, tolerance or fee-variance candidate and it is the order's only settlement in scope;
 * an order settled three times (the original and two duplicates, identical) is held as one
 * ambiguous group; amount mismatches, duplicates, acquirer-only rows and sales whose settlement is
 * outside the scope stay unmatched.
 */
async function expectedCounts() {
  const ledger = await rawCsv('acquirer-settlement/ledger-midaz.csv')
  const settlement: Record<string, string>[] = JSON.parse(
    await readFile(join(datasetsDir, 'acquirer-settlement/acquirer-settlement.json'), 'utf8'),
  )
  const left = ledger.filter((r) => r.occurred_at.startsWith('2026-01') && Number(r.amount) > 0)
  const right = settlement.filter((r) => r.settlement_date.startsWith('2026-01') && Number(r.gross_amount) > 0)
  const MATCHABLE = new Set([
    'exact_order_and_authorization_match',
    'settlement_lag_candidate',
    'amount_tolerance_candidate',
    'fee_variance_candidate',
  ])
  const settledInScope = new Map<string, Record<string, string>[]>()
  for (const r of right) settledInScope.set(r.order_id, [...(settledInScope.get(r.order_id) ?? []), r])
  let exactAmount = 0
  let tolerance = 0
  let ambiguous = 0
  let ambiguousRight = 0
  for (const sale of left) {
    if (sale.scenario !== 'ledger_sale_candidate') continue
    const settled = settledInScope.get(sale.order_id) ?? []
    const equal = settled.filter((r) => r.gross_amount === sale.amount)
    if (equal.length > 1) {
      ambiguous++
      ambiguousRight += equal.length
      continue
    }
    const partner = settled.find((r) => MATCHABLE.has(r.scenario))
    if (!partner) continue
    if (partner.gross_amount === sale.amount) exactAmount++
    else tolerance++
  }
  const matched = exactAmount + tolerance
  return {
    leftRows: left.length,
    rightRows: right.length,
    exactAmount,
    tolerance,
    ambiguous,
    unmatchedLeft: left.length - matched - ambiguous,
    unmatchedRight: right.length - matched - ambiguousRight,
  }
}

t.test('the wizard over REST: sources to a saved recipe and its full run', { skip: datasetsSkip }, async (t) => {
  const { app } = await testApp(t, { dataDir: datasetsDir })

  // 1. register both sources
  await json(t, app, 'POST', '/api/sources', {
    alias: 'ledger',
    type: 'csv',
    path: 'acquirer-settlement/ledger-midaz.csv',
  })
  await json(t, app, 'POST', '/api/sources', {
    alias: 'settlement',
    type: 'json',
    path: 'acquirer-settlement/acquirer-settlement.json',
  })

  // 2. preview both, and map their fields
  const ledgerPreview = await json(t, app, 'GET', '/api/sources/ledger/preview?limit=100')
  const settlementPreview = await json(t, app, 'GET', '/api/sources/settlement/preview?limit=100')
  const schema_a = ledgerPreview.columns
  const schema_b = settlementPreview.columns
  const detected = await tool(t, app, 'detect_field_mappings', {
    schema_a,
    schema_b,
    sample_a: ledgerPreview.rows,
    sample_b: settlementPreview.rows,
  })
  const mappings = detected.mappings as { field_a: string; field_b: string; confidence: number }[]
  t.same(
    mappings
      .slice(0, 6)
      .map((m) => `${m.field_a}=${m.field_b}`)
      .sort(),
    [
      'amount=gross_amount',
      'authorization_code=authorization_code',
      'currency=currency',
      'merchant_id=merchant_id',
      'occurred_at=settlement_date',
      'order_id=order_id',
    ],
    'the six true mappings first',
  )

  // 3. the scope in words
  const scope = await tool(t, app, 'parse_nl_filter', {
    text: 'only January 2026 sales',
    schema_a,
    schema_b,
    current_mappings: mappings,
    today: '2026-03-15',
  })
  const filters = scope.filters as Filter[]
  t.same(filters, [
    { source: 'a', column: 'occurred_at', op: 'gte', value: '2026-01-01' },
    { source: 'a', column: 'occurred_at', op: 'lt', value: '2026-02-01' },
    { source: 'b', column: 'settlement_date', op: 'between', value: ['2026-01-01', '2026-01-31'] },
    { source: 'a', column: 'amount', op: 'gt', value: 0 },
    { source: 'b', column: 'gross_amount', op: 'gt', value: 0 },
  ])
  t.same(scope.unparsed, [])
  const conditions = (side: 'a' | 'b') =>
    filters.filter((f) => f.source === side).map(({ column, op, value }) => ({ column, op, value }))

  // 4. load the scoped rows of both sides
  const ledgerScoped = await json(t, app, 'POST', '/api/sources/ledger/load-scoped', {
    conditions: conditions('a'),
    preview: 100,
  })
  const settlementScoped = await json(t, app, 'POST', '/api/sources/settlement/load-scoped', {
    conditions: conditions('b'),
    preview: 100,
  })
  const expected = await expectedCounts()
  t.equal(ledgerScoped.total_rows, expected.leftRows, 'the ledger scope keeps the January sales')
  t.equal(settlementScoped.total_rows, expected.rightRows, 'the settlement scope keeps January settlements')
  const sample_a = ledgerScoped.rows as Row[]
  const sample_b = settlementScoped.rows as Row[]

  // 5. three pairs confirmed from the proposals over the scoped previews: the three surest
  const proposed = await tool(t, app, 'propose_match', {
    rows_a: sample_a,
    rows_b: sample_b,
    schemas: { a: schema_a, b: schema_b },
    mappings,
  })
  const confirmed = (proposed.proposals as { left: number; right: number }[])
    .slice(0, 3)
    .map(({ left, right }) => ({ left, right }))
  t.equal(confirmed.length, 3)
  for (const p of confirmed) {
    // a person confirms only true pairs: the same order, a sale and an exact settlement
    t.equal(sample_a[p.left].order_id, sample_b[p.right].order_id)
    t.equal(sample_b[p.right].scenario, 'exact_order_and_authorization_match')
  }
  const inferred = await tool(t, app, 'infer_rules', {
    schema_a,
    schema_b,
    sample_a,
    sample_b,
    mappings,
    confirmed_pairs: confirmed,
  })
  const rules = inferred.rules as { name: string; sql: string; description: string }[]
  t.same(inferred.primary_keys, { left: ['ledger_tx_id'], right: ['acquirer_tx_id'] })
  t.same(
    rules.map((r) => r.name),
    ['identifiers', 'order_id_amount_date', 'near_amounts'],
  )
  t.match(
    rules[0].sql,
    /l\.order_id = r\.order_id AND l\.authorization_code = r\.authorization_code .*AND l\.amount = r\.gross_amount$/,
  )
  t.match(rules[2].sql, /ABS\(l\.amount - r\.gross_amount\) <= 0\.04$/, "the scoped preview's 0.03 near pairs")
  t.match(rules[2].description, /7\.25 or more apart, a difference of another size, (is|are) left for review/)

  // 6. a custom rule in words
  const custom = await tool(t, app, 'nl_to_sql', {
    text: 'same order id, amount within 5 cents, up to 4 days after',
    schema_a,
    schema_b,
    mappings,
  })
  t.equal(
    custom.sql,
    "l.order_id = r.order_id AND ABS(l.amount - r.gross_amount) <= 0.05 AND r.settlement_date BETWEEN CAST(l.occurred_at AS date) AND CAST(l.occurred_at AS date) + INTERVAL '4 days'",
  )

  // 7. the recipe, checked
  const built = await tool(t, app, 'build_recipe', {
    rules: [...inferred.rules, { name: 'custom', sql: custom.sql, description: custom.explanation, confidence: 0.7 }],
    sources: { left: 'ledger', right: 'settlement' },
    primary_keys: inferred.primary_keys,
    pattern: inferred.pattern,
    name: 'ledger-vs-settlement-january',
    scope: filters,
  })
  const recipe = built.recipe
  const validated = await tool(t, app, 'validate_recipe', { recipe, schemas: { left: schema_a, right: schema_b } })
  t.same(validated, { valid: true, issues: [], suggestions: [], warnings: [] })

  // 8. a sample run on the scoped tables
  const sampleRun = await waitForRun(app, (await json(t, app, 'POST', '/api/runs', { recipe, mode: 'sample' })).id)
  t.equal(sampleRun.status, 'completed', JSON.stringify(sampleRun.error))
  const counts = (summary: {
    left: { rows: number; unmatched: number }
    right: { rows: number; unmatched: number }
    matches: number
    ambiguous: number
    passes: { name: string; matches: number; ambiguous: number }[]
  }) => ({
    rows: [summary.left.rows, summary.right.rows],
    matches: summary.matches,
    ambiguous: summary.ambiguous,
    unmatched: [summary.left.unmatched, summary.right.unmatched],
    passes: summary.passes.map((p) => [p.name, p.matches, p.ambiguous]),
  })
  const expectedCountsOf = {
    rows: [expected.leftRows, expected.rightRows],
    matches: expected.exactAmount + expected.tolerance + expected.ambiguous,
    ambiguous: expected.ambiguous,
    unmatched: [expected.unmatchedLeft, expected.unmatchedRight],
    passes: [
      // the equal-amount settlements, and the thrice-settled orders held as ambiguous groups
      ['identifiers', expected.exactAmount + expected.ambiguous, expected.ambiguous],
      // nothing left for it: every order and amount it accepts was taken by the pass before
      ['order_id_amount_date', 0, 0],
      ['near_amounts', expected.tolerance, 0],
      // order, 5 cents, 0..4 days: what it would take, the passes before took
      ['custom', 0, 0],
    ],
  }
  t.same(counts(sampleRun.summary), expectedCountsOf, 'the sample run: the loaded January tables')

  // 9. save the recipe, 10. the full run of the saved recipe
  const saved = await json(t, app, 'POST', '/api/recipes', recipe)
  const fullRun = await waitForRun(
    app,
    (await json(t, app, 'POST', '/api/runs', { recipe_id: saved.id, mode: 'full' })).id,
  )
  t.equal(fullRun.status, 'completed', JSON.stringify(fullRun.error))
  t.equal(fullRun.summary.recipe_version, 1, 'the saved recipe ran')
  t.same(counts(fullRun.summary), expectedCountsOf, 'the full run: each source loaded with the recipe scope')
  // the numbers themselves, for the reader: 542 + 13 matched, 5 orders held for review
  t.same(expected, {
    leftRows: 732,
    rightRows: 705,
    exactAmount: 542,
    tolerance: 13,
    ambiguous: 5,
    unmatchedLeft: 172,
    unmatchedRight: 135,
  })
  const held = await json(t, app, 'GET', `/api/runs/${fullRun.id}/matches?ambiguous=true`)
  t.equal(held.total, 5)
  t.ok(
    held.items.every((m: { right_keys: string[] }) => m.right_keys.length >= 2),
    'each held with its twin settlements',
  )
})
