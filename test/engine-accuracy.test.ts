// Accuracy on real data made outside the project (../shared/datasets, see its README for the
// ground truth): kalla's generated and hand-written invoices vs payments, a card ledger vs an
// acquirer's settlement file, and Febrl person records with no shared key. Every run also keeps
// the partition invariant: each record in exactly one of matched / unmatched-left / unmatched-right.

import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { jsonValue } from '../src/engine/builder.js'
import { loadCsv } from '../src/engine/csv/index.js'
import { loadJson } from '../src/engine/json.js'
import type { Table } from '../src/engine/table.js'
import type { Recipe } from '../src/recipes/schema.js'
import { datasetsDir, datasetsSkip } from './helpers/datasets.js'
import { evidence, pairs, partitionProblems } from './helpers/engine.js'
import { acquirerRecipe, kallaRecipe } from './helpers/recipes.js'

const csv = async (path: string) => (await loadCsv(join(datasetsDir, path))).table

function column(table: Table, name: string): (row: number) => string {
  const col = table.data[table.columns.findIndex((c) => c.name === name)]
  return (row) => String(jsonValue(col, row))
}

t.test('kalla/generated: exact, tolerance and split passes reproduce stats.json', { skip: datasetsSkip }, async (t) => {
  const invoices = await csv('kalla/generated/invoices.csv')
  const payments = await csv('kalla/generated/payments.csv')
  const stats = JSON.parse(await readFile(join(datasetsDir, 'kalla/generated/stats.json'), 'utf8'))
  const recipe = kallaRecipe
  const e = evidence(recipe, invoices, payments)
  const s = e.result.summary
  t.same(partitionProblems(e, invoices.length, payments.length), [])
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
  t.equal(s.ambiguous, 0)
  const splits = e.matches.filter((m) => m.pass === 'split')
  t.same(
    splits.map((m) => [m.left_keys, m.right_keys.length]),
    [
      [['INV-000038'], 2],
      [['INV-000039'], 2],
    ],
  )
  t.comment(
    `kalla/generated: ${JSON.stringify(s.passes.map((p) => [p.name, p.matches]))}, unmatched ${s.left.unmatched}/${s.right.unmatched}`,
  )
})

t.test(
  'kalla: the split payment is a 1:N group; comparing currency keeps EUR/GBP apart',
  { skip: datasetsSkip },
  async (t) => {
    const invoices = await csv('kalla/invoices.csv')
    const payments = await csv('kalla/payments.csv')
    const passes = (currency: string): Recipe['passes'] => [
      {
        name: 'exact',
        pattern: '1:1',
        when: `l.invoice_id = r.reference_number AND ABS(l.amount - r.paid_amount) <= 0.01${currency}`,
      },
      {
        name: 'fees',
        pattern: '1:1',
        when: `l.invoice_id = r.reference_number AND ABS(l.amount - r.paid_amount) <= 25${currency}`,
      },
      {
        name: 'split',
        pattern: '1:N',
        when: `l.customer_id = r.payer_id AND r.reference_number LIKE l.invoice_id || '-PART%'${currency}`,
        aggregate: { sum: 'r.paid_amount', equals: 'l.amount', tolerance: 0.01 },
      },
      {
        name: 'by_amount',
        pattern: '1:1',
        when: `ABS(l.amount - r.paid_amount) <= l.amount * 0.02 AND r.payment_date BETWEEN l.invoice_date - INTERVAL '10 days' AND l.invoice_date + INTERVAL '45 days'${currency}`,
      },
    ]
    const recipe = (currency: string): Recipe => ({
      name: 'kalla',
      left: { source: 'invoices', key: ['invoice_id'] },
      right: { source: 'payments', key: ['payment_id'] },
      passes: passes(currency),
    })
    const e = evidence(recipe(' AND l.currency = r.currency'), invoices, payments)
    t.same(partitionProblems(e, invoices.length, payments.length), [])
    const split = e.matches.filter((m) => m.pass === 'split')
    t.same(
      split.map((m) => [m.left_keys, m.right_keys, m.deltas.amount]),
      [[['INV-2024-008'], ['PAY-2024-008A', 'PAY-2024-008B'], '0.00']],
    )
    t.same(
      pairs(e).filter((p) => p.startsWith('INV-2024-006')),
      ['INV-2024-006|PAY-2024-006'],
      'the wire fee is a 15.00 delta',
    )
    t.equal(e.matches.find((m) => m.left_keys[0] === 'INV-2024-006')!.deltas.amount, '15.00')

    const currencyOf = (table: Table) => column(table, 'currency')
    const lc = currencyOf(invoices)
    const rc = currencyOf(payments)
    const m = e.result.matches
    const crossCurrency = (res: typeof m) => {
      const out: string[] = []
      for (let k = 0; k < res.count; k++)
        for (let a = res.leftStart[k]; a < res.leftStart[k + 1]; a++)
          for (let b = res.rightStart[k]; b < res.rightStart[k + 1]; b++)
            if (lc(res.leftRows[a]) !== rc(res.rightRows[b])) out.push(`${lc(res.leftRows[a])}/${rc(res.rightRows[b])}`)
      return out
    }
    t.same(crossCurrency(m), [], 'no match pairs two currencies')
    const unmatched = e.unmatchedLeft.map((u) => u.record_key)
    t.ok(
      unmatched.includes('INV-2024-013') && unmatched.includes('INV-2024-014'),
      'the EUR and GBP invoices stay unmatched',
    )

    // the same amount rule without the currency conjunct pairs the GBP invoice with a USD payment
    const loose = evidence(
      { ...recipe(''), passes: passes('').filter((p) => p.name === 'by_amount') },
      invoices,
      payments,
    )
    t.ok(crossCurrency(loose.result.matches).includes('GBP/USD'), 'without it, GBP 8500.00 matches USD 8485.00')
  },
)

t.test(
  'acquirer settlement: ledger vs acquirer with the suggested rules, per scenario',
  { skip: datasetsSkip },
  async (t) => {
    const ledger = await csv('acquirer-settlement/ledger-midaz.csv')
    const settlement = await loadJson(join(datasetsDir, 'acquirer-settlement/acquirer-settlement.json'))
    t.equal(ledger.length, 1000)
    t.equal(settlement.length, 1000)
    const recipe = acquirerRecipe
    const e = evidence(recipe, ledger, settlement)
    t.same(partitionProblems(e, ledger.length, settlement.length), [])
    const ls = column(ledger, 'scenario')
    const rs = column(settlement, 'scenario')
    const lOrder = column(ledger, 'order_id')
    const settledOrders = new Set(
      Array.from({ length: settlement.length }, (_, j) => column(settlement, 'order_id')(j)),
    )
    const report = new Map<string, { matched: number; ambiguous: number; unmatched: number }>()
    const bump = (key: string, what: 'matched' | 'ambiguous' | 'unmatched') => {
      const r = report.get(key) ?? { matched: 0, ambiguous: 0, unmatched: 0 }
      r[what]++
      report.set(key, r)
    }
    const m = e.result.matches
    const leftState = new Map<number, 'matched' | 'ambiguous'>()
    for (let k = 0; k < m.count; k++) {
      const what = m.ambiguous[k] ? 'ambiguous' : 'matched'
      for (let n = m.leftStart[k]; n < m.leftStart[k + 1]; n++) {
        bump(`ledger ${ls(m.leftRows[n])}`, what)
        leftState.set(m.leftRows[n], what)
      }
      for (let n = m.rightStart[k]; n < m.rightStart[k + 1]; n++) bump(`settlement ${rs(m.rightRows[n])}`, what)
    }
    for (const row of e.result.unmatchedLeft.rows) bump(`ledger ${ls(row)}`, 'unmatched')
    for (const row of e.result.unmatchedRight.rows) bump(`settlement ${rs(row)}`, 'unmatched')
    for (const [k, v] of [...report].sort())
      t.comment(`${k}: matched ${v.matched}, ambiguous ${v.ambiguous}, unmatched ${v.unmatched}`)

    // every ledger sale that has a settlement is matched; no ledger-only row is
    const missed: string[] = []
    for (let i = 0; i < ledger.length; i++)
      if (ls(i) === 'ledger_sale_candidate' && settledOrders.has(lOrder(i)) && !leftState.has(i)) missed.push(lOrder(i))
    t.same(missed, [], 'every ledger_sale_candidate with a settlement is matched')
    t.notOk(
      report.get('ledger ledger_only')?.matched || report.get('ledger ledger_only')?.ambiguous,
      'no ledger_only row is matched',
    )
    t.equal(report.get('ledger ledger_only')?.unmatched, 120)
    t.same(report.get('settlement acquirer_only_settlement'), { matched: 0, ambiguous: 0, unmatched: 150 })
    // a chargeback shares its order and authorization with the sale, which scores higher and wins
    t.same(report.get('ledger ledger_chargeback'), { matched: 0, ambiguous: 0, unmatched: 60 })
    // duplicate settlements are held for review as ambiguous groups, never silently matched twice
    t.same(report.get('settlement duplicate_settlement_candidate'), { matched: 0, ambiguous: 30, unmatched: 0 })
  },
)

t.test(
  'febrl: person records with no shared key, by names, date of birth and postcode',
  { skip: datasetsSkip },
  async (t) => {
    const a = await csv('febrl/dataset4a.csv')
    const b = await csv('febrl/dataset4b.csv')
    t.same(
      a.columns.map((c) => c.name).slice(0, 3),
      ['rec_id', 'given_name', 'surname'],
      'spaces after commas are trimmed',
    )
    const name = (s: string) => `COALESCE(${s}.given_name, '') || ' ' || COALESCE(${s}.surname, '')`
    const similar = (min: number) => `similarity(${name('l')}, ${name('r')}) >= ${min}`
    const recipe: Recipe = {
      name: 'febrl',
      left: { source: 'a', key: ['rec_id'] },
      right: { source: 'b', key: ['rec_id'] },
      passes: [
        { name: 'dob_postcode', pattern: '1:1', when: 'l.date_of_birth = r.date_of_birth AND l.postcode = r.postcode' },
        { name: 'dob_name', pattern: '1:1', when: `l.date_of_birth = r.date_of_birth AND ${similar(0.4)}` },
        { name: 'postcode_name', pattern: '1:1', when: `l.postcode = r.postcode AND ${similar(0.5)}` },
        { name: 'full_name', pattern: '1:1', when: 'l.surname = r.surname AND l.given_name = r.given_name' },
        { name: 'suburb_name', pattern: '1:1', when: `l.suburb = r.suburb AND ${similar(0.5)}` },
        { name: 'street_name', pattern: '1:1', when: `l.address_1 = r.address_1 AND ${similar(0.3)}` },
      ],
    }
    const e = evidence(recipe, a, b)
    t.same(partitionProblems(e, a.length, b.length), [])
    let truePositives = 0
    let falsePositives = 0
    for (const m of e.matches) {
      if (m.ambiguous) continue // held for review: neither a claimed link nor a miss
      if (m.left_keys[0].replace(/-org$/, '') === m.right_keys[0].replace(/-dup-\d+$/, '')) truePositives++
      else falsePositives++
    }
    const precision = truePositives / (truePositives + falsePositives)
    const recall = truePositives / 5000
    t.comment(
      `febrl: precision ${precision.toFixed(4)}, recall ${recall.toFixed(4)} (${truePositives} true, ${falsePositives} false links)`,
    )
    t.ok(precision >= 0.995, `precision ${precision}`)
    t.ok(recall >= 0.97, `recall ${recall}`)
  },
)
