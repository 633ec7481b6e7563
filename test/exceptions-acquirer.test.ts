// Exceptions on real data (../shared/datasets/acquirer-settlement): a ledger against an acquirer's
// settlement file whose `scenario` column says why each row exists. The reasons the run gives are
// checked against the raw files (an oracle written here from the data, not from the engine), and
// against the scenarios: ledger-only and acquirer-only rows have no counterpart, settlement lags
// fall outside the date window, amount mismatches are amount exceptions. A second recipe compares
// the ledger's gross amount with the acquirer's net one: the difference is the fee each
// settlement states, so those exceptions are fee variances.

import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { Recipe } from '../src/recipes/schema.js'
import { datasetsDir, datasetsSkip, testApp } from './helpers/app.js'
import { allExceptions, completedRun, type ExceptionItem } from './helpers/exceptions.js'

interface Ledger {
  id: string
  order: string
  auth: string
  amount: number
  day: number
  scenario: string
}
interface Settlement {
  id: string
  order: string
  auth: string
  gross: number
  net: number
  fee: number
  day: number
  scenario: string
}

const day = (s: string) => Math.floor(Date.parse(s.slice(0, 10)) / 86_400_000)
const cents = (s: string) => Math.round(Number(s) * 100)

async function dataset() {
  const dir = join(datasetsDir, 'acquirer-settlement')
  const lines = (await readFile(join(dir, 'ledger-midaz.csv'), 'utf8')).trim().split('\n').slice(1)
  const ledger: Ledger[] = lines.map((line) => {
    const f = line.split(',')
    return { id: f[0], order: f[1], amount: cents(f[2]), day: day(f[4]), auth: f[7], scenario: f[8] }
  })
  const raw = JSON.parse(await readFile(join(dir, 'acquirer-settlement.json'), 'utf8')) as Record<string, string>[]
  const settlement: Settlement[] = raw.map((x) => ({
    id: x.acquirer_tx_id,
    order: x.order_id,
    auth: x.authorization_code,
    gross: cents(x.gross_amount),
    net: cents(x.net_amount),
    fee: cents(x.fee_amount),
    day: day(x.settlement_date),
    scenario: x.scenario,
  }))
  return { ledger, settlement }
}

const checked = (when: string): Recipe => ({
  name: 'ledger-vs-acquirer',
  left: { source: 'ledger', key: ['ledger_tx_id'] },
  right: { source: 'settlement', key: ['acquirer_tx_id'] },
  passes: [{ name: 'exact', pattern: '1:1', when }],
})
const WINDOW =
  "r.settlement_date BETWEEN CAST(l.occurred_at AS date) AND CAST(l.occurred_at AS date) + INTERVAL '4 days'"
const SAME_ORDER = 'l.order_id = r.order_id AND l.authorization_code = r.authorization_code'

async function app(t: Test) {
  const { app } = await testApp(t, { dataDir: datasetsDir })
  for (const [alias, type, path] of [
    ['ledger', 'csv', 'acquirer-settlement/ledger-midaz.csv'],
    ['settlement', 'json', 'acquirer-settlement/acquirer-settlement.json'],
  ]) {
    const res = await app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type, path } })
    if (res.statusCode !== 201) throw new Error(res.body)
  }
  return app
}

t.test(
  'acquirer settlement: the exceptions by reason agree with the data and its scenarios',
  { skip: datasetsSkip },
  async (t) => {
    const { ledger, settlement } = await dataset()
    const api = await app(t)
    const recipe = checked(`${SAME_ORDER} AND ABS(l.amount - r.gross_amount) <= 0.05 AND ${WINDOW}`)
    const saved = (await api.inject({ method: 'POST', url: '/api/recipes', payload: recipe })).json()
    const run = await completedRun(api, { recipe_id: saved.id })
    t.equal(run.status, 'completed', JSON.stringify(run.error))
    const items = await allExceptions(api)
    const records = items.filter((e) => e.side !== 'both')
    t.equal(records.length, run.summary.left.unmatched + run.summary.right.unmatched, 'one per unmatched record')
    t.equal(items.length - records.length, run.summary.ambiguous, 'one per ambiguous match')

    // the oracle: what the raw rows say about each exception's reason
    const partnersOf = (e: ExceptionItem) =>
      e.side === 'left'
        ? settlement.filter((s) => {
            const l = ledger.find((x) => x.id === e.record_key)!
            return s.order === l.order && s.auth === l.auth
          })
        : ledger.filter((l) => {
            const s = settlement.find((x) => x.id === e.record_key)!
            return s.order === l.order && s.auth === l.auth
          })
    const pair = (e: ExceptionItem) => {
      const l = ledger.find((x) => x.id === (e.side === 'left' ? e.record_key : e.candidate_key))!
      const s = settlement.find((x) => x.id === (e.side === 'left' ? e.candidate_key : e.record_key))!
      return { l, s, delta: Math.abs(l.amount - s.gross), lag: s.day - l.day }
    }
    const wrong: string[] = []
    for (const e of records) {
      const partners = partnersOf(e)
      const ids = new Set(partners.map((p) => p.id))
      const fail = (why: string) => wrong.push(`${e.record_key} ${e.reason}: ${why}`)
      if (!partners.length) {
        if (e.reason !== 'missing_counterpart') fail('no record of the other side has its order and authorization')
        continue
      }
      if (e.reason === 'missing_counterpart') {
        // its partners all belong to other records' matches
        const open = records.filter((x) => ids.has(x.record_key))
        if (open.length) fail(`partner ${open[0].record_key} is unmatched too`)
        continue
      }
      if (!ids.has(e.candidate_key!)) {
        fail(`closest candidate ${e.candidate_key} is not a partner`)
        continue
      }
      const { l, s, delta, lag } = pair(e)
      const inWindow = lag >= 0 && lag <= 4
      if (e.reason === 'date_outside_window' && (delta > 5 || inWindow)) fail(`delta ${delta}, lag ${lag}`)
      if (e.reason === 'amount_outside_tolerance' || e.reason === 'fee_variance') {
        if (delta <= 5) fail(`delta ${delta} is within tolerance`)
        const feeLike =
          inWindow && (delta * 100 <= Math.max(Math.abs(l.amount), Math.abs(s.gross)) || [s.net, s.fee].includes(delta))
        if ((e.reason === 'fee_variance') !== feeLike) fail(`delta ${delta} of ${l.amount}/${s.gross}, lag ${lag}`)
        if (e.reason === 'fee_variance' && e.amount_at_risk !== (delta / 100).toFixed(2)) fail('amount at risk')
      }
      if (e.reason === 'duplicate') {
        // another record of its side settles or books the same order
        const twins =
          e.side === 'left'
            ? ledger.filter((x) => x.id !== e.record_key && partners.some((p) => p.order === x.order))
            : settlement.filter((x) => x.id !== e.record_key && partners.some((p) => p.order === x.order))
        if (!twins.length) fail('no record of its side repeats it')
      }
      if (e.reason === 'other') fail('nothing in this recipe is "other"')
    }
    t.same(wrong, [], 'every reason agrees with the raw rows')

    // and with the scenarios the dataset was made from
    const scenario = (e: ExceptionItem) =>
      e.side === 'left'
        ? ledger.find((x) => x.id === e.record_key)!.scenario
        : settlement.find((x) => x.id === e.record_key)!.scenario
    const table = new Map<string, number>()
    for (const e of records)
      table.set(`${scenario(e)} → ${e.reason}`, (table.get(`${scenario(e)} → ${e.reason}`) ?? 0) + 1)
    t.comment(
      [...table]
        .sort()
        .map(([k, n]) => `${k}: ${n}`)
        .join('\n'),
    )
    const of = (s: string) => records.filter((e) => scenario(e) === s)
    t.equal(of('ledger_only').length, 120)
    t.ok(of('ledger_only').every((e) => e.reason === 'missing_counterpart'))
    t.equal(of('acquirer_only_settlement').length, 150)
    t.ok(of('acquirer_only_settlement').every((e) => e.reason === 'missing_counterpart'))
    const lags = of('settlement_lag_candidate')
    t.ok(lags.filter((e) => e.reason === 'date_outside_window').length >= 16, 'settlement lags are date exceptions')
    const mismatches = of('amount_mismatch_outside_tolerance')
    t.ok(
      mismatches.filter((e) => e.reason === 'amount_outside_tolerance' || e.reason === 'fee_variance').length >= 15,
      'amount mismatches are amount exceptions',
    )
    t.ok(
      of('ledger_chargeback').every(
        (e) => e.reason === 'missing_counterpart' || e.reason === 'amount_outside_tolerance',
      ),
    )
    t.equal(
      of('exact_order_and_authorization_match').filter((e) => partnersOf(e).length).length,
      0,
      'an exact pair never is one',
    )
  },
)

t.test(
  'acquirer settlement: gross against net amounts are fee variances (the fee each row states)',
  { skip: datasetsSkip },
  async (t) => {
    const { settlement } = await dataset()
    const api = await app(t)
    const recipe = checked(`${SAME_ORDER} AND ABS(l.amount - r.net_amount) <= 0.05 AND ${WINDOW}`)
    const run = await completedRun(api, { recipe })
    t.equal(run.status, 'completed', JSON.stringify(run.error))
    const fees = await allExceptions(api, 'reason=fee_variance&side=right')
    // every settlement of a sale in its window whose gross is the ledger's: 698 of them
    t.ok(fees.length >= 690, `${fees.length} fee variances`)
    for (const e of fees) {
      // the difference is the fee the settlement states, or within 1% of the larger amount
      const s = settlement.find((x) => x.id === e.record_key)!
      const risk = cents(e.amount_at_risk)
      if (risk !== s.fee && risk * 100 > s.net + risk)
        t.fail(`${e.record_key}: ${e.amount_at_risk} is neither its fee nor within 1%`)
    }
    const stated = fees.filter((e) => cents(e.amount_at_risk) === settlement.find((x) => x.id === e.record_key)!.fee)
    t.ok(stated.length >= 690, `${stated.length} differences are the stated fee`)
  },
)
