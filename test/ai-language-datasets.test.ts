// The deterministic language tools on real data made outside the project (../shared/datasets,
// see its README for the ground truth): mappings found from 50 sample rows, a scope in words
// that keeps the rows an independent count keeps, and rules in words that the engine runs to
// the published counts.

import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { detectFieldMappings } from '../src/ai/tools/detect_field_mappings.js'
import { nlToSql } from '../src/ai/tools/nl_to_sql.js'
import { parseNlFilter } from '../src/ai/tools/parse_nl_filter.js'
import { loadCsv } from '../src/engine/load/csv/index.js'
import { resolveConditions, selectRows } from '../src/engine/load/filter.js'
import { loadJson } from '../src/engine/load/json.js'
import { describeTable, rowsAsJson, type Table } from '../src/engine/data/table.js'
import type { Recipe } from '../src/recipes/schema.js'
import { datasetsDir, datasetsSkip } from './helpers/datasets.js'
import { evidence } from './helpers/engine.js'
import { acquirerRecipe, kallaRecipe } from './helpers/recipes.js'

const load = async (path: string): Promise<Table> =>
  path.endsWith('.json') ? loadJson(join(datasetsDir, path)) : (await loadCsv(join(datasetsDir, path))).table

async function pair(a: string, b: string) {
  const left = await load(a)
  const right = await load(b)
  const input = {
    schema_a: describeTable(left),
    schema_b: describeTable(right),
    sample_a: rowsAsJson(left, 50),
    sample_b: rowsAsJson(right, 50),
  }
  const { mappings } = detectFieldMappings.deterministic(input)
  return { left, right, ...input, mappings, top6: mappings.slice(0, 6).map((m) => `${m.field_a}=${m.field_b}`) }
}

const LEDGER = 'acquirer-settlement/ledger-midaz.csv'
const SETTLEMENT = 'acquirer-settlement/acquirer-settlement.json'

t.test('acquirer-settlement: the six true mappings are exactly the top six', { skip: datasetsSkip }, async (t) => {
  const { top6, mappings } = await pair(LEDGER, SETTLEMENT)
  t.same([...top6].sort(), [
    'amount=gross_amount',
    'authorization_code=authorization_code',
    'currency=currency',
    'merchant_id=merchant_id',
    'occurred_at=settlement_date',
    'order_id=order_id',
  ])
  t.ok(
    mappings.slice(6).every((m) => m.confidence < mappings[5].confidence),
    'the rest score below them',
  )
  t.comment(mappings.map((m) => `${m.field_a}=${m.field_b} ${m.confidence}`).join(', '))
})

for (const dir of ['kalla', 'kalla/generated']) {
  t.test(`${dir}: invoices vs payments mappings are in the top six`, { skip: datasetsSkip }, async (t) => {
    const { top6 } = await pair(`${dir}/invoices.csv`, `${dir}/payments.csv`)
    for (const m of [
      'invoice_id=reference_number',
      'amount=paid_amount',
      'invoice_date=payment_date',
      'customer_id=payer_id',
      'currency=currency',
      'customer_name=payer_name',
    ])
      t.ok(top6.includes(m), m)
  })
}

/** The raw files, read without the project's loaders, for an independent count. */
async function rawRows(path: string): Promise<Record<string, string>[]> {
  const text = await readFile(join(datasetsDir, path), 'utf8')
  if (path.endsWith('.json')) return JSON.parse(text)
  const [header, ...lines] = text.trim().split(/\r?\n/)
  const names = header.split(',')
  return lines.map((line) => Object.fromEntries(line.split(',').map((v, k) => [names[k], v])))
}

t.test(
  'acquirer-settlement: "only January 2026 sales" scopes both sources as an independent count does',
  { skip: datasetsSkip },
  async (t) => {
    const { left, right, schema_a, schema_b } = await pair(LEDGER, SETTLEMENT)
    t.equal(schema_a.find((c) => c.name === 'occurred_at')?.type, 'timestamp')
    t.equal(schema_b.find((c) => c.name === 'settlement_date')?.type, 'date')
    const input = { text: 'only January 2026 sales', schema_a, schema_b, today: '2026-03-15' }
    const out = parseNlFilter.deterministic(input)
    t.same(out.filters, [
      { source: 'a', column: 'occurred_at', op: 'gte', value: '2026-01-01' },
      { source: 'a', column: 'occurred_at', op: 'lt', value: '2026-02-01' },
      { source: 'b', column: 'settlement_date', op: 'between', value: ['2026-01-01', '2026-01-31'] },
      { source: 'a', column: 'amount', op: 'gt', value: 0 },
      { source: 'b', column: 'gross_amount', op: 'gt', value: 0 },
    ])
    t.same(parseNlFilter.check?.(out, input), [])

    const kept = (table: Table, side: 'a' | 'b') =>
      selectRows(
        table,
        resolveConditions(
          describeTable(table),
          out.filters.filter((f) => f.source === side),
        ),
      ).length
    const ledger = await rawRows(LEDGER)
    const settlement = await rawRows(SETTLEMENT)
    const expectLeft = ledger.filter((r) => r.occurred_at.startsWith('2026-01') && Number(r.amount) > 0).length
    const expectRight = settlement.filter(
      (r) => r.settlement_date.startsWith('2026-01') && Number(r.gross_amount) > 0,
    ).length
    t.equal(kept(left, 'a'), expectLeft, `ledger keeps ${expectLeft}`)
    t.equal(kept(right, 'b'), expectRight, `settlement keeps ${expectRight}`)
    t.equal(expectLeft, 732, '776 January rows, 44 of them negative')
    t.equal(expectRight, 705)
  },
)

t.test(
  'acquirer-settlement: rules in words are the suggested rules and match as they do',
  { skip: datasetsSkip },
  async (t) => {
    const { left, right, schema_a, schema_b, mappings } = await pair(LEDGER, SETTLEMENT)
    const rule = (text: string) => {
      const input = { text, schema_a, schema_b, mappings }
      const out = nlToSql.deterministic(input)
      t.same(nlToSql.check?.(out, input), [], `${text}: parses and type-checks`)
      return out.sql
    }
    const recipe: Recipe = {
      ...acquirerRecipe,
      passes: [
        { name: 'exact', pattern: '1:1', when: rule('same order_id and same authorization_code') },
        { name: 'tolerance', pattern: '1:1', when: rule('same order id, amount within 5 cents, up to 4 days after') },
      ],
    }
    t.same(recipe.passes, acquirerRecipe.passes)
    const ours = evidence(recipe, left, right).result.summary
    const theirs = evidence(acquirerRecipe, left, right).result.summary
    t.same(
      ours.passes.map((p) => p.matches),
      theirs.passes.map((p) => p.matches),
    )
  },
)

t.test(
  'kalla/generated: rules in words, run by the engine, reproduce stats.json',
  { skip: datasetsSkip },
  async (t) => {
    const { left, right, schema_a, schema_b, mappings } = await pair(
      'kalla/generated/invoices.csv',
      'kalla/generated/payments.csv',
    )
    const stats = JSON.parse(await readFile(join(datasetsDir, 'kalla/generated/stats.json'), 'utf8'))
    const rule = (text: string) => {
      const input = { text, schema_a, schema_b, mappings }
      const out = nlToSql.deterministic(input)
      t.same(nlToSql.check?.(out, input), [], `${text}: parses and type-checks`)
      return out.sql
    }
    const exact = rule('same reference and same amount')
    const tolerance = rule('same reference ignoring case and amount within 2%')
    t.equal(exact, 'l.invoice_id = r.reference_number AND l.amount = r.paid_amount')
    // the split pass needs LIKE on a reference prefix, which the phrase grammar does not write
    const recipe: Recipe = {
      ...kallaRecipe,
      passes: [
        { name: 'exact', pattern: '1:1', when: exact },
        { name: 'tolerance', pattern: '1:1', when: tolerance },
        kallaRecipe.passes[2],
      ],
    }
    const s = evidence(recipe, left, right).result.summary
    t.same(
      s.passes.map((p) => [p.name, p.matches]),
      [
        ['exact', stats.exact_matches],
        ['tolerance', stats.tolerance_matches],
        ['split', stats.duplicates],
      ],
    )
    t.equal(s.left.unmatched, stats.orphan_left)
    t.equal(s.right.unmatched, stats.orphan_right)
  },
)
