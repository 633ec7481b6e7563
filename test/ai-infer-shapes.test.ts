// infer_rules, deterministic, on what an expert reads from a few confirmed pairs: the shape
// (1:N, N:1, whichever side is left), how amounts relate (equal, a fixed fee, a percentage, close),
// which amount column sums to the other side (net, not gross), and free text that carries the
// link where no key does (a probabilistic pass). Each rule is assembled by build_recipe and run.

import t from 'tap'
import { fitAmounts } from '../src/ai/amount-fit.js'
import { dateWindow } from '../src/ai/rules.js'
import { AMOUNT_SCALE } from '../src/ai/links.js'
import type { ColumnT, MappingT, RowT } from '../src/ai/schemas.js'
import { buildRecipe } from '../src/ai/tools/build_recipe.js'
import { inferRules } from '../src/ai/tools/infer_rules.js'
import { tableFromRows } from '../src/engine/load/json.js'
import type { Recipe } from '../src/recipes/schema.js'
import { evidence, partitionProblems } from './helpers/engine.js'
import { unkeyedTransfers } from './helpers/unkeyed.js'
import { prng } from '../src/engine/data/prng.js'

const units = (x: string) => BigInt(Math.round(Number(x) * 100)) * 10n ** BigInt(AMOUNT_SCALE - 2)
const points = (xs: [string, string][]) => xs.map(([x, y]) => ({ x: units(x), y: units(y) }))
const map = (pairs: [string, string][]): MappingT[] =>
  pairs.map(([field_a, field_b]) => ({ field_a, field_b, confidence: 0.9, reason: 'test' }))

t.test('amounts: equal, a fixed offset, a percentage and a fixed part, or only close', async (t) => {
  t.match(
    fitAmounts(
      points([
        ['10.00', '10.00'],
        ['7.50', '7.50'],
      ]),
      2,
    ),
    { kind: 'equal' },
  )
  const fee = fitAmounts(
    points([
      ['100.00', '99.51'],
      ['20.00', '19.51'],
      ['3.10', '2.61'],
    ]),
    2,
  )
  t.match(fee, { kind: 'offset', factor: '1', tolerance: 0n })
  t.equal(fee.offset, -units('0.49'))
  // a card fee of 2.9% + 0.30, rounded to the cent on each record
  const card = (x: number) => (Math.round((x * 0.971 - 0.3) * 100) / 100).toFixed(2)
  const pct = fitAmounts(points(['100.00', '37.20', '1250.00', '9.99'].map((x) => [x, card(Number(x))])), 2)
  t.match(pct, { kind: 'proportional', factor: '0.971' })
  t.equal(pct.offset, -units('0.30'))
  // two points always fit a line: not evidence of a percentage
  t.equal(
    fitAmounts(
      points([
        ['100.00', '96.80'],
        ['37.20', '35.82'],
      ]),
      2,
    ).kind,
    'close',
  )
  const fx = fitAmounts(
    points([
      ['100.00', '103.10'],
      ['50.00', '48.20'],
      ['80.00', '80.00'],
    ]),
    2,
  )
  t.match(fx, { kind: 'close', offset: 0n })
  t.equal(fx.tolerance, units('3.10'))
})

// captures paid out per seller: a payout is the net amounts of 1–4 captures (taken over five
// days) less 0.49, paid one to three days after the last
function payouts(seed = 3) {
  const rand = prng(seed)
  const captures: RowT[] = []
  const paid: RowT[] = []
  const truth = new Set<string>()
  const sellers = ['S-1', 'S-2', 'S-3', 'S-4', 'S-5', 'S-6']
  for (let p = 0; p < 40; p++) {
    const seller = sellers[p % sellers.length]
    const n = 1 + Math.floor(rand() * 4)
    let net = 0
    const day = 1 + Math.floor(rand() * 20)
    let last = day
    for (let k = 0; k < n; k++) {
      const gross = 500 + Math.floor(rand() * 40_000)
      const on = day + Math.floor(rand() * 5)
      last = Math.max(last, on)
      const fee = Math.round(gross * 0.029) + 30
      const id = `CAP-${String(captures.length + 1).padStart(3, '0')}`
      captures.push({
        capture_id: id,
        seller_id: seller,
        captured_at: `2025-03-${String(on).padStart(2, '0')}T10:00:00Z`,
        gross_amount: (gross / 100).toFixed(2),
        net_amount: ((gross - fee) / 100).toFixed(2),
      })
      net += gross - fee
      truth.add(`${id}|PO-${p}`)
    }
    paid.push({
      payout_id: `PO-${p}`,
      seller_id: seller,
      payout_date: `2025-03-${String(last + 1 + Math.floor(rand() * 3)).padStart(2, '0')}`,
      amount: ((net - 49) / 100).toFixed(2),
    })
  }
  return { captures, paid, truth }
}
const captureSchema: ColumnT[] = [
  { name: 'capture_id', type: 'string' },
  { name: 'seller_id', type: 'string' },
  { name: 'captured_at', type: 'timestamp' },
  { name: 'gross_amount', type: 'decimal', scale: 2 },
  { name: 'net_amount', type: 'decimal', scale: 2 },
]
const payoutSchema: ColumnT[] = [
  { name: 'payout_id', type: 'string' },
  { name: 'seller_id', type: 'string' },
  { name: 'payout_date', type: 'date' },
  { name: 'amount', type: 'decimal', scale: 2 },
]

/** Confirmed: every capture of the payouts named, as a user confirms groups. */
function confirmedGroups(captures: RowT[], paid: RowT[], truth: Set<string>, payoutsTaken: number[], flipped: boolean) {
  const pairs: { left: number; right: number }[] = []
  for (const p of payoutsTaken)
    captures.forEach((c, i) => {
      if (!truth.has(`${c.capture_id}|${paid[p].payout_id}`)) return
      pairs.push(flipped ? { left: p, right: i } : { left: i, right: p })
    })
  return pairs
}

function runInferred(
  out: ReturnType<typeof inferRules.deterministic>,
  left: RowT[],
  right: RowT[],
): ReturnType<typeof evidence> {
  const { recipe } = buildRecipe.deterministic({
    rules: out.rules,
    sources: { left: 'l', right: 'r' },
    primary_keys: out.primary_keys,
    pattern: out.pattern,
  })
  return evidence(recipe as unknown as Recipe, tableFromRows(left as never), tableFromRows(right as never))
}

const groupLinks = (e: ReturnType<typeof evidence>, flipped: boolean) => {
  const links: string[] = []
  for (const m of e.matches) {
    if (m.ambiguous) continue
    const [cs, ps] = flipped ? [m.right_keys, m.left_keys] : [m.left_keys, m.right_keys]
    for (const c of cs) for (const p of ps) links.push(`${c}|${p}`)
  }
  return links
}

t.test('confirmed groups sharing a payout are N:1; their net amounts less a fixed fee are the payout', async (t) => {
  const { captures, paid, truth } = payouts()
  // mapped as a name-matcher would: gross_amount ↔ amount (the wrong column, on purpose)
  const mappings = map([
    ['seller_id', 'seller_id'],
    ['gross_amount', 'amount'],
    ['captured_at', 'payout_date'],
  ])
  for (const flipped of [false, true]) {
    const [left, right] = flipped ? [paid, captures] : [captures, paid]
    const out = inferRules.deterministic({
      schema_a: flipped ? payoutSchema : captureSchema,
      schema_b: flipped ? captureSchema : payoutSchema,
      sample_a: left,
      sample_b: right,
      mappings: flipped ? mappings.map((m) => ({ ...m, field_a: m.field_b, field_b: m.field_a })) : mappings,
      confirmed_pairs: confirmedGroups(captures, paid, truth, [0, 1, 2], flipped),
    })
    const [c, p] = flipped ? ['r', 'l'] : ['l', 'r']
    t.equal(out.pattern, flipped ? '1:N' : 'N:1', 'the shape, from pairs sharing a payout')
    const group = out.rules.find((r) => r.aggregate)!
    t.same(
      { ...group.aggregate, max_group: undefined },
      { sum: `SUM(${c}.net_amount) - 0.49`, equals: `${p}.amount`, tolerance: '0.01', max_group: undefined },
      'net, not the mapped gross; the fee an equation, not a tolerance',
    )
    t.match(group.sql, 'l.seller_id = r.seller_id')
    t.match(group.sql, /BETWEEN/, 'the members fall in a date window')
    t.match(group.description, /less a fixed 0\.49/)
    const e = runInferred(out, left, right)
    t.same(partitionProblems(e, left.length, right.length), [])
    const found = groupLinks(e, flipped)
    const right_ = found.filter((l) => truth.has(l)).length
    t.equal(right_, found.length, 'no wrong link')
    t.ok(right_ >= 0.95 * truth.size, `${right_} of ${truth.size} links`)
  }
})

t.test('payouts of one capture each, confirmed: groups suspected from the sizes of the amounts', async (t) => {
  const { captures, paid, truth } = payouts()
  const lonePayouts = paid
    .map((p, k) => [p, k] as const)
    .filter(([p]) => captures.filter((c) => truth.has(`${c.capture_id}|${p.payout_id}`)).length === 1)
    .slice(0, 3)
    .map(([, k]) => k)
  t.equal(lonePayouts.length, 3)
  const out = inferRules.deterministic({
    schema_a: captureSchema,
    schema_b: payoutSchema,
    sample_a: captures,
    sample_b: paid,
    mappings: map([
      ['seller_id', 'seller_id'],
      ['captured_at', 'payout_date'],
    ]),
    confirmed_pairs: confirmedGroups(captures, paid, truth, lonePayouts, false),
  })
  t.match(out.rules[0].sql, /r\.amount = l\.net_amount - 0\.49/, 'the 1:1 rule states the fee')
  const group = out.rules.find((r) => r.pattern === 'N:1')
  t.ok(group, 'and a group pass after it')
  t.match(group?.description, /confirm a group to be sure/)
  const e = runInferred(out, captures, paid)
  const found = groupLinks(e, false)
  t.equal(found.filter((l) => truth.has(l)).length, found.length)
  t.ok(found.length >= 0.9 * truth.size, `${found.length} of ${truth.size}`)
})

t.test('equal amounts on one-capture payouts are not groups', async (t) => {
  // the same sizes on both sides: nothing suggests sums
  const a = [0, 1, 2, 3].map((k) => ({ id: `A${k}`, who: `C${k}`, amount: `${10 + k}.00` }))
  const b = [0, 1, 2, 3].map((k) => ({ ref: `B${k}`, who: `C${k}`, amount: `${10 + k}.00` }))
  const schema = (key: string): ColumnT[] => [
    { name: key, type: 'string' },
    { name: 'who', type: 'string' },
    { name: 'amount', type: 'decimal', scale: 2 },
  ]
  const out = inferRules.deterministic({
    schema_a: schema('id'),
    schema_b: schema('ref'),
    sample_a: a,
    sample_b: b,
    mappings: map([
      ['who', 'who'],
      ['amount', 'amount'],
    ]),
    confirmed_pairs: [0, 1, 2].map((k) => ({ left: k, right: k })),
  })
  t.equal(out.pattern, '1:1')
  t.notOk(
    out.rules.some((r) => r.aggregate),
    'no group rule',
  )
})

t.test('memos that name the payer, no key: a probabilistic pass, its weights learned', async (t) => {
  const data = unkeyedTransfers(300, 40)
  const schemaA: ColumnT[] = [
    { name: 'sent_id', type: 'string' },
    { name: 'sent_date', type: 'date' },
    { name: 'amount', type: 'decimal', scale: 2 },
    { name: 'memo', type: 'string' },
  ]
  const schemaB: ColumnT[] = [
    { name: 'received_id', type: 'string' },
    { name: 'booking_date', type: 'date' },
    { name: 'amount', type: 'decimal', scale: 2 },
    { name: 'memo', type: 'string' },
  ]
  // the first five sent transfers with a partner, their partners looked up
  const sampleA = data.sent.slice(0, 100)
  const sampleB = data.received.slice(0, 100)
  const confirmed: { left: number; right: number }[] = []
  for (let i = 0; confirmed.length < 5; i++) {
    const partner = data.received.findIndex((r) => data.truth.has(`${sampleA[i].sent_id}|${r.received_id}`))
    if (partner < 0) continue
    let j = sampleB.indexOf(data.received[partner])
    if (j < 0) j = sampleB.push(data.received[partner]) - 1
    confirmed.push({ left: i, right: j })
  }
  const out = inferRules.deterministic({
    schema_a: schemaA,
    schema_b: schemaB,
    sample_a: sampleA,
    sample_b: sampleB,
    mappings: map([
      ['amount', 'amount'],
      ['sent_date', 'booking_date'],
      ['memo', 'memo'],
    ]),
    confirmed_pairs: confirmed,
  })
  t.equal(out.rules.length, 1)
  const rule = out.rules[0]
  t.equal(rule.sql, '', 'no hard condition')
  t.same(rule.block?.[0], 'shares_token(l.memo, r.memo)')
  t.match(rule.block?.[1], /ABS\(l\.amount - r\.amount\) <= 0\.1 \* ABS\(l\.amount\) AND r\.booking_date BETWEEN/)
  t.same(
    rule.compare?.map((c) => c.name),
    ['memo', 'amount', 'lag'],
  )
  t.equal(rule.train?.confirmed.length, 5, 'the confirmed pairs anchor the training')
  const e = runInferred(out, data.sent, data.received)
  let right = 0
  let wrong = 0
  for (const m of e.matches) {
    if (m.ambiguous) continue
    if (data.truth.has(`${m.left_keys[0]}|${m.right_keys[0]}`)) right++
    else wrong++
  }
  t.comment(`generated transfers via infer_rules: ${right} right, ${wrong} wrong of ${data.truth.size}`)
  t.ok(right / (right + wrong) >= 0.98)
  t.ok(right / data.truth.size >= 0.95)
  // the memo mapped to nothing (names never repeat exactly on the other side): found all the same
  const renamed = inferRules.deterministic({
    schema_a: schemaA.map((c) => (c.name === 'memo' ? { ...c, name: 'details' } : c)),
    schema_b: schemaB.map((c) => (c.name === 'memo' ? { ...c, name: 'remittance' } : c)),
    sample_a: sampleA.map(({ memo, ...r }) => ({ ...r, details: memo })),
    sample_b: sampleB.map(({ memo, ...r }) => ({ ...r, remittance: memo })),
    mappings: map([
      ['amount', 'amount'],
      ['sent_date', 'booking_date'],
    ]),
    confirmed_pairs: confirmed,
  })
  t.same(renamed.rules[0]?.block?.[0], 'shares_token(l.details, r.remittance)')
  // memos that do not tell partners apart are no evidence: the same filler everywhere
  const bland = inferRules.deterministic({
    schema_a: schemaA,
    schema_b: schemaB,
    sample_a: sampleA.map((r) => ({ ...r, memo: 'TRANSFER' })),
    sample_b: sampleB.map((r) => ({ ...r, memo: 'CREDIT TRANSFER' })),
    mappings: map([
      ['amount', 'amount'],
      ['sent_date', 'booking_date'],
      ['memo', 'memo'],
    ]),
    confirmed_pairs: confirmed,
  })
  t.notOk(
    bland.rules.some((r) => r.compare),
    'no probabilistic pass on memos that say nothing',
  )
})

t.test(
  'keys some records lack: each further key its own pass, for the records the keys before it left blank',
  async (t) => {
    const rand = prng(11)
    const bank: RowT[] = []
    const ledger: RowT[] = []
    const truth = new Set<string>()
    for (let k = 0; k < 200; k++) {
      const amount = (100 + Math.floor(rand() * 100_000)) / 100
      const day = 1 + Math.floor(rand() * 25)
      const e2e = rand() < 0.2 ? null : `E2E${1000 + k}`
      // a reference on every record the end-to-end id is missing from, on most others
      const reference = e2e !== null && rand() < 0.3 ? null : `RF${5000 + k}`
      bank.push({
        entry_id: `B${k}`,
        end_to_end_id: e2e,
        reference,
        amount: amount.toFixed(2),
        booked: `2025-05-${String(day).padStart(2, '0')}`,
      })
      ledger.push({
        tx_id: `L${k}`,
        end_to_end_id: e2e,
        reference,
        amount: amount.toFixed(2),
        value_date: `2025-05-${String(day + 1).padStart(2, '0')}`,
      })
      truth.add(`B${k}|L${k}`)
    }
    ledger.reverse()
    const schema = (key: string, date: string): ColumnT[] => [
      { name: key, type: 'string' },
      { name: 'end_to_end_id', type: 'string' },
      { name: 'reference', type: 'string' },
      { name: 'amount', type: 'decimal', scale: 2 },
      { name: date, type: 'date' },
    ]
    const out = inferRules.deterministic({
      schema_a: schema('entry_id', 'booked'),
      schema_b: schema('tx_id', 'value_date'),
      sample_a: bank.slice(0, 100),
      sample_b: ledger,
      mappings: map([
        ['end_to_end_id', 'end_to_end_id'],
        ['reference', 'reference'],
        ['amount', 'amount'],
        ['booked', 'value_date'],
      ]),
      // the first five bank lines, as a user confirms them
      confirmed_pairs: [0, 1, 2, 3, 4].map((i) => ({ left: i, right: ledger.findIndex((r) => r.tx_id === `L${i}`) })),
    })
    const sqls = out.rules.map((r) => r.sql)
    const blank = sqls.filter((s) => / IS NULL OR /.test(s))
    t.ok(blank.length >= 1, `a fallback pass for blank keys: ${sqls.join(' | ')}`)
    t.ok(
      sqls.every((s) => !/BETWEEN r\.value_date AND r\.value_date|INTERVAL '0 days'/.test(s)),
      'a one-day booking lag is a window, not 0..0',
    )
    const e = runInferred(out, bank, ledger)
    t.same(partitionProblems(e, bank.length, ledger.length), [])
    const found = e.matches.filter((m) => !m.ambiguous).map((m) => `${m.left_keys[0]}|${m.right_keys[0]}`)
    t.equal(found.filter((x) => truth.has(x)).length, found.length, 'no wrong match')
    t.equal(found.length, truth.size, 'every line matched: by one key or the next')

    // five confirmed lines that carry both keys: both are identifiers, and the blanks the sample
    // shows still get their fallback
    const both = bank
      .slice(0, 100)
      .map((r, i) => [r, i] as const)
      .filter(([r]) => r.end_to_end_id !== null && r.reference !== null)
      .slice(0, 5)
    const out2 = inferRules.deterministic({
      schema_a: schema('entry_id', 'booked'),
      schema_b: schema('tx_id', 'value_date'),
      sample_a: bank.slice(0, 100),
      sample_b: ledger,
      mappings: map([
        ['end_to_end_id', 'end_to_end_id'],
        ['reference', 'reference'],
        ['amount', 'amount'],
        ['booked', 'value_date'],
      ]),
      confirmed_pairs: both.map(([r, i]) => ({
        left: i,
        right: ledger.findIndex((x) => x.tx_id === `L${String(r.entry_id).slice(1)}`),
      })),
    })
    t.equal(out2.rules[0].name, 'identifiers')
    t.ok(
      out2.rules.some((r) => /IS NULL OR/.test(r.sql)),
      out2.rules.map((r) => r.sql).join(' | '),
    )
    const e2 = runInferred(out2, bank, ledger)
    const found2 = e2.matches.filter((m) => !m.ambiguous).map((m) => `${m.left_keys[0]}|${m.right_keys[0]}`)
    t.equal(found2.filter((x) => truth.has(x)).length, truth.size, 'every line matched, none wrongly')
    t.equal(found2.length, truth.size)
  },
)

t.test('infer_rules says what it is unsure of and which pair would settle it', async (t) => {
  const { captures, paid, truth } = payouts()
  const mappings = map([
    ['seller_id', 'seller_id'],
    ['captured_at', 'payout_date'],
  ])
  const input = (payoutsTaken: number[]) => ({
    schema_a: captureSchema,
    schema_b: payoutSchema,
    sample_a: captures,
    sample_b: paid,
    mappings,
    confirmed_pairs: confirmedGroups(captures, paid, truth, payoutsTaken, false),
  })
  const lone = paid
    .map((p, k) => [p, k] as const)
    .filter(([p]) => captures.filter((c) => truth.has(`${c.capture_id}|${p.payout_id}`)).length === 1)
    .map(([, k]) => k)
  const several = paid
    .map((p, k) => [p, k] as const)
    .filter(([p]) => captures.filter((c) => truth.has(`${c.capture_id}|${p.payout_id}`)).length > 1)
    .map(([, k]) => k)
  t.match(inferRules.deterministic(input(lone.slice(0, 3))).questions, [{ ask: 'group' }], 'lone pairs, sums suspected')
  t.match(inferRules.deterministic(input(several.slice(0, 1))).questions, [{ ask: 'group' }], 'one group only')
  t.same(inferRules.deterministic(input(several.slice(0, 3))).questions, [], 'three groups: nothing to ask')
  t.match(inferRules.deterministic(input(lone.slice(0, 1))).questions, [{ ask: 'more_pairs' }])
  // the evidence the model is given: the same fit the deterministic rule rests on
  const evidence = inferRules.evidence!(input(several.slice(0, 3))) as {
    observations: { shape: { pattern: string }; amounts: unknown }
  }
  t.equal(evidence.observations.shape.pattern, 'N:1')
  t.match(evidence.observations.amounts, {
    explained_by: 'l.net_amount',
    explains: 'r.amount',
    kind: 'offset',
    offset: '-0.49',
    sums: true,
  })
})

t.test('date windows: a margin of spread / (n − 1), one side of zero only when the lags were', async (t) => {
  t.same(dateWindow([0, 0, 0, 0, 0]), [-1, 1], 'same-day pairs: a day of booking lag either way')
  t.same(dateWindow([1, 1, 2]), [0, 3])
  t.same(dateWindow([2, 6]), [0, 10], 'two lags: the whole spread again on each side')
  t.same(dateWindow([-3, -1]), [-5, 0])
  t.same(dateWindow([-1, 2, 0, 1, 0]), [-2, 3])
})

t.test('pairs linking several records on both sides are N:M: sums against sums', async (t) => {
  // each customer's invoices of a month, settled by payments that each cover parts of several
  const rand = prng(5)
  const invoices: RowT[] = []
  const payments: RowT[] = []
  const truth = new Map<string, string>()
  for (let c = 0; c < 30; c++) {
    const customer = `K${c}`
    const amounts = Array.from({ length: 2 + Math.floor(rand() * 3) }, () => 100 + Math.floor(rand() * 90_000))
    amounts.forEach((cents, k) =>
      invoices.push({
        invoice_id: `I${c}-${k}`,
        customer,
        amount: (cents / 100).toFixed(2),
        issued: `2025-04-${String(1 + k).padStart(2, '0')}`,
      }),
    )
    const total = amounts.reduce((x, y) => x + y, 0)
    const first = Math.floor(total / 3)
    for (const [k, cents] of [first, total - first].entries())
      payments.push({
        payment_id: `P${c}-${k}`,
        customer,
        paid: (cents / 100).toFixed(2),
        paid_on: `2025-04-${String(10 + k).padStart(2, '0')}`,
      })
    truth.set(customer, customer)
  }
  const a: ColumnT[] = [
    { name: 'invoice_id', type: 'string' },
    { name: 'customer', type: 'string' },
    { name: 'amount', type: 'decimal', scale: 2 },
    { name: 'issued', type: 'date' },
  ]
  const b: ColumnT[] = [
    { name: 'payment_id', type: 'string' },
    { name: 'customer', type: 'string' },
    { name: 'paid', type: 'decimal', scale: 2 },
    { name: 'paid_on', type: 'date' },
  ]
  // the first two customers confirmed: each of their invoices with each of their payments
  const confirmed_pairs: { left: number; right: number }[] = []
  invoices.forEach((inv, i) =>
    payments.forEach((pay, j) => {
      if (inv.customer === pay.customer && ['K0', 'K1'].includes(String(inv.customer)))
        confirmed_pairs.push({ left: i, right: j })
    }),
  )
  const out = inferRules.deterministic({
    schema_a: a,
    schema_b: b,
    sample_a: invoices,
    sample_b: payments,
    mappings: map([
      ['customer', 'customer'],
      ['amount', 'paid'],
      ['issued', 'paid_on'],
    ]),
    confirmed_pairs,
  })
  t.equal(out.pattern, 'N:M')
  t.match(out.rules[0], {
    pattern: 'N:M',
    sql: /^l\.customer = r\.customer AND r\.paid_on BETWEEN/,
    aggregate: { sum: 'SUM(l.amount)', equals: 'r.paid', tolerance: '0.01' },
  })
  t.same(out.questions, [])
  const e = runInferred(out, invoices, payments)
  t.same(partitionProblems(e, invoices.length, payments.length), [])
  const groups = e.matches.filter((m) => !m.ambiguous)
  t.equal(groups.length, 30, "every customer's month one group")
  t.ok(
    groups.every(
      (m) => new Set([...m.left_keys, ...m.right_keys].map((k) => String(k).slice(1).split('-')[0])).size === 1,
    ),
    'each group one customer',
  )
})
