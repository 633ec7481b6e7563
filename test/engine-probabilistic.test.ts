// Probabilistic passes (src/engine/match/probabilistic/): blocking, comparisons, the learned
// model, thresholds, waterfalls and the evidence of unmatched records, on generated unkeyed data.

import t from 'tap'
import { tableFromRows } from '../src/engine/load/json.js'
import type { Recipe, RecipePass } from '../src/recipes/schema.js'
import { evidence, partitionProblems, type Row } from './helpers/engine.js'
import { unkeyedTransfers } from './helpers/unkeyed.js'

const data = unkeyedTransfers(300, 40)

const transferPass = (over: Partial<RecipePass> = {}): RecipePass => ({
  name: 'by_payer',
  pattern: '1:1',
  block: [
    'shares_token(l.memo, r.memo)',
    'r.amount BETWEEN l.amount * 0.9 AND l.amount * 1.1 AND r.booking_date BETWEEN l.sent_date AND l.sent_date + 7',
  ],
  compare: [
    { name: 'memo', text: ['l.memo', 'r.memo'], levels: ['token_set >= 0.9', 'token_set >= 0.6', 'token_set >= 0.3'] },
    { name: 'amount', relative: ['l.amount', 'r.amount'], levels: [0, 0.01, 0.03] },
    {
      name: 'lag',
      days: ['l.sent_date', 'r.booking_date'],
      levels: [
        [0, 1],
        [2, 5],
      ],
    },
  ],
  ...over,
})

const recipe = (
  pass: RecipePass,
  rows: { sent: Row[]; received: Row[] } = data,
): [Recipe, ReturnType<typeof tableFromRows>, ReturnType<typeof tableFromRows>] => [
  {
    name: 'transfers',
    left: { source: 'sent', key: ['sent_id'] },
    right: { source: 'received', key: ['received_id'] },
    passes: [pass],
  },
  tableFromRows(rows.sent),
  tableFromRows(rows.received),
]

const judge = (e: ReturnType<typeof evidence>, truth: Set<string>) => {
  let right = 0
  let wrong = 0
  for (const m of e.matches) {
    if (m.ambiguous) continue
    if (truth.has(`${m.left_keys[0]}|${m.right_keys[0]}`)) right++
    else wrong++
  }
  return { precision: right / (right + wrong), recall: right / truth.size, right, wrong }
}

t.test('a probabilistic pass links records that share no key', async (t) => {
  const [r, l, rt] = recipe(transferPass())
  const e = evidence(r, l, rt)
  t.same(partitionProblems(e, l.length, rt.length), [], 'every record in exactly one set')
  const { precision, recall, wrong } = judge(e, data.truth)
  t.comment(`generated transfers: precision ${precision.toFixed(4)}, recall ${recall.toFixed(4)}`)
  t.ok(precision >= 0.98, `precision ${precision}`)
  t.ok(recall >= 0.95, `recall ${recall}`)
  t.ok(wrong <= 5)
  const report = e.result.summary.passes[0].probabilistic!
  t.equal(report.training.trained, true)
  t.equal(report.training.converged, true)
  t.same(
    report.model.comparisons.map((c) => [c.name, c.levels]),
    [
      ['memo', ['token_set >= 0.9', 'token_set >= 0.6', 'token_set >= 0.3', 'else']],
      ['amount', ['equal', 'within 1%', 'within 3%', 'else']],
      ['lag', ['0..1 day', '2..5 days', 'else']],
    ],
  )
  // the learned weights say what a reconciler would: agreement counts for, disagreement against
  for (const c of report.model.comparisons) {
    t.ok(c.weights![0] > 2, `${c.name}: the best level weighs for a match (${c.weights![0]})`)
    t.ok(c.weights!.at(-1)! < -2, `${c.name}: "else" weighs against (${c.weights!.at(-1)})`)
  }
  t.equal(report.threshold, 0.5)
  t.equal(
    report.blocking.reduce((a, b) => a + b.pairs, 0),
    report.candidates,
    'every candidate counted once, by the rule that found it first',
  )
})

t.test('every probabilistic match carries its waterfall, summing to its probability', async (t) => {
  const [r, l, rt] = recipe(transferPass())
  const e = evidence(r, l, rt)
  t.ok(e.matches.length > 250)
  for (const m of e.matches) {
    const w = m.weights!
    t.same(
      w.comparisons.map((c) => c.name),
      ['memo', 'amount', 'lag'],
    )
    const sum = w.prior + w.comparisons.reduce((a, c) => a + c.weight, 0) + w.context
    if (Math.abs(sum - w.match_weight) > 0.01)
      t.fail(`${m.match_id}: the parts add up to ${sum}, not ${w.match_weight}`)
    const p = 1 / (1 + 2 ** -w.match_weight)
    if (Math.abs(p - m.score) > 1e-3)
      t.fail(`${m.match_id}: weight ${w.match_weight} is probability ${p}, score ${m.score}`)
    if (m.score < 0.5) t.fail(`${m.match_id} is below the threshold: ${m.score}`)
  }
  const one = e.matches[0].weights!
  t.ok(one.prior < -5, `the prior of a pair taken at random is small (${one.prior})`)
})

t.test('the same data and recipe give the same result', async (t) => {
  const run = () => {
    const [r, l, rt] = recipe(transferPass())
    return evidence(r, l, rt)
  }
  const a = run()
  const b = run()
  t.same(a.matches, b.matches)
  t.same(a.unmatchedLeft, b.unmatchedLeft)
  t.same(a.result.summary.passes[0].probabilistic!.model, b.result.summary.passes[0].probabilistic!.model)
})

t.test('a model given in the recipe is used as it is', async (t) => {
  const [r, l, rt] = recipe(transferPass())
  const first = evidence(r, l, rt)
  const model = first.result.summary.passes[0].probabilistic!.model
  const [again, l2, r2] = recipe(transferPass({ model }))
  const second = evidence(again, l2, r2)
  const report = second.result.summary.passes[0].probabilistic!
  t.equal(report.training.trained, false, 'no training')
  t.equal(report.training.u_pairs, 0)
  t.same(report.model.lambda, model.lambda)
  t.same(
    second.matches.map((m) => [m.left_keys, m.right_keys, m.score]),
    first.matches.map((m) => [m.left_keys, m.right_keys, m.score]),
    'the matches the learned model made',
  )
})

t.test('blocking rules are unioned without duplicates', async (t) => {
  const left: Row[] = []
  const right: Row[] = []
  for (let n = 0; n < 30; n++) {
    left.push({ id: `L${n}`, city: `C${n % 5}`, zip: `Z${n % 7}`, name: `NAME${n}` })
    right.push({ id: `R${n}`, city: `C${n % 6}`, zip: `Z${n % 4}`, name: `NAME${n}` })
  }
  const e = evidence(
    {
      name: 'people',
      left: { source: 'l', key: ['id'] },
      right: { source: 'r', key: ['id'] },
      passes: [
        {
          name: 'p',
          pattern: '1:1',
          block: ['l.city = r.city', 'l.zip = r.zip'],
          compare: [{ name: 'name', text: ['l.name', 'r.name'], levels: ['exact'] }],
        },
      ],
    },
    tableFromRows(left),
    tableFromRows(right),
  )
  let byCity = 0
  let byZipOnly = 0
  for (const a of left)
    for (const b of right) {
      if (a.city === b.city) byCity++
      else if (a.zip === b.zip) byZipOnly++
    }
  const report = e.result.summary.passes[0].probabilistic!
  t.same(
    report.blocking.map((b) => [b.join, b.pairs]),
    [
      ['hash', byCity],
      ['hash', byZipOnly],
    ],
    'the second rule adds only the pairs the first does not hold for',
  )
  t.equal(report.candidates, byCity + byZipOnly)
})

t.test('shares_token leaves out tokens too many records hold', async (t) => {
  const rows = (side: string) =>
    Array.from({ length: 12 }, (_, n) => ({
      id: `${side}${n}`,
      memo: `REF ${['ALPHA', 'BRAVO', 'CHARLIE'][n % 3]} ${n}`,
    }))
  const run = (rule: string) =>
    evidence(
      {
        name: 'memos',
        left: { source: 'l', key: ['id'] },
        right: { source: 'r', key: ['id'] },
        passes: [{ name: 'p', pattern: '1:1', block: [rule], compare: [{ name: 'memo', text: ['l.memo', 'r.memo'] }] }],
      },
      tableFromRows(rows('L')),
      tableFromRows(rows('R')),
    ).result.summary.passes[0].probabilistic!.blocking[0]
  // "REF" is in all 12 records, each name in 4, each number in 1
  t.same(run('shares_token(l.memo, r.memo, 4)'), {
    rule: 'shares_token(l.memo, r.memo, 4)',
    join: 'token',
    pairs: 48,
    capped_tokens: 1,
  })
  t.same(run('shares_token(l.memo, r.memo, 3)').pairs, 12, 'at 3, only the numbers block')
  t.same(run('shares_token(l.memo, r.memo, 12)').pairs, 144, 'at 12, "REF" pairs everyone with everyone, once')
})

t.test('an unmatched record names its best candidate and why it fell short', async (t) => {
  const sent: Row[] = [
    { sent_id: 'S1', sent_date: '2025-03-01', amount: '100.00', memo: 'ANNA KOWALSKI' },
    { sent_id: 'S2', sent_date: '2025-03-01', amount: '250.00', memo: 'BORIS LINDQVIST' },
  ]
  const received: Row[] = [
    { received_id: 'R1', booking_date: '2025-03-02', amount: '100.00', memo: 'FROM A KOWALSKI' },
    // same name, but far off in amount and date: a candidate by its token, not a match
    { received_id: 'R2', booking_date: '2025-06-20', amount: '9999.00', memo: 'BORIS LINDQVIST' },
  ]
  const big = unkeyedTransfers(200, 0, 11)
  const [r, l, rt] = recipe(transferPass({ threshold: 0.9 }), {
    sent: [...sent, ...big.sent],
    received: [...received, ...big.received],
  })
  const e = evidence(r, l, rt)
  t.ok(
    e.matches.some((m) => m.left_keys[0] === 'S1' && m.right_keys[0] === 'R1'),
    'S1 and R1 match',
  )
  const s2 = e.unmatchedLeft.find((u) => u.record_key === 'S2')!
  t.same(s2.closest_candidate, 'R2')
  t.same(s2.failed, { pass: 'by_payer', conjunct: 'match probability >= 0.9' })
  t.match(s2.reason, /closest candidate R2 failed match probability >= 0.9 in pass by_payer/)
})

t.test('"when" on a probabilistic pass is a condition every match meets', async (t) => {
  const withCurrency = (rows: Row[], flip: string) =>
    rows.map((x) => ({ ...x, currency: x.sent_id === flip || x.received_id === flip ? 'EUR' : 'USD' }))
  const first = [...data.truth][0].split('|')
  const rows = { sent: withCurrency(data.sent, first[0]), received: withCurrency(data.received, 'none') }
  const [r, l, rt] = recipe(transferPass({ when: 'l.currency = r.currency' }), rows)
  const e = evidence(r, l, rt)
  t.notOk(
    e.matches.some((m) => m.left_keys[0] === first[0]),
    `${first[0]} has another currency: not matched`,
  )
  const u = e.unmatchedLeft.find((x) => x.record_key === first[0])!
  t.same(u.failed, { pass: 'by_payer', conjunct: 'l.currency = r.currency' })
  t.equal(u.closest_candidate, first[1])
})

t.test('a missing value is no evidence either way', async (t) => {
  const sent = data.sent.map((x, n) => (n === 0 ? { ...x, memo: null } : x))
  const [r, l, rt] = recipe(transferPass(), { sent, received: data.received })
  const e = evidence(r, l, rt)
  const m = e.matches.find((x) => x.left_keys[0] === data.sent[0].sent_id)
  t.ok(m, 'still matched by amount and date')
  t.same(m!.weights!.comparisons[0], { name: 'memo', level: 'no value', weight: 0 })
})

t.test('confirmed pairs anchor the training and must name records of the run', async (t) => {
  const first = [...data.truth][0].split('|')
  const [r, l, rt] = recipe(transferPass({ train: { confirmed: [{ left: first[0], right: first[1] }] } }))
  const e = evidence(r, l, rt)
  t.equal(e.result.summary.status, 'completed')
  t.ok(e.matches.some((m) => m.left_keys[0] === first[0] && m.right_keys[0] === first[1]))
  const [bad, l2, r2] = recipe(transferPass({ train: { confirmed: [{ left: 'NOPE', right: first[1] }] } }))
  const failed = evidence(bad, l2, r2).result.summary
  t.equal(failed.status, 'failed')
  t.match(failed.passes[0].error, /confirmed pair NOPE/)
})

t.test('exact duplicates are one tie, or matched in order with prefer', async (t) => {
  // two identical transfers sent and two identical ones received: the model cannot tell which is
  // which, so each pair alone is a coin toss; as a class they are a sure match
  const dup = (id: string) => ({
    sent_id: id,
    sent_date: '2025-03-03',
    amount: '777.77',
    memo: 'ZEPHYRINE QUORTLEBY RENT',
  })
  const got = (id: string) => ({ received_id: id, booking_date: '2025-03-04', amount: '777.77', memo: 'Z QUORTLEBY' })
  const rows = {
    sent: [...data.sent, dup('S9001'), dup('S9002')],
    received: [...data.received, got('R9001'), got('R9002')],
  }
  const ours = (e: ReturnType<typeof evidence>) =>
    e.matches
      .filter((m) => m.left_keys.some((k) => String(k).startsWith('S9')))
      .map((m) => [m.left_keys, m.right_keys, m.ambiguous])
  const tied = evidence(...recipe(transferPass(), rows))
  t.same(ours(tied), [[['S9001', 'S9002'], ['R9001', 'R9002'], true]], 'one ambiguous match of the four')
  const preferred = evidence(...recipe(transferPass({ prefer: 'first_key' }), rows))
  t.same(ours(preferred), [
    [['S9001'], ['R9001'], false],
    [['S9002'], ['R9002'], false],
  ])
  const m = preferred.matches.find((x) => x.left_keys[0] === 'S9001')!
  t.ok(m.score > 0.99, `the class is a sure match (${m.score})`)
  const w = m.weights!
  t.ok(Math.abs(w.prior + w.comparisons.reduce((a, c) => a + c.weight, 0) + w.context - w.match_weight) < 0.01)
  // the rest of the run is as it was without the duplicates
  const plain = evidence(...recipe(transferPass()))
  t.equal(preferred.matches.length, plain.matches.length + 2)
})
