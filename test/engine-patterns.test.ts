// The engine's matching behaviour on small literal tables: 1:1 assignment by global best score
// with ties flagged, 1:N / N:1 by bounded subset sums, N:M groups, the pass DAG, exact money, and
// the evidence of unmatched records.

import t from 'tap'
import { generated } from '../src/engine/plan/compile.js'
import { tableFromRows } from '../src/engine/load/json.js'
import { orderPasses, PassGraphError } from '../src/engine/plan/passes.js'
import { reconcile } from '../src/engine/reconcile.js'
import type { ColumnInfo } from '../src/engine/data/types.js'
import { explainRecipe } from '../src/recipes/explain.js'
import { evidence, pairs, partitionProblems, recipeOf, runRows } from './helpers/engine.js'

const AMOUNT_AND_DATE =
  "l.ref = r.ref AND ABS(l.amount - r.amount) <= 0.01 AND r.date BETWEEN l.date - INTERVAL '5 days' AND l.date + INTERVAL '5 days'"

t.test('1:1 takes the best-scored pairs globally, not the first found', async (t) => {
  const e = runRows(
    [{ name: 'p', pattern: '1:1', when: AMOUNT_AND_DATE }],
    [
      { id: 'L1', ref: 'A', amount: '100.00', date: '2024-01-10' },
      { id: 'L2', ref: 'A', amount: '100.00', date: '2024-01-12' },
    ],
    [
      { id: 'R1', ref: 'A', amount: '100.00', date: '2024-01-12' },
      { id: 'R2', ref: 'A', amount: '100.00', date: '2024-01-10' },
    ],
  )
  // first-found would pair L1 with R1 (2 days apart); the best pairs are 0 days apart
  t.same(pairs(e), ['L1|R2', 'L2|R1'])
  t.ok(e.matches.every((m) => !m.ambiguous && m.score === 1 && m.deltas.days === 0 && m.deltas.amount === '0.00'))
})

t.test('a true tie is one ambiguous match held for review, not an arbitrary choice', async (t) => {
  const e = runRows(
    [{ name: 'p', pattern: '1:1', when: AMOUNT_AND_DATE }],
    [
      { id: 'L1', ref: 'A', amount: '100.00', date: '2024-01-10' },
      { id: 'L2', ref: 'B', amount: '50.00', date: '2024-01-10' },
    ],
    [
      { id: 'R1', ref: 'A', amount: '100.00', date: '2024-01-10' },
      { id: 'R2', ref: 'A', amount: '100.00', date: '2024-01-10' },
      { id: 'R3', ref: 'B', amount: '50.00', date: '2024-01-11' },
    ],
  )
  t.same(pairs(e), ['L1|R1+R2', 'L2|R3'])
  const tie = e.matches.find((m) => m.left_keys[0] === 'L1')!
  t.equal(tie.ambiguous, true)
  t.equal(e.result.summary.ambiguous, 1)
  t.equal(e.matches.find((m) => m.left_keys[0] === 'L2')!.ambiguous, false)
  t.same(partitionProblems(e, 2, 3), [])
})

t.test('1:N finds the subset that sums to the amount, not all candidates', async (t) => {
  const split = {
    name: 'split',
    pattern: '1:N' as const,
    when: 'l.customer = r.customer',
    aggregate: { sum: 'r.amount', equals: 'l.amount', tolerance: 0.01, max_group: 5 },
  }
  const e = runRows(
    [split],
    [{ id: 'P1', customer: 'C1', amount: '100.00' }],
    [
      { id: 'I1', customer: 'C1', amount: '60.00' },
      { id: 'I2', customer: 'C1', amount: '30.00' },
      { id: 'I3', customer: 'C1', amount: '40.00' },
      { id: 'I4', customer: 'C1', amount: '25.00' },
    ],
  )
  t.same(pairs(e), ['P1|I1+I3'])
  t.same(
    e.unmatchedRight.map((u) => u.record_key),
    ['I2', 'I4'],
  )
  t.equal(e.matches[0].pattern, '1:N')
  t.equal(e.matches[0].deltas.amount, '0.00')

  // a sum off by a cent is within tolerance, and the delta says so
  const cents = runRows(
    [split],
    [{ id: 'P1', customer: 'C1', amount: '100.00' }],
    [
      { id: 'I1', customer: 'C1', amount: '33.33' },
      { id: 'I2', customer: 'C1', amount: '33.33' },
      { id: 'I3', customer: 'C1', amount: '33.33' },
    ],
  )
  t.same(pairs(cents), ['P1|I1+I2+I3'])
  t.equal(cents.matches[0].deltas.amount, '0.01')
})

t.test('1:N respects max_group', async (t) => {
  const rights = [1, 2, 3, 4, 5].map((n) => ({ id: `I${n}`, customer: 'C1', amount: '20.00' }))
  const pass = (max: number) => ({
    name: 'split',
    pattern: '1:N' as const,
    when: 'l.customer = r.customer',
    aggregate: { sum: 'r.amount', equals: 'l.amount', max_group: max },
  })
  const left = [{ id: 'P1', customer: 'C1', amount: '100.00' }]
  t.same(pairs(runRows([pass(4)], left, rights)), [], 'five parts do not fit a group of four')
  t.same(pairs(runRows([pass(5)], left, rights)), ['P1|I1+I2+I3+I4+I5'])
})

t.test('N:1 mirrors 1:N: several left records against one right record', async (t) => {
  const e = runRows(
    [
      {
        name: 'batch',
        pattern: 'N:1',
        when: 'l.batch = r.batch',
        aggregate: { sum: 'l.amount', equals: 'r.total', tolerance: '0' },
      },
    ],
    [
      { id: 'T1', batch: 'B1', amount: '10.50' },
      { id: 'T2', batch: 'B1', amount: '20.25' },
      { id: 'T3', batch: 'B1', amount: '99.00' },
    ],
    [{ id: 'S1', batch: 'B1', total: '30.75' }],
  )
  t.same(pairs(e), ['T1+T2|S1'])
  t.same(
    e.unmatchedLeft.map((u) => u.record_key),
    ['T3'],
  )
})

t.test('N:M matches groups on both sides whose sums agree', async (t) => {
  const e = runRows(
    [
      {
        name: 'monthly',
        pattern: 'N:M',
        when: "l.customer = r.customer AND DATE_TRUNC('month', l.date) = DATE_TRUNC('month', r.date)",
        aggregate: { sum: 'r.amount', equals: 'l.amount', tolerance: 0.5 },
      },
    ],
    [
      { id: 'L1', customer: 'C1', date: '2024-01-03', amount: '50.00' },
      { id: 'L2', customer: 'C1', date: '2024-01-20', amount: '50.00' },
      { id: 'L3', customer: 'C2', date: '2024-01-05', amount: '10.00' },
      { id: 'L4', customer: 'C1', date: '2024-02-01', amount: '70.00' },
    ],
    [
      { id: 'R1', customer: 'C1', date: '2024-01-31', amount: '30.00' },
      { id: 'R2', customer: 'C1', date: '2024-01-02', amount: '70.00' },
      { id: 'R3', customer: 'C2', date: '2024-01-09', amount: '11.00' },
    ],
  )
  t.same(pairs(e), ['L1+L2|R1+R2'], 'C2 differs by 1.00, more than the tolerance; L4 is another month')
  t.same(
    e.unmatchedLeft.map((u) => u.record_key),
    ['L3', 'L4'],
  )
  t.same(
    e.unmatchedRight.map((u) => u.record_key),
    ['R3'],
  )
})

t.test('passes run in DAG order and each sees only what earlier passes left', async (t) => {
  const e = runRows(
    [
      { name: 'loose', pattern: '1:1', when: 'l.ref = r.ref', after: ['exact'] },
      { name: 'exact', pattern: '1:1', when: 'l.ref = r.ref AND l.amount = r.amount', after: [] },
    ],
    [
      { id: 'L1', ref: 'A', amount: '10.00' },
      { id: 'L2', ref: 'B', amount: '20.00' },
    ],
    [
      { id: 'R1', ref: 'A', amount: '10.00' },
      { id: 'R2', ref: 'B', amount: '25.00' },
    ],
  )
  t.same(
    e.matches.map((m) => `${m.pass}:${m.left_keys[0]}|${m.right_keys[0]}`),
    ['exact:L1|R1', 'loose:L2|R2'],
  )
  const [loose, exact] = e.result.summary.passes
  t.same([loose.matches, exact.matches], [1, 1])
  t.same(loose.depends_on, ['exact'])
  t.equal(e.result.summary.passes[0].left_amount, '20.00')
})

t.test('a cycle in `after` is rejected with its path', async (t) => {
  const passes = [
    { name: 'a', pattern: '1:1' as const, when: 'l.x = r.x', after: ['c'] },
    { name: 'b', pattern: '1:1' as const, when: 'l.x = r.x', after: ['a'] },
    { name: 'c', pattern: '1:1' as const, when: 'l.x = r.x', after: ['b'] },
  ]
  const err = t.throws(() => orderPasses(passes)) as PassGraphError
  t.ok(err instanceof PassGraphError)
  t.equal(err.code, 'pass_cycle')
  t.match(err.message, /a → b → c → a|b → c → a → b|c → a → b → c/)
  t.same(
    orderPasses([
      { name: 'x', pattern: '1:1', when: 'l.a = r.a' },
      { name: 'y', pattern: '1:1', when: 'l.a = r.a', after: [] },
      { name: 'z', pattern: '1:1', when: 'l.a = r.a', after: ['x', 'y'] },
    ]).phases,
    [['x', 'y'], ['z']],
  )
})

t.test('a failing pass skips its dependents and fails the run cleanly', async (t) => {
  const e = runRows(
    [
      { name: 'ok', pattern: '1:1', when: 'l.ref = r.ref' },
      { name: 'broken', pattern: '1:1', when: 'l.ref = r.missing', after: ['ok'] },
      { name: 'later', pattern: '1:1', when: 'l.ref = r.ref', after: ['broken'] },
      { name: 'independent', pattern: '1:1', when: 'l.ref = r.ref', after: ['ok'] },
    ],
    [{ id: 'L1', ref: 'A' }],
    [{ id: 'R1', ref: 'A' }],
  )
  const s = e.result.summary
  t.equal(s.status, 'failed')
  t.same(
    s.passes.map((p) => [p.name, p.status]),
    [
      ['ok', 'done'],
      ['broken', 'failed'],
      ['later', 'skipped'],
      ['independent', 'done'],
    ],
  )
  t.match(s.passes[1].error, /missing/)
  t.same(s.passes[2].blocked_by, ['broken'])
  t.equal(e.matches.length, 0, 'a failed run commits no matches')
  t.equal(s.matches, 0)
})

t.test('money is decimal-exact: no match lost to floating-point drift', async (t) => {
  const tolerance = 'l.ref = r.ref AND ABS(l.amount - r.amount) <= 0.01'
  const e = runRows(
    [{ name: 'p', pattern: '1:1', when: tolerance }],
    [
      { id: 'L1', ref: 'A', amount: '12345.67' },
      { id: 'L2', ref: 'B', amount: '99.99' },
      { id: 'L3', ref: 'C', amount: '12345.67' },
      { id: 'L4', ref: 'D', amount: '0.10' },
    ],
    [
      { id: 'R1', ref: 'A', amount: '12345.66' },
      { id: 'R2', ref: 'B', amount: '100.00' },
      { id: 'R3', ref: 'C', amount: '12345.65' },
      { id: 'R4', ref: 'D', amount: '0.11' },
    ],
  )
  // 12345.67 - 12345.66 is 0.010000000000218 in binary floating point: it must still match
  t.same(pairs(e), ['L1|R1', 'L2|R2', 'L4|R4'])
  t.same(
    e.matches.map((m) => m.deltas.amount),
    ['0.01', '-0.01', '-0.01'],
  )
  t.same(
    e.unmatchedLeft.map((u) => u.record_key),
    ['L3'],
  )
  // 0.1 + 0.2 = 0.3 holds in decimals, as does a scale mix (0.3 vs 0.300)
  const sum = runRows(
    [{ name: 's', pattern: '1:1', when: 'l.ref = r.ref AND l.a + l.b = r.c' }],
    [{ id: 'L', ref: 'X', a: '0.1', b: '0.2' }],
    [{ id: 'R', ref: 'X', c: '0.300' }],
  )
  t.same(pairs(sum), ['L|R'])
})

t.test('unmatched records carry their closest candidate and the conjunct that rejected it', async (t) => {
  const e = runRows(
    [{ name: 'by_ref', pattern: '1:1', when: 'l.ref = r.ref AND ABS(l.amount - r.amount) <= 0.01' }],
    [
      { id: 'L1', ref: 'A', amount: '100.00' },
      { id: 'L2', ref: 'Z', amount: '5.00' },
    ],
    [
      { id: 'R1', ref: 'A', amount: '105.00' },
      { id: 'R2', ref: 'Q', amount: '5.00' },
    ],
  )
  t.same(e.matches, [])
  const [l1, l2] = e.unmatchedLeft
  t.same(l1.closest_candidate, 'R1')
  t.same(l1.failed, { pass: 'by_ref', conjunct: 'ABS(l.amount - r.amount) <= 0.01' })
  t.match(l1.reason, /closest candidate R1 failed ABS\(l\.amount - r\.amount\) <= 0\.01/)
  t.equal(l2.closest_candidate, null)
  t.same(l2.failed, { pass: 'by_ref', conjunct: 'l.ref = r.ref' })
  t.match(l2.reason, /no right record shares its join/)
  t.equal(e.unmatchedRight[0].closest_candidate, 'L1')
})

t.test('wrapped keys, band joins and NULLs', async (t) => {
  const wrapped = runRows(
    [{ name: 'p', pattern: '1:1', when: 'UPPER(TRIM(l.ref)) = r.ref' }],
    [
      { id: 'L1', ref: '  inv-7 ' },
      { id: 'L2', ref: null },
    ],
    [
      { id: 'R1', ref: 'INV-7' },
      { id: 'R2', ref: null },
    ],
  )
  t.same(pairs(wrapped), ['L1|R1'], 'NULL keys never match, not even each other')

  const band = runRows(
    [
      {
        name: 'window',
        pattern: '1:1',
        when: "r.date BETWEEN l.date AND l.date + INTERVAL '3 days' AND ABS(l.amount - r.amount) <= 0.01",
      },
    ],
    [
      { id: 'L1', date: '2024-03-01', amount: '10.00' },
      { id: 'L2', date: '2024-03-10', amount: '10.00' },
    ],
    [
      { id: 'R1', date: '2024-03-03', amount: '10.01' },
      { id: 'R2', date: '2024-03-15', amount: '10.00' },
    ],
  )
  t.same(pairs(band), ['L1|R1'])
  t.equal(band.matches[0].deltas.days, 2)
  t.equal(band.unmatchedLeft[0].closest_candidate, null, 'R2 is outside L2s window: no candidate')
})

t.test('1:1 scores include string similarity: the likelier name or reference wins, not a tie', async (t) => {
  // a similarity() conjunct inside a comparison still scores: Jon Smith is closer to John Smith
  const names = runRows(
    [{ name: 'p', pattern: '1:1', when: 'l.dob = r.dob AND similarity(l.name, r.name) >= 0.2' }],
    [{ id: 'L1', dob: '1980-01-01', name: 'John Smith' }],
    [
      { id: 'R1', dob: '1980-01-01', name: 'Joan Smythe' },
      { id: 'R2', dob: '1980-01-01', name: 'Jon Smith' },
    ],
  )
  t.same(pairs(names), ['L1|R2'])
  t.equal(names.matches[0].ambiguous, false)
  t.same(
    names.unmatchedRight.map((u) => [u.record_key, u.failed]),
    [['R1', { pass: 'p', conjunct: '' }]],
    'the loser satisfied the pass but was outscored',
  )

  // an amount-and-date pass after a reference pass: among equal amounts and dates the payment
  // whose reference resembles the invoice's wins (the recipe's reference key scores it)
  const e = runRows(
    [
      { name: 'by_ref', pattern: '1:1', when: 'l.ref = r.ref AND l.amount = r.amount' },
      {
        name: 'by_amount',
        pattern: '1:1',
        when: "ABS(l.amount - r.amount) <= 0.01 AND r.date BETWEEN l.date AND l.date + INTERVAL '3 days'",
        after: ['by_ref'],
      },
    ],
    [{ id: 'L1', ref: 'INV-2024-0042', amount: '250.00', date: '2024-05-01' }],
    [
      { id: 'R1', ref: 'PAYROLL MAY', amount: '250.00', date: '2024-05-02' },
      { id: 'R2', ref: 'INV 2024 0042', amount: '250.00', date: '2024-05-02' },
    ],
  )
  t.same(pairs(e), ['L1|R2'])
  t.same(
    e.matches.map((m) => [m.pass, m.ambiguous]),
    [['by_amount', false]],
  )
  // the same two payments with identical references are a true tie
  const tie = runRows(
    [{ name: 'by_amount', pattern: '1:1', when: 'ABS(l.amount - r.amount) <= 0.01 AND l.ref <> r.id' }],
    [{ id: 'L1', ref: 'INV-1', amount: '250.00' }],
    [
      { id: 'R1', ref: 'INV-1', amount: '250.00' },
      { id: 'R2', ref: 'INV-1', amount: '250.00' },
    ],
  )
  t.same(pairs(tie), ['L1|R1+R2'])
  t.equal(tie.matches[0].ambiguous, true)
})

t.test('1:N ranks candidates before its cap: the right group is found wherever the join put it', async (t) => {
  const pass = (when: string) => ({
    name: 'split',
    pattern: '1:N' as const,
    when,
    aggregate: { sum: 'r.amount', equals: 'l.amount', tolerance: 0.01, max_group: 5 },
  })
  const left = [{ id: 'P1', customer: 'C1', amount: '100.00', date: '2024-06-15' }]
  // 26 parts of 7.00 (no five of them make 100.00) come first, from months away; the two
  // payments that make the invoice come last, within days of it
  const decoys = Array.from({ length: 26 }, (_, n) => ({
    id: `D${String(n).padStart(2, '0')}`,
    customer: 'C1',
    amount: '7.00',
    date: '2024-01-10',
  }))
  const parts = [
    { id: 'X1', customer: 'C1', amount: '60.00', date: '2024-06-16' },
    { id: 'X2', customer: 'C1', amount: '40.00', date: '2024-06-18' },
  ]
  const e = runRows(
    [pass("l.customer = r.customer AND r.date BETWEEN l.date - INTERVAL '200 days' AND l.date + INTERVAL '30 days'")],
    left,
    [...decoys, ...parts],
  )
  t.same(pairs(e), ['P1|X1+X2'])
  t.same(partitionProblems(e, 1, 28), [])
  // 28 usable candidates, more than the 24 the search takes: the cap was met, and said so
  t.same(e.result.summary.passes[0].search, { candidates_capped: 1, visits_exhausted: 0, groups_over_max: 0 })

  // candidates that cannot be in any group (each beyond the amount) are pruned before the cap
  const big = Array.from({ length: 30 }, (_, n) => ({
    id: `B${String(n).padStart(2, '0')}`,
    customer: 'C1',
    amount: '150.00',
    date: '2024-06-15',
  }))
  const pruned = runRows([pass('l.customer = r.customer')], left, [...big, ...parts])
  t.same(pairs(pruned), ['P1|X1+X2'])
  t.same(pruned.result.summary.passes[0].search, { candidates_capped: 0, visits_exhausted: 0, groups_over_max: 0 })
})

t.test('1:N reports a search cut short by its visit limit instead of failing silently', async (t) => {
  // 24 parts of 7.00 never sum to 100.00 (14 × 7 = 98, 15 × 7 = 105), and with max_group 20 the
  // search cannot try every subset within its visits
  const e = runRows(
    [
      {
        name: 'split',
        pattern: '1:N',
        when: 'l.customer = r.customer',
        aggregate: { sum: 'r.amount', equals: 'l.amount', tolerance: 0.01, max_group: 20 },
      },
    ],
    [{ id: 'P1', customer: 'C1', amount: '100.00' }],
    Array.from({ length: 24 }, (_, n) => ({ id: `D${n}`, customer: 'C1', amount: '7.00' })),
  )
  t.same(pairs(e), [])
  t.same(e.result.summary.passes[0].search, { candidates_capped: 0, visits_exhausted: 1, groups_over_max: 0 })
  t.equal(e.unmatchedRight.length, 24)
  // and the unmatched record's evidence says its pass's search was cut short
  t.equal(e.unmatchedLeft.length, 1)
  t.match(e.unmatchedLeft[0], {
    record_key: 'P1',
    failed: { pass: 'split', conjunct: '' },
    reason:
      /no group sums to the amount within tolerance; the pass's group search met its bounds \(1 stopped at its visit limit\)/,
  })
})

t.test('N:M respects max_group on both sides when the recipe declares it', async (t) => {
  const pass = (max?: number) => ({
    name: 'monthly',
    pattern: 'N:M' as const,
    when: 'l.customer = r.customer',
    aggregate: { sum: 'r.amount', equals: 'l.amount', tolerance: 0, ...(max === undefined ? {} : { max_group: max }) },
  })
  const left = [
    { id: 'L1', customer: 'C1', amount: '10.00' },
    { id: 'L2', customer: 'C1', amount: '20.00' },
    { id: 'L3', customer: 'C1', amount: '30.00' },
    { id: 'L4', customer: 'C2', amount: '5.00' },
    { id: 'L5', customer: 'C2', amount: '5.00' },
    { id: 'L6', customer: 'C3', amount: null },
  ]
  const right = [
    { id: 'R1', customer: 'C1', amount: '60.00' },
    { id: 'R2', customer: 'C2', amount: '4.00' },
    { id: 'R3', customer: 'C2', amount: '6.00' },
    { id: 'R4', customer: 'C3', amount: '0.00' },
  ]
  // undeclared: any group size; a group with a NULL amount has no known sum and never matches
  t.same(pairs(runRows([pass()], left, right)), ['L1+L2+L3|R1', 'L4+L5|R2+R3'])
  // max_group 2: C1's three left records are too many, C2's two and two fit
  const bounded = runRows([pass(2)], left, right)
  t.same(pairs(bounded), ['L4+L5|R2+R3'])
  t.equal(bounded.result.summary.passes[0].search!.groups_over_max, 1)
  t.same(partitionProblems(bounded, 6, 4), [])
})

t.test('records sharing a 1:1 key are never both matched: a tie is flagged, a loser is explained', async (t) => {
  const pass = { name: 'by_ref', pattern: '1:1' as const, when: AMOUNT_AND_DATE }
  const right = [{ id: 'R1', ref: 'A', amount: '100.00', date: '2024-01-10' }]
  // two left records with the same reference, amount and date: neither is chosen arbitrarily
  const tie = runRows(
    [pass],
    [
      { id: 'L1', ref: 'A', amount: '100.00', date: '2024-01-10' },
      { id: 'L2', ref: 'A', amount: '100.00', date: '2024-01-10' },
    ],
    right,
  )
  t.same(pairs(tie), ['L1+L2|R1'])
  t.equal(tie.matches[0].ambiguous, true)
  t.same(partitionProblems(tie, 2, 1), [])
  // the same key but one a day off: the closer wins, the other stays unmatched and says why
  const near = runRows(
    [pass],
    [
      { id: 'L1', ref: 'A', amount: '100.00', date: '2024-01-11' },
      { id: 'L2', ref: 'A', amount: '100.00', date: '2024-01-10' },
    ],
    right,
  )
  t.same(pairs(near), ['L2|R1'])
  t.equal(near.matches[0].ambiguous, false)
  t.match(near.unmatchedLeft, [
    {
      record_key: 'L1',
      closest_candidate: 'R1',
      failed: { pass: 'by_ref', conjunct: '' },
      reason: /R1 \(it was matched elsewhere\) satisfies pass by_ref but was outscored/,
    },
  ])
})

t.test('the summary has counts and exact amounts per side and per pass, match rate, timings, version', async (t) => {
  const recipe = recipeOf([
    { name: 'exact', pattern: '1:1', when: 'l.ref = r.ref AND l.amount = r.amount' },
    {
      name: 'split',
      pattern: '1:N',
      when: 'l.customer = r.customer',
      aggregate: { sum: 'r.amount', equals: 'l.amount', tolerance: 0.01 },
      after: ['exact'],
    },
    {
      name: 'window',
      pattern: '1:1',
      when: "ABS(l.amount - r.amount) <= 0.05 AND r.date BETWEEN l.date AND l.date + INTERVAL '2 days'",
      after: ['split'],
    },
  ])
  const left = tableFromRows([
    { id: 'L1', ref: 'A', customer: 'C1', amount: '10.10', date: '2024-01-01' },
    { id: 'L2', ref: 'B', customer: 'C2', amount: '30.00', date: '2024-01-01' },
    { id: 'L3', ref: 'X', customer: 'C3', amount: '7.00', date: '2024-01-01' },
    { id: 'L4', ref: 'Y', customer: 'C4', amount: '0.20', date: '2024-01-05' },
  ])
  const right = tableFromRows([
    { id: 'R1', ref: 'A', customer: 'C1', amount: '10.10', date: '2024-01-01' },
    { id: 'R2', ref: 'Q', customer: 'C2', amount: '20.00', date: '2024-01-01' },
    { id: 'R3', ref: 'Q', customer: 'C2', amount: '10.01', date: '2024-01-01' },
    { id: 'R4', ref: 'Z', customer: 'C9', amount: '7.03', date: '2024-01-02' },
    { id: 'R5', ref: 'Z', customer: 'C9', amount: '0.24', date: '2024-01-09' },
  ])
  const e = evidence(recipe, left, right)
  t.same(pairs(e), ['L1|R1', 'L2|R2+R3', 'L3|R4'])
  const s = reconcile(recipe, left, right, { version: 7 }).summary
  t.equal(s.recipe_version, 7)
  t.equal(s.status, 'completed')
  t.same(s.left, {
    rows: 4,
    matched: 3,
    ambiguous: 0,
    unmatched: 1,
    amount: '47.30',
    matched_amount: '47.10',
    unmatched_amount: '0.20',
  })
  t.same(s.right, {
    rows: 5,
    matched: 4,
    ambiguous: 0,
    unmatched: 1,
    amount: '47.38',
    matched_amount: '47.14',
    unmatched_amount: '0.24',
  })
  t.equal(s.match_rate, Math.round((7 / 9) * 1e6) / 1e6)
  t.same(
    s.passes.map((p) => [p.name, p.matches, p.left_matched, p.right_matched, p.left_amount, p.right_amount]),
    [
      ['exact', 1, 1, 1, '10.10', '10.10'],
      ['split', 1, 1, 2, '30.00', '30.01'],
      ['window', 1, 1, 1, '7.00', '7.03'],
    ],
  )
  t.same(s.passes[1].search, { candidates_capped: 0, visits_exhausted: 0, groups_over_max: 0 })
  t.same(Object.keys(s.timings).sort(), ['evidence_ms', 'match_ms', 'plan_ms', 'total_ms'])
  t.ok(Object.values(s.timings).every((v) => typeof v === 'number' && v >= 0))
  t.ok(s.passes.every((p) => typeof p.ms === 'number' && p.ms >= 0))
  // the window pass has two bands: amount ±0.05 holds 2 pairs (L3-R4, L4-R5), the 2-day window 1
  // (L3-R4), so it ran on the window; its evidence is taken within the first band written
  // (amount), whichever ran: L4 and R5 are each other's nearest miss, outside the window
  t.same(s.passes[2].band, {
    column: 'r.date',
    estimated_pairs: 1,
    pairs: 1,
    candidates: 1,
    options: [
      { column: 'r.amount', estimated_pairs: 2 },
      { column: 'r.date', estimated_pairs: 1 },
    ],
  })
  const window = { pass: 'window', conjunct: "r.date BETWEEN l.date AND l.date + INTERVAL '2 days'" }
  t.same(
    e.unmatchedLeft.map((u) => [u.record_key, u.closest_candidate, u.failed]),
    [['L4', 'R5', window]],
  )
  t.equal(
    e.unmatchedLeft[0].reason,
    "closest candidate R5 failed r.date BETWEEN l.date AND l.date + INTERVAL '2 days' in pass window",
  )
  t.same(
    e.unmatchedRight.map((u) => [u.record_key, u.closest_candidate, u.failed]),
    [['R5', 'L4', window]],
  )
})

t.test('residual predicates are compiled once per pass, not per row or partition', async (t) => {
  const rows = (n: number, side: 'l' | 'r') =>
    Array.from({ length: n }, (_, k) => ({
      id: `${side}${k}`,
      ref: `REF-${k % (n / 2)}`,
      amount: ((k % 97) + 0.5).toFixed(2),
      date: `2024-01-${String((k % 28) + 1).padStart(2, '0')}`,
    }))
  const recipe = recipeOf([
    { name: 'keyed', pattern: '1:1', when: AMOUNT_AND_DATE },
    {
      name: 'band',
      pattern: '1:1',
      when: "ABS(l.amount - r.amount) <= 0.01 AND r.date BETWEEN l.date AND l.date + INTERVAL '1 day' AND l.ref <> r.ref",
      after: ['keyed'],
    },
  ])
  const generatedFor = (n: number) => {
    const before = generated.functions
    const result = reconcile(recipe, tableFromRows(rows(n, 'l')), tableFromRows(rows(n, 'r')))
    t.equal(result.summary.status, 'completed')
    return generated.functions - before
  }
  const small = generatedFor(200)
  const large = generatedFor(20_000) // 20,000 rows a side: the keyed pass runs on many partitions
  t.ok(small > 0)
  t.equal(large, small, `${small} functions for 200 rows, ${large} for 20,000`)
})

t.test('explain prints the plan of each pass and what its candidates are scored by', async (t) => {
  const cols = (spec: string): ColumnInfo[] =>
    spec.split(' ').map((c) => {
      const [name, type] = c.split(':')
      return { name, type: type as ColumnInfo['type'], nullable: true, ...(type === 'decimal' ? { scale: 2 } : {}) }
    })
  const schemas = {
    l: cols('id:string ref:string name:string amount:decimal date:date'),
    r: cols('id:string ref:string name:string amount:decimal date:date'),
  }
  const reply = explainRecipe(
    recipeOf([
      { name: 'by_ref', pattern: '1:1', when: 'l.ref = r.ref AND l.amount = r.amount' },
      {
        name: 'by_amount',
        pattern: '1:1',
        when: "ABS(l.amount - r.amount) <= 0.01 AND r.date BETWEEN l.date AND l.date + INTERVAL '3 days'",
        after: ['by_ref'],
      },
      {
        name: 'by_name',
        pattern: '1:1',
        when: 'l.date = r.date AND similarity(UPPER(l.name), UPPER(r.name)) >= 0.5',
        after: ['by_amount'],
      },
    ]),
    schemas,
  )
  t.same(
    reply.passes.map((p) => [p.name, p.phase, p.join, p.scoring]),
    [
      ['by_ref', 1, 'hash', { amount: 'l.amount - r.amount', date: 'r.date - l.date (days)', similarity: null }],
      [
        'by_amount',
        2,
        'band',
        { amount: 'l.amount - r.amount', date: 'r.date - l.date (days)', similarity: 'similarity(l.ref, r.ref)' },
      ],
      [
        'by_name',
        3,
        'hash',
        {
          amount: 'l.amount - r.amount',
          date: 'r.date - l.date (days)',
          similarity: 'similarity(UPPER(l.name), UPPER(r.name))',
        },
      ],
    ],
  )
  t.match(
    reply.text,
    /pass by_amount \(1:1\), phase 2, after by_ref\n {2}band join on one of \(the fewest estimated pairs, chosen on the data when the pass runs\):\n {4}r\.amount in \[l\.amount - 0\.01, l\.amount \+ 0\.01\]\n {4}r\.date in \[l\.date, l\.date \+ INTERVAL '3 days'\]\n/,
  )
  t.same(
    reply.passes[1].bands.map((b) => b.column),
    ['r.amount', 'r.date'],
  )
  t.match(
    reply.text,
    /pass by_name \(1:1\), phase 3, after by_amount\n {2}hash join on l\.date = r\.date\n {2}residual: similarity/,
  )
})
