// A day of reconciliation operations, end to end (issue 20), on ../shared/datasets/acquirer-settlement
// with two real `concord serve` processes on one data folder:
//   day one, fired by a schedule → exceptions whose reasons match the run's evidence → a manual
//   match of a fee-variance pair with an adjustment → an unmatch of an automatic match → a
//   write-off whose webhook is pending when the service is killed → a new process delivers it →
//   day two (files this test writes), fired by the schedule, carries day one's open items and
//   matches one, closing its exception and linking both runs → the audit chain verifies and lists
//   every step → the receiver (loopback) processed every event exactly once.
// The dataset files are copied into the test's own data folder (day one's drop), never written.

import { copyFile, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { verifyDelivery } from '../src/webhooks/signature.js'
import { datasetsDir, datasetsSkip } from './helpers/app.js'
import { receiver } from './helpers/receiver.js'
import { call, type Serve, serve } from './helpers/serve.js'

interface Exception {
  id: number
  run_id: string
  last_run_id: string | null
  side: 'left' | 'right' | 'both'
  record_key: string
  candidate_key: string | null
  amount: string | null
  difference: string | null
  reason: string
  status: 'open' | 'resolved'
  resolution: string | null
  resolution_detail: Record<string, unknown> | null
  version: number
}

interface Unmatched {
  record_key: string
  closest_candidate: string | null
  failed: { pass: string; conjunct: string } | null
  reason: string
}

const WINDOW =
  "r.settlement_date BETWEEN CAST(l.occurred_at AS date) AND CAST(l.occurred_at AS date) + INTERVAL '4 days'"
const AMOUNT = 'ABS(l.amount - r.gross_amount) <= 0.05'
const recipe = {
  name: 'ledger-vs-acquirer',
  left: { source: 'ledger', key: ['ledger_tx_id'] },
  right: { source: 'settlement', key: ['acquirer_tx_id'] },
  passes: [
    {
      name: 'exact',
      pattern: '1:1',
      when: `l.order_id = r.order_id AND l.authorization_code = r.authorization_code AND ${AMOUNT} AND ${WINDOW}`,
    },
  ],
}

const cents = (s: string) => Math.round(Number(s) * 100)
const money = (c: number) =>
  `${c < 0 ? '-' : ''}${Math.floor(Math.abs(c) / 100)}.${String(Math.abs(c) % 100).padStart(2, '0')}`

t.test(
  'a day of operations: exceptions, manual work, a crash with a pending webhook, the next day carried, audited',
  { skip: datasetsSkip, timeout: 600_000 },
  async (t) => {
    const dataDir = t.testdir({})
    const source = join(datasetsDir, 'acquirer-settlement')
    await copyFile(join(source, 'ledger-midaz.csv'), join(dataDir, 'ledger.csv'))
    await copyFile(join(source, 'acquirer-settlement.json'), join(dataDir, 'settlement.json'))
    const env = {
      DATA_DIR: dataDir,
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_POLL_MS: '50',
      WEBHOOK_BACKOFF_MS: '100',
      WEBHOOK_BACKOFF_MAX_MS: '500',
      // a held attempt stays in flight until the process dies
      WEBHOOK_TIMEOUT_MS: '120000',
      // this test fires the schedule itself
      SCHEDULER_TICK_MS: '0',
    }
    let hold = false
    const hooks = await receiver(t, () => (hold ? 'hold' : 200))

    let api: Serve = await serve(t, env)
    const ok = async <T>(method: string, path: string, body?: unknown, status = [200, 201, 202]): Promise<T> => {
      const res = await call<T>(api.base, method, path, body)
      if (!status.includes(res.status)) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`)
      return res.body
    }
    const finished = async (id: string) => {
      for (const until = Date.now() + 300_000; Date.now() < until; await new Promise((r) => setTimeout(r, 100))) {
        const run = await ok<{ status: string; summary: Summary; error: unknown }>('GET', `/api/runs/${id}`)
        if (!['queued', 'running'].includes(run.status)) return run
      }
      throw new Error(`run ${id} did not finish`)
    }
    const exceptions = async (query: string): Promise<Exception[]> => {
      const out: Exception[] = []
      let cursor: string | null = null
      do {
        const page: { items: Exception[]; next_cursor: string | null } = await ok(
          'GET',
          `/api/exceptions?${query}&limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        )
        out.push(...page.items)
        cursor = page.next_cursor
      } while (cursor)
      return out
    }

    // set-up: two sources (today's drop), the recipe, a subscription to every event, a daily schedule
    await ok('POST', '/api/sources', { alias: 'ledger', type: 'csv', path: 'ledger.csv' })
    await ok('POST', '/api/sources', { alias: 'settlement', type: 'json', path: 'settlement.json' })
    const saved = await ok<{ id: string }>('POST', '/api/recipes', recipe)
    const sub = await ok<{ id: string; secret: string }>('POST', '/api/webhooks', {
      url: hooks.url,
      events: ['run.completed', 'run.failed', 'exception.created', 'exception.resolved'],
    })
    const schedule = await ok<{ id: string; carry_open_items: boolean; next_run_at: string }>(
      'POST',
      '/api/schedules',
      { recipe_id: saved.id, name: 'daily settlement', cron: '0 6 * * *' },
    )
    t.equal(schedule.carry_open_items, true, 'a schedule carries open items')
    t.ok(Date.parse(schedule.next_run_at) > Date.now(), 'its next occurrence is stored')

    // day one
    const day1 = (await ok<{ id: string }>('POST', `/api/schedules/${schedule.id}/fire`)).id
    const run1 = await finished(day1)
    t.equal(run1.status, 'completed', JSON.stringify(run1.error))
    const open1 = await exceptions(`run_id=${day1}`)
    t.equal(
      open1.filter((e) => e.side !== 'both').length,
      run1.summary.left.unmatched + run1.summary.right.unmatched,
      'one exception per unmatched record',
    )
    t.equal(open1.filter((e) => e.side === 'both').length, run1.summary.ambiguous, 'one per ambiguous match')

    // each exception's reason is what the run's evidence for its record says
    const evidence = new Map<string, Unmatched>()
    for (const side of ['left', 'right'] as const) {
      const page = await ok<{ items: Unmatched[] }>('GET', `/api/runs/${day1}/unmatched/${side}?limit=1000`)
      for (const u of page.items) evidence.set(`${side}:${u.record_key}`, u)
    }
    const disagree: string[] = []
    for (const e of open1.filter((x) => x.side !== 'both')) {
      const u = evidence.get(`${e.side}:${e.record_key}`)!
      const conjunct = u.closest_candidate ? (u.failed?.conjunct ?? '') : ''
      // a candidate another record took: this one's counterpart is missing (a chargeback beside its
      // sale) or it is that record's double
      const taken = u.reason.includes('matched elsewhere')
      const expected = !u.closest_candidate
        ? ['missing_counterpart']
        : taken
          ? ['missing_counterpart', 'duplicate']
          : conjunct === AMOUNT
            ? ['amount_outside_tolerance', 'fee_variance']
            : conjunct === WINDOW
              ? ['date_outside_window']
              : ['duplicate', 'other']
      if (!expected.includes(e.reason)) disagree.push(`${e.side} ${e.record_key}: ${e.reason}, evidence ${conjunct}`)
      if (e.candidate_key !== u.closest_candidate) disagree.push(`${e.record_key}: candidate ${e.candidate_key}`)
    }
    t.same(disagree, [], 'every reason follows from the evidence')
    const reasons = new Set(open1.map((e) => e.reason))
    for (const r of ['missing_counterpart', 'fee_variance', 'date_outside_window', 'ambiguous'])
      t.ok(reasons.has(r), `day one has ${r} exceptions`)

    // a fee variance matched by hand, the difference booked as an adjustment
    const fee = open1.find((e) => e.reason === 'fee_variance' && e.side === 'left')!
    const partner = open1.find((e) => e.side === 'right' && e.record_key === fee.candidate_key)!
    t.ok(partner, `${fee.record_key}'s candidate ${fee.candidate_key} is an open exception too`)
    const difference = cents(fee.amount!) - cents(partner.amount!)
    const refused = await call(api.base, 'POST', '/api/exceptions/match', { exception_ids: [fee.id, partner.id] })
    t.equal(refused.status, 400, 'without an adjustment the amounts disagree')
    const matched = await ok<{ exceptions: Exception[] }>('POST', '/api/exceptions/match', {
      exception_ids: [fee.id, partner.id],
      adjustment: { amount: money(difference), reason: 'acquirer fee' },
    })
    t.same(
      matched.exceptions.map((e) => [e.status, e.resolution]),
      [
        ['resolved', 'manual_match'],
        ['resolved', 'manual_match'],
      ],
    )

    // an automatic match undone: its two records come back as open exceptions
    const firstMatch = (
      await ok<{ items: { match_id: string; left_keys: string[]; right_keys: string[] }[] }>(
        'GET',
        `/api/runs/${day1}/matches?limit=1`,
      )
    ).items[0]
    const unmatched = await ok<{ exceptions: Exception[] }>('POST', '/api/exceptions/unmatch', {
      run_id: day1,
      match_id: firstMatch.match_id,
      reason: 'wrong order',
    })
    t.same(
      unmatched.exceptions.map((e) => [e.record_key, e.reason, e.status]).sort(),
      [
        [firstMatch.left_keys[0], 'unmatched_by_operator', 'open'],
        [firstMatch.right_keys[0], 'unmatched_by_operator', 'open'],
      ].sort(),
    )
    const twice = await call(api.base, 'POST', '/api/exceptions/unmatch', {
      run_id: day1,
      match_id: firstMatch.match_id,
      reason: 'again',
    })
    t.equal(twice.status, 409, 'a match is unmatched once')

    // every event so far delivered; then the receiver stops answering, and a write-off's event is
    // in flight when the service is killed
    const drained = async () => {
      for (const until = Date.now() + 60_000; Date.now() < until; await new Promise((r) => setTimeout(r, 100))) {
        const log = await ok<{ deliveries: { status: string }[] }>('GET', `/api/webhooks/${sub.id}/deliveries`)
        if (log.deliveries.every((d) => d.status === 'delivered')) return log.deliveries.length
      }
      throw new Error('deliveries did not drain')
    }
    const before = await drained()
    hold = true
    const seen = hooks.received.length
    const ledgerOnly = open1.find((e) => e.reason === 'missing_counterpart' && e.side === 'left')!
    await ok('POST', `/api/exceptions/${ledgerOnly.id}/write-off`, { reason: 'reversed in the ledger' })
    await hooks.waitFor(seen + 1)
    const pending = hooks.received[seen]
    t.equal(pending.event, 'exception.resolved')
    api.child.kill('SIGKILL')
    t.match(await api.exited, { signal: 'SIGKILL' })

    hold = false
    api = await serve(t, env)
    for (const until = Date.now() + 60_000; !hooks.processed.has(pending.id) && Date.now() < until;)
      await new Promise((r) => setTimeout(r, 50))
    t.ok(hooks.processed.has(pending.id), 'the new process delivered the pending event')
    t.ok(hooks.received.filter((r) => r.id === pending.id).length >= 2, 'sent again under the same delivery id')

    // day two: today's drop holds ledger entries for three settlements day one could not match, and
    // two new sales settled the same day
    const settlements = JSON.parse(await readFile(join(source, 'acquirer-settlement.json'), 'utf8')) as Record<
      string,
      string
    >[]
    const acquirerOnly = open1.filter((e) => e.side === 'right' && e.reason === 'missing_counterpart').slice(0, 3)
    const late = acquirerOnly.map((e) => settlements.find((s) => s.acquirer_tx_id === e.record_key)!)
    const dayBefore = (d: string) => new Date(Date.parse(d) - 86_400_000).toISOString().slice(0, 10)
    const ledgerHeader =
      'ledger_tx_id,order_id,amount,currency,occurred_at,description,merchant_id,authorization_code,scenario'
    const ledgerLine = (id: string, s: Record<string, string>, day: string) =>
      [
        id,
        s.order_id,
        s.gross_amount,
        s.currency,
        `${day}T10:00:00Z`,
        'Card sale',
        s.merchant_id,
        s.authorization_code,
        'day_two',
      ].join(',')
    const fresh = [1, 2].map((n) => ({
      acquirer_tx_id: `ACQ-D2-${n}`,
      order_id: `ORD-D2-${n}`,
      gross_amount: `${100 * n}.00`,
      net_amount: `${97 * n}.00`,
      fee_amount: `${3 * n}.00`,
      currency: 'BRL',
      settlement_date: '2026-03-03',
      authorization_code: `AUTH-D2-${n}`,
      settlement_id: 'SET-D2',
      merchant_id: 'MRC-D2',
      scenario: 'day_two',
    }))
    await writeFile(
      join(dataDir, 'ledger.csv'),
      [
        ledgerHeader,
        ...late.map((s, k) => ledgerLine(`LED-D2-L${k}`, s, dayBefore(s.settlement_date))),
        ...fresh.map((s, k) => ledgerLine(`LED-D2-F${k}`, s, '2026-03-02')),
      ].join('\n') + '\n',
    )
    await writeFile(join(dataDir, 'settlement.json'), JSON.stringify(fresh))
    const day2 = (await ok<{ id: string }>('POST', `/api/schedules/${schedule.id}/fire`)).id
    const run2 = await finished(day2)
    t.equal(run2.status, 'completed', JSON.stringify(run2.error))
    t.equal(run2.summary.matches, 5, 'the three late ledger entries and the two new sales match')

    for (const e of acquirerOnly) {
      const closed = (await ok<{ exception: Exception }>('GET', `/api/exceptions/${e.id}`)).exception
      t.match(
        closed,
        { status: 'resolved', resolution: 'matched_by_later_run', resolution_detail: { run_id: day2 } },
        `${e.record_key}: closed by day two`,
      )
      t.match(String(closed.resolution_detail?.match_id), /^m\d{7}$/, 'with the match that closed it')
      t.equal(closed.run_id, day1, 'still the exception day one opened')
    }
    // what day two still cannot match is the same open item, seen again
    const still = (await exceptions(`run_id=${day1}`)).filter((e) => e.status === 'open')
    t.ok(still.length > 0)
    t.ok(
      still
        .filter((e) => e.side !== 'both' && e.reason !== 'unmatched_by_operator')
        .every((e) => e.last_run_id === day2),
      'day one’s open records were all seen by day two (those an unmatch opened have no stored record to carry)',
    )
    t.same(
      (await exceptions(`run_id=${day2}`)).filter((e) => e.side !== 'both'),
      [],
      'day two opened no duplicate of a carried item',
    )

    // the audit chain verifies and names every step
    const verified = await ok<{ ok: boolean; checked: number }>('GET', '/api/audit/verify')
    t.match(verified, { ok: true })
    const actions: string[] = []
    for (let cursor: string | null = null, first = true; first || cursor; first = false) {
      const page: { entries: { action: string }[]; next_cursor: string | null } = await ok(
        'GET',
        `/api/audit?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      )
      actions.push(...page.entries.map((e) => e.action))
      cursor = page.next_cursor
    }
    t.equal(verified.checked, actions.length, 'verification walked every entry')
    for (const step of [
      'source.created',
      'recipe.created',
      'webhook.created',
      'schedule.create',
      'schedule.fire',
      'run.started',
      'run.completed',
      'exceptions.create_for_run',
      'exception.match',
      'exception.unmatch',
      'exception.write_off',
      'exceptions.seen_by_run',
      'exceptions.close_by_run',
    ])
      t.ok(actions.includes(step), `the audit trail has ${step}`)
    t.equal(actions.filter((a) => a === 'run.completed').length, 2, 'both days completed')

    // the receiver processed every delivery the outbox holds, each once, every one signed
    const total = await drained()
    t.ok(total > before, 'day two and the write-off added deliveries')
    const log = await ok<{ deliveries: { id: string; event: string }[] }>('GET', `/api/webhooks/${sub.id}/deliveries`)
    t.same(
      [...hooks.processed.keys()].sort(),
      log.deliveries.map((d) => d.id).sort(),
      'every delivery processed, none twice',
    )
    const answered = new Map<string, number>()
    for (const r of hooks.received.filter((x) => hooks.processed.get(x.id) === x))
      answered.set(r.id, (answered.get(r.id) ?? 0) + 1)
    t.ok([...answered.values()].every((n) => n === 1))
    const events = [...hooks.processed.values()].map((r) => r.event)
    t.equal(events.filter((e) => e === 'run.completed').length, 2)
    t.ok(events.filter((e) => e === 'exception.created').length >= 2, 'day one’s exceptions, the unmatch’s')
    t.ok(events.filter((e) => e === 'exception.resolved').length >= 3, 'the manual match, the write-off, day two')
    for (const r of hooks.processed.values())
      t.match(verifyDelivery({ secret: sub.secret, body: r.body, timestamp: r.timestamp, signature: r.signature }), {
        ok: true,
      })
  },
)

interface Summary {
  matches: number
  ambiguous: number
  left: { unmatched: number }
  right: { unmatched: number }
}
