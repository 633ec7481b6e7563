// A run's exceptions kept as a set file beside its results (src/exceptions/sidecar.ts, sets.ts):
// the run writes one set row and no exception rows; an operator's action turns the exceptions it
// touches into rows with the same id and state (materialize.ts); and the list, merging rows and
// file rows, gives every exception exactly once, in order, for every sort, direction and cursor,
// with counts and filters that agree with the items themselves.

import { existsSync } from 'node:fs'
import { utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { ExceptionSets } from '../src/exceptions/sets.js'
import { testApp } from './helpers/app.js'
import {
  allExceptions,
  bankHeader,
  bankRecipe,
  completedRun,
  type ExceptionItem,
  invoiceHeader,
  registerBankSources,
  saveRecipe,
} from './helpers/exceptions.js'

const N = 240

/** How many exceptions are database rows (the rest are in set files). */
async function exceptionRows(app: FastifyInstance): Promise<number> {
  const { n } = await app.db
    .selectFrom('exceptions')
    .select((e) => e.fn.countAll().as('n'))
    .executeTakeFirstOrThrow()
  return Number(n)
}

/** Each line i: kind i % 4 matches, differs in amount, has no counterpart, or is dated far off. */
function world() {
  const bank = [bankHeader]
  const invoices = [invoiceHeader]
  for (let i = 0; i < N; i++) {
    const amount = (10 + ((i * 37) % 400) + (i % 7) / 4).toFixed(2)
    const day = `2024-0${1 + (i % 9)}-${String(1 + (i % 27)).padStart(2, '0')}`
    bank.push(`T${i},${amount},${day},R${i}`)
    const kind = i % 4
    if (kind === 2) continue
    const paid = kind === 1 ? (Number(amount) * 0.8).toFixed(2) : amount
    const paidOn = kind === 3 ? `2023-12-${String(1 + (i % 27)).padStart(2, '0')}` : day
    invoices.push(`I${i},${paid},${paidOn},R${i},`)
  }
  return { 'bank.csv': bank.join('\n'), 'invoices.csv': invoices.join('\n') }
}

const SORTS = {
  created: (e: ExceptionItem) => e.id,
  amount: (e: ExceptionItem) => Number(e.amount_at_risk),
  age: (e: ExceptionItem) => -e.age_days, // the date it counts from
}

t.test('a set file serves the list; touched exceptions become rows; paging gives each once, in order', async (t) => {
  const { app } = await testApp(t, { files: world() })
  await registerBankSources(app)
  const recipeId = await saveRecipe(app, bankRecipe)
  const run = await completedRun(app, { recipe_id: recipeId })
  t.equal(run.status, 'completed', JSON.stringify(run.error))
  const expected = run.summary.left.unmatched + run.summary.right.unmatched + run.summary.ambiguous
  t.ok(expected > 150, `${expected} exceptions expected`)

  // the run recorded one set row and wrote its file; no exception is a row yet
  const set = await app.db.selectFrom('exception_sets').selectAll().executeTakeFirstOrThrow()
  t.equal(set.count, expected, 'the set holds every exception of the run')
  t.equal(await exceptionRows(app), 0)
  t.ok(existsSync(join(app.runs.resultsDir(run.id), 'exceptions.arrow')), 'the set file is beside the results')

  const all = await allExceptions(app, 'status=all')
  t.equal(all.length, expected)
  t.same(
    all.map((e) => e.id).sort((a, b) => a - b),
    Array.from({ length: expected }, (_, i) => Number(set.first_id) + i),
    'ids are the set block, each once',
  )
  const before = new Map(all.map((e) => [e.id, e]))

  // touch some: 25 assigned, 6 written off; the rest stay in the file
  const byId = [...before.keys()].sort((a, b) => a - b)
  const assigned = byId.filter((_, i) => i % 7 === 0).slice(0, 25)
  const written = byId.filter((_, i) => i % 11 === 5).slice(0, 6)
  let res = await app.inject({
    method: 'POST',
    url: '/api/exceptions/bulk',
    payload: { action: 'assign', ids: assigned, assignee: 'alice' },
  })
  t.equal(res.statusCode, 200, res.body)
  res = await app.inject({
    method: 'POST',
    url: '/api/exceptions/bulk',
    payload: { action: 'write_off', ids: written, reason: 'below threshold' },
  })
  t.equal(res.statusCode, 200, res.body)
  const rows = await app.db.selectFrom('exceptions').selectAll().orderBy('id').execute()
  t.same(
    rows.map((r) => Number(r.id)),
    [...new Set([...assigned, ...written])].sort((a, b) => a - b),
    'exactly the touched exceptions became rows, under their own ids',
  )
  const one = rows.find((r) => Number(r.id) === assigned[1])!
  const was = before.get(assigned[1])!
  t.match(
    { reason: one.reason, record_key: one.record_key, amount_at_risk: one.amount_at_risk, side: one.side },
    { reason: was.reason, record_key: was.record_key, amount_at_risk: was.amount_at_risk, side: was.side },
    'a row keeps what the file said',
  )
  t.equal(new Date(one.created_at).toISOString(), new Date(set.created_at).toISOString(), 'and when it was created')

  const now = await allExceptions(app, 'status=all')
  t.equal(now.length, expected, 'still each exception once')
  t.equal(now.filter((e) => e.assignee === 'alice').length, assigned.length)
  t.equal(now.filter((e) => e.status === 'resolved').length, written.length)
  const open = await allExceptions(app)
  t.equal(open.length, expected - written.length, 'the open queue leaves the written-off out')

  // every sort, both directions, small pages: each exception once, in (value, id) order, and the
  // count the list reports is the number of items it gives
  for (const [sort, key] of Object.entries(SORTS))
    for (const order of ['asc', 'desc'])
      for (const filter of [
        'status=all',
        'status=open',
        'assignee=-',
        'reason=missing_counterpart',
        'amount_min=50&amount_max=200.5',
      ]) {
        const seen: ExceptionItem[] = []
        let cursor: string | null = null
        let total: number | undefined
        for (let pages = 0; pages < 200; pages++) {
          const page = await app.inject({
            url: `/api/exceptions?${filter}&sort=${sort}&order=${order}&limit=9&count=true${cursor ? `&cursor=${cursor}` : ''}`,
          })
          const body = page.json() as { items: ExceptionItem[]; next_cursor: string | null; total: number }
          total ??= body.total
          seen.push(...body.items)
          cursor = body.next_cursor
          if (!cursor) break
        }
        const label = `${filter} by ${sort} ${order}`
        t.equal(new Set(seen.map((e) => e.id)).size, seen.length, `${label}: no exception twice`)
        t.equal(seen.length, total, `${label}: as many as counted`)
        const want = now.filter((e) => {
          if (filter === 'status=open') return e.status === 'open'
          if (filter === 'assignee=-') return e.status === 'open' && e.assignee === null
          if (filter === 'reason=missing_counterpart') return e.status === 'open' && e.reason === 'missing_counterpart'
          if (filter.startsWith('amount_min'))
            return e.status === 'open' && Number(e.amount_at_risk) >= 50 && Number(e.amount_at_risk) <= 200.5
          return true
        })
        t.same(
          seen.map((e) => e.id).sort((a, b) => a - b),
          want.map((e) => e.id).sort((a, b) => a - b),
          `${label}: exactly the exceptions that pass`,
        )
        // age sorts by the date it counts from, the other way round (oldest first is `desc`)
        const sign = (order === 'asc' ? 1 : -1) * (sort === 'age' ? -1 : 1)
        const sorted = [...seen].sort((a, b) => (key(a) - key(b) || a.id - b.id) * sign)
        t.same(
          seen.map((e) => e.id),
          sorted.map((e) => e.id),
          `${label}: in order`,
        )
      }

  // another instance's copy of the sets learns which exceptions became rows from the set's counter
  const ws = set.workspace_id
  const other = new ExceptionSets(app.db, (id) => app.runs.resultsDir(id))
  const first = await other.of(ws)
  const target = byId.find((id) => !assigned.includes(id) && !written.includes(id))!
  t.notOk(first.isMaterialized(first.locate(target)))
  res = await app.inject({ method: 'POST', url: `/api/exceptions/${target}/comments`, payload: { text: 'checking' } })
  t.equal(res.statusCode, 201, res.body)
  const later = await other.of(ws)
  t.ok(later.isMaterialized(later.locate(target)), 'a comment made it a row, and the other copy knows')
  t.equal((await allExceptions(app, 'status=all')).length, expected)
})

t.test('unmatching a record that a later run left open keeps one open item, not two', async (t) => {
  const { app, dataDir } = await testApp(t, { files: {} })
  // day one: T1 matches I1; day two: T1 again (same key), its invoice gone: open in day two's set
  const day = async (bank: string[], invoices: string[], stamp: number) => {
    const at = new Date(Date.now() + stamp * 10_000)
    for (const [name, lines] of [
      ['bank.csv', [bankHeader, ...bank]],
      ['invoices.csv', [invoiceHeader, ...invoices]],
    ] as const) {
      await writeFile(join(dataDir, name), lines.join('\n'))
      await utimes(join(dataDir, name), at, at)
    }
  }
  await day(['T1,100.00,2024-03-10,R1'], ['I1,100.00,2024-03-09,R1,'], 1)
  await registerBankSources(app)
  const recipeId = await saveRecipe(app, bankRecipe)
  const first = await completedRun(app, { recipe_id: recipeId })
  t.match(first.summary, { matches: 1 })
  await day(['T1,100.00,2024-03-10,R1'], ['I9,5.00,2024-03-09,R9,'], 2)
  const second = await completedRun(app, { recipe_id: recipeId })
  t.match(second.summary, { matches: 0 })
  const openT1 = async () => (await allExceptions(app)).filter((e) => e.side === 'left' && e.record_key === 'T1')
  const before = await openT1()
  t.equal(before.length, 1, 'T1 is an open item of the second run')
  t.equal(before[0].run_id, second.id)
  t.equal(await exceptionRows(app), 0)

  const undo = await app.inject({
    method: 'POST',
    url: '/api/exceptions/unmatch',
    payload: { run_id: first.id, match_id: 'm0000001', reason: 'wrong invoice' },
  })
  t.equal(undo.statusCode, 200, undo.body)
  t.same(
    undo.json().exceptions.map((x: ExceptionItem) => [x.record_key, x.side]),
    [['I1', 'right']],
    'I1 opens; T1 is already open',
  )
  const after = await openT1()
  t.same(
    after.map((e) => e.id),
    before.map((e) => e.id),
    'T1 is still the one open item, now a row',
  )
})

t.test("a run's aging and overview add the file rows' amounts exactly, past 2^53 units", async (t) => {
  // amounts of 15 digits (the most an exact decimal column holds): ten of them in one bucket are
  // more cents than a float holds exactly
  const bank = [bankHeader]
  const invoices = [invoiceHeader]
  for (let i = 0; i < 60; i++) {
    const cents = i % 4 < 2 ? 999_999_999_999_999 - i * 1_000_003 : 1_000 + i * 7
    const amount = `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`
    const day = i % 2 ? '2024-01-05' : new Date(Date.now() - 3 * 86_400_000).toISOString().slice(0, 10)
    bank.push(`T${i},${amount},${day},R${i}`)
    if (i % 3 === 0) invoices.push(`I${i},${amount},${day},R${i},`)
  }
  const { app } = await testApp(t, { files: { 'bank.csv': bank.join('\n'), 'invoices.csv': invoices.join('\n') } })
  await registerBankSources(app)
  const recipeId = await saveRecipe(app, bankRecipe)
  const run = await completedRun(app, { recipe_id: recipeId })
  t.equal(run.status, 'completed', JSON.stringify(run.error))
  // one of them a row (assigned), the others in the file: both sources count
  const items = await allExceptions(app, `run_id=${run.id}&status=all`)
  t.ok(items.length > 20, `${items.length} exceptions`)
  const res = await app.inject({
    method: 'POST',
    url: `/api/exceptions/${items[0].id}/assign`,
    payload: { assignee: 'alice' },
  })
  t.equal(res.statusCode, 200, res.body)
  t.equal(await exceptionRows(app), 1)

  // exact text to cents: at most two decimals, as the recipe's amounts
  const cents = (s: string) => {
    const [whole, frac = ''] = s.split('.')
    if (frac.length > 2) throw new Error(`more than cents: ${s}`)
    return BigInt(whole + frac.padEnd(2, '0'))
  }
  const bucketOf = (age: number) => (age <= 1 ? 0 : age <= 7 ? 1 : age <= 30 ? 2 : 3)
  const expected = [0, 1, 2, 3].map(() => ({ count: 0, cents: 0n }))
  for (const e of items) {
    if (e.status !== 'open') continue
    expected[bucketOf(e.age_days)].count++
    expected[bucketOf(e.age_days)].cents += cents(e.amount_at_risk)
  }
  const aging = (await app.inject({ url: `/api/runs/${run.id}/exceptions/aging` })).json()
  t.same(
    aging.map((b: { count: number; amount: string }) => ({ count: b.count, cents: cents(b.amount) })),
    expected,
  )
  t.ok(
    expected.some((b) => b.cents >= 2n ** 53n),
    'a bucket past 2^53 cents',
  )

  const overview = await app.exceptions.overviewOfRun('default', run.id, 3)
  const byReason = new Map<string, { count: number; cents: bigint }>()
  for (const e of items) {
    const into = byReason.get(e.reason) ?? { count: 0, cents: 0n }
    byReason.set(e.reason, { count: into.count + 1, cents: into.cents + cents(e.amount_at_risk) })
  }
  t.same(
    Object.fromEntries(overview.by_reason.map((r) => [r.reason, { count: r.count, cents: cents(r.amount_at_risk) }])),
    Object.fromEntries(byReason),
  )
})
