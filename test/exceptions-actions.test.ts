// What operators do to exceptions: assign and comment (with history), accept and write off with a
// reason, match records by hand (checked exactly against the recipe's own amount check, or booking
// an adjustment), unmatch an automatic match (its records open again, once), bulk actions (all or
// nothing), each reaching the audit/webhook seam once; and two operators resolving the same
// exception at once over real HTTP on a real PostgreSQL: one wins, the others get 409.

import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import type { ExceptionChange } from '../src/exceptions/changes.js'
import { openDatabase } from '../src/db/connect.js'
import { testApp } from './helpers/app.js'
import { allExceptions, byKey, completedRun, dayOne, registerBankSources, saveRecipe } from './helpers/exceptions.js'
import { testDatabase } from './helpers/pg.js'

const files = { 'bank.csv': dayOne.bank, 'invoices.csv': dayOne.invoices }

async function world(t: Test, database?: Awaited<ReturnType<typeof openDatabase>>) {
  const { app } = await testApp(t, { files, ...(database ? { database } : {}) })
  await registerBankSources(app)
  const recipeId = await saveRecipe(app)
  const run = await completedRun(app, { recipe_id: recipeId })
  const changes: ExceptionChange[] = []
  app.exceptions.setOnChange(async (_trx, change) => {
    changes.push(change)
  })
  return { app, run, recipeId, changes, e: byKey(await allExceptions(app)) }
}

const post = (app: FastifyInstance, url: string, payload: object) => app.inject({ method: 'POST', url, payload })

t.test('assign and comment, with history; a stale version is refused', async (t) => {
  const { app, e, changes } = await world(t)
  const id = e.T5.id
  const assigned = await post(app, `/api/exceptions/${id}/assign`, { assignee: 'ana', version: 1 })
  t.equal(assigned.statusCode, 200, assigned.body)
  t.match(assigned.json(), { assignee: 'ana', version: 2, status: 'open' })
  const stale = await post(app, `/api/exceptions/${id}/assign`, { assignee: 'bo', version: 1 })
  t.equal(stale.statusCode, 409)
  t.match(stale.json(), { error: 'version_conflict', message: /version 2/ })
  const comment = await post(app, `/api/exceptions/${id}/comments`, { text: 'asked the bank for the statement' })
  t.equal(comment.statusCode, 201)
  t.equal((await post(app, '/api/exceptions/999999/comments', { text: 'x' })).statusCode, 404)
  t.equal((await post(app, `/api/exceptions/${id}/assign`, { assignee: '' })).statusCode, 400)

  const detail = (await app.inject({ url: `/api/exceptions/${id}` })).json()
  t.match(detail.exception, { assignee: 'ana', version: 2 })
  t.same(
    detail.history.map((h: { action: string; actor: string; detail: unknown }) => [h.action, h.actor, h.detail]),
    [
      ['assign', 'bootstrap', { from: null, to: 'ana' }],
      ['comment', 'bootstrap', { text: 'asked the bank for the statement' }],
    ],
  )
  t.equal(detail.comments.length, 1)
  t.same(
    (await allExceptions(app, 'assignee=ana')).map((x) => x.record_key),
    ['T5'],
  )
  t.same(
    changes.map((c) => [c.action, c.entity, c.event]),
    [
      ['exception.assign', { type: 'exception', id: String(id) }, undefined],
      ['exception.comment', { type: 'exception', id: String(id) }, undefined],
    ],
    'assignments and comments are audited, and send no webhook',
  )
})

t.test('accept and write off with a reason; a resolved exception stays resolved', async (t) => {
  const { app, e, changes } = await world(t)
  const off = await post(app, `/api/exceptions/${e.I5.id}/write-off`, { reason: 'bank charge, booked to 6800' })
  t.equal(off.statusCode, 200, off.body)
  t.match(off.json(), {
    status: 'resolved',
    resolution: 'written_off',
    resolution_detail: { reason: 'bank charge, booked to 6800' },
    resolved_by: 'bootstrap',
    version: 2,
  })
  const again = await post(app, `/api/exceptions/${e.I5.id}/accept`, { reason: 'fine' })
  t.equal(again.statusCode, 409)
  t.match(again.json(), { error: 'exception_resolved', message: /written_off by bootstrap/ })
  t.equal((await post(app, `/api/exceptions/${e.T5.id}/accept`, {})).statusCode, 400, 'a reason is required')
  const accepted = await post(app, `/api/exceptions/${e.T5.id}/accept`, { reason: 'timing', version: 1 })
  t.match(accepted.json(), { resolution: 'accepted' })
  t.same(
    (await allExceptions(app, 'status=resolved&sort=created&order=asc')).map((x) => x.record_key),
    ['T5', 'I5'],
  )
  t.notOk(
    (await allExceptions(app)).some((x) => x.record_key === 'T5'),
    'no longer in the open queue',
  )
  t.same(
    changes.map((c) => [c.action, c.event?.type, c.event?.payload.ids]),
    [
      ['exception.write_off', 'exception.resolved', [e.I5.id]],
      ['exception.accept', 'exception.resolved', [e.T5.id]],
    ],
  )
})

t.test("a manual match passes the recipe's own amount check exactly, or books an adjustment", async (t) => {
  const { app, e, changes } = await world(t)
  // T3 500.00 against I3 450.00: the recipe allows 0.01
  const refused = await post(app, '/api/exceptions/match', { exception_ids: [e.T3.id, e.I3.id] })
  t.equal(refused.statusCode, 400)
  t.match(refused.json(), { error: 'amounts_disagree', message: /differ by 50.00/, suggestion: /adjustment/ })
  const short = await post(app, '/api/exceptions/match', {
    exception_ids: [e.T3.id, e.I3.id],
    adjustment: { amount: '49.98', reason: 'partial credit note' },
  })
  t.equal(short.statusCode, 400, '0.02 left after the adjustment is beyond 0.01')
  const matched = await post(app, '/api/exceptions/match', {
    exception_ids: [e.T3.id, e.I3.id],
    adjustment: { amount: '49.99', reason: 'credit note CN-7' },
    note: 'customer confirmed',
  })
  t.equal(matched.statusCode, 200, matched.body)
  const body = matched.json()
  t.match(body, {
    left_amount: '500.00',
    right_amount: '450.00',
    difference: '50.00',
    adjustment: { amount: '49.99', reason: 'credit note CN-7' },
    accepted_by: { pass: 'exact', checks: ['ABS(l.amount - r.total_amount) <= 0.01'] },
  })
  t.same(
    body.exceptions.map((x: { record_key: string; status: string; resolution: string }) => [
      x.record_key,
      x.status,
      x.resolution,
    ]),
    [
      ['T3', 'resolved', 'manual_match'],
      ['I3', 'resolved', 'manual_match'],
    ],
  )
  // the fee-variance pair, the fee booked as an adjustment
  const fee = await post(app, '/api/exceptions/match', {
    exception_ids: [e.T2.id, e.I2.id],
    adjustment: { amount: '3.00', reason: 'acquirer fee' },
    versions: { [e.T2.id]: 1, [e.I2.id]: 1 },
  })
  t.equal(fee.statusCode, 200, fee.body)
  t.match(fee.json().exceptions[0].resolution_detail, {
    left_keys: ['T2'],
    right_keys: ['I2'],
    difference: '3.00',
    adjustment: { amount: '3.00', reason: 'acquirer fee' },
    checked: true,
  })
  const twice = await post(app, '/api/exceptions/match', { exception_ids: [e.T2.id, e.I8.id] })
  t.equal(twice.statusCode, 409, 'T2 is matched already')
  t.equal((await allExceptions(app, 'reason=fee_variance')).length, 2, 'nothing changed: T8 and I8 stay open')
  for (const [ids, code] of [
    [[e.T4.id, e.T5.id], 'invalid_match'],
    [[e['T6,T7 ⇄ I6'].id, e.I4.id], 'invalid_match'],
  ] as const) {
    const res = await post(app, '/api/exceptions/match', { exception_ids: ids })
    t.equal(res.statusCode, 400)
    t.match(res.json(), { error: code })
  }
  t.same(
    changes.map((c) => [c.action, c.event?.type, c.event?.payload.ids]),
    [
      ['exception.match', 'exception.resolved', [e.T3.id, e.I3.id]],
      ['exception.match', 'exception.resolved', [e.T2.id, e.I2.id]],
    ],
  )
})

t.test('unmatch an automatic match: its records open again, once; an ambiguous one is settled', async (t) => {
  const { app, run, e, changes } = await world(t)
  const undo = await post(app, '/api/exceptions/unmatch', {
    run_id: run.id,
    match_id: 'm0000001',
    reason: 'wrong customer',
  })
  t.equal(undo.statusCode, 200, undo.body)
  t.same(
    undo
      .json()
      .exceptions.map((x: { record_key: string; side: string; reason: string; match_id: string }) => [
        x.record_key,
        x.side,
        x.reason,
        x.match_id,
      ]),
    [
      ['T1', 'left', 'unmatched_by_operator', 'm0000001'],
      ['I1', 'right', 'unmatched_by_operator', 'm0000001'],
    ],
  )
  const again = await post(app, '/api/exceptions/unmatch', { run_id: run.id, match_id: 'm0000001', reason: 'x' })
  t.equal(again.statusCode, 409)
  t.match(again.json(), { error: 'already_unmatched' })
  t.equal(
    (await post(app, '/api/exceptions/unmatch', { run_id: run.id, match_id: 'm0000009', reason: 'x' })).statusCode,
    404,
  )
  // the tie: its exception is settled, its three records open on their own
  const tie = await post(app, '/api/exceptions/unmatch', { run_id: run.id, match_id: 'm0000002', reason: 'not ours' })
  t.same(
    tie.json().exceptions.map((x: { record_key: string }) => x.record_key),
    ['T6', 'T7', 'I6'],
  )
  const settled = (await app.inject({ url: `/api/exceptions/${e['T6,T7 ⇄ I6'].id}` })).json().exception
  t.match(settled, { status: 'resolved', resolution: 'unmatched', resolution_detail: { match_id: 'm0000002' } })
  t.same(
    changes.map((c) => [c.action, c.event?.type]),
    [
      ['exception.unmatch', 'exception.created'],
      ['exception.unmatch', 'exception.created'],
      ['exception.unmatch', 'exception.created'],
      ['exception.unmatch', 'exception.created'],
      ['exception.unmatch', 'exception.created'],
      ['exception.unmatch', 'exception.resolved'],
    ],
    'one exception.created per record opened, one exception.resolved for the settled tie',
  )
  // the unmatched records can be matched by hand; their amounts were not stored, so not checked
  const opened = byKey(await allExceptions(app, 'reason=unmatched_by_operator'))
  const rematch = await post(app, '/api/exceptions/match', { exception_ids: [opened.T1.id, opened.I1.id] })
  t.equal(rematch.statusCode, 200, rematch.body)
  t.match(rematch.json(), { accepted_by: null, difference: null })
})

t.test('bulk actions are all or nothing, one seam call each', async (t) => {
  const { app, e, changes } = await world(t)
  const ids = [e.T4.id, e.I4.id]
  const done = await post(app, '/api/exceptions/bulk', { action: 'write_off', ids, reason: 'cut-off, next period' })
  t.equal(done.statusCode, 200, done.body)
  t.same(done.json(), { action: 'write_off', ids, count: 2 })
  const mixed = await post(app, '/api/exceptions/bulk', { action: 'accept', ids: [e.T5.id, e.T4.id], reason: 'x' })
  t.equal(mixed.statusCode, 409)
  t.match(mixed.json(), { error: 'exception_resolved', message: new RegExp(`${e.T4.id}`) })
  t.equal((await app.inject({ url: `/api/exceptions/${e.T5.id}` })).json().exception.status, 'open', 'T5 untouched')
  const missing = await post(app, '/api/exceptions/bulk', { action: 'assign', ids: [e.T5.id, 999999], assignee: 'x' })
  t.equal(missing.statusCode, 404)
  t.equal((await post(app, '/api/exceptions/bulk', { action: 'write_off', ids: [e.T5.id] })).statusCode, 400)
  const assigned = await post(app, '/api/exceptions/bulk', {
    action: 'assign',
    ids: [e.T5.id, e.I5.id],
    assignee: 'ops-team',
  })
  t.equal(assigned.statusCode, 200)
  t.same((await allExceptions(app, 'assignee=ops-team')).map((x) => x.record_key).sort(), ['I5', 'T5'])
  const commented = await post(app, '/api/exceptions/bulk', {
    action: 'comment',
    ids: [e.T4.id, e.T5.id],
    text: 'Q1 close',
  })
  t.equal(commented.statusCode, 200, 'comments go on resolved ones too')
  t.same(
    changes.map((c) => [c.action, c.event?.type ?? null, c.event?.payload.ids ?? null]),
    [
      ['exceptions.bulk_write_off', 'exception.resolved', ids],
      ['exceptions.bulk_assign', null, null],
      ['exceptions.bulk_comment', null, null],
    ],
  )
})

t.test('two operators resolving the same exception at once: one wins, the others get 409', async (t) => {
  const pg = await testDatabase(t)
  const url = new URL(pg.url)
  url.searchParams.set('options', `-c search_path=${pg.schema}`)
  const database = await openDatabase({ url: url.toString() })
  t.teardown(() => database.close())
  const { app, e } = await world(t, database)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  const send = (path: string, body: unknown) =>
    fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

  // eight requests in flight together, half writing off and half accepting the same exception
  const replies = await Promise.all(
    Array.from({ length: 8 }, (_, n) =>
      send(`/api/exceptions/${e.T5.id}/${n % 2 ? 'accept' : 'write-off'}`, { reason: `operator ${n}` }),
    ),
  )
  const statuses = replies.map((r) => r.status).sort()
  t.same(statuses, [200, 409, 409, 409, 409, 409, 409, 409], `on ${pg.kind} PostgreSQL`)
  const bodies = (await Promise.all(replies.map((r) => r.json()))) as { error?: string }[]
  t.ok(bodies.filter((b) => b.error).every((b) => b.error === 'exception_resolved'))
  const history = (await app.inject({ url: `/api/exceptions/${e.T5.id}` })).json().history
  t.equal(history.length, 1, 'one resolution recorded')

  // the same with versions: concurrent assignments of version 1, one lands
  const assigns = await Promise.all(
    Array.from({ length: 6 }, (_, n) => send(`/api/exceptions/${e.I5.id}/assign`, { assignee: `op${n}`, version: 1 })),
  )
  t.same(assigns.map((r) => r.status).sort(), [200, 409, 409, 409, 409, 409])
  // and two manual matches sharing a record
  const matches = await Promise.all([
    send('/api/exceptions/match', { exception_ids: [e.T8.id, e.I8.id], adjustment: { amount: '5.00', reason: 'fee' } }),
    send('/api/exceptions/match', { exception_ids: [e.I8.id, e.T8.id], adjustment: { amount: '5.00', reason: 'fee' } }),
  ])
  t.same(matches.map((r) => r.status).sort(), [200, 409])
})
