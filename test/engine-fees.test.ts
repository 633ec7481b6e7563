// Fees and offsets in group sums: `aggregate.sum` as an expression around one SUM(...), `equals`
// as an expression of the other side, one-sided tolerances, and the search taking an exact fit
// before a group that is merely within tolerance. All of it in exact decimal units.

import fc from 'fast-check'
import t from 'tap'
import { tableFromRows } from '../src/engine/load/json.js'
import type { RecipeAggregate, RecipePass } from '../src/recipes/schema.js'
import { evidence, pairs, partitionProblems, recipeOf, type Row, runRows } from './helpers/engine.js'

const payoutPass = (aggregate: RecipeAggregate, pattern: RecipePass['pattern'] = 'N:1'): RecipePass => ({
  name: 'payout',
  pattern,
  when: 'l.seller = r.seller',
  aggregate,
})

/** The match's pairs and amount deltas ("L1+L2|R1 0.00"), sorted. */
const withDeltas = (e: ReturnType<typeof runRows>) =>
  e.matches.map((m) => `${m.left_keys.join('+')}|${m.right_keys.join('+')} ${m.deltas.amount}`).sort()

t.test('a fixed fee taken once per group: SUM(l.net) - 0.49 = r.amount', async (t) => {
  const captures: Row[] = [
    { id: 'C1', seller: 'S1', net: '10.00' },
    { id: 'C2', seller: 'S1', net: '20.49' },
    { id: 'C3', seller: 'S1', net: '29.51' },
    { id: 'C4', seller: 'S2', net: '5.00' },
  ]
  const payouts: Row[] = [
    { id: 'P1', seller: 'S1', amount: '30.00' },
    { id: 'P2', seller: 'S2', amount: '4.51' },
  ]
  const e = runRows([payoutPass({ sum: 'SUM(l.net) - 0.49', equals: 'r.amount' })], captures, payouts)
  // C3 alone is 29.51 - 0.49 = 29.02, not 30.00: the fee is not a tolerance
  t.same(withDeltas(e), ['C1+C2|P1 0.00', 'C4|P2 0.00'])
  t.same(partitionProblems(e, 4, 2), [])
  // without the fee no group fits exactly
  t.same(pairs(runRows([payoutPass({ sum: 'l.net', equals: 'r.amount' })], captures, payouts)), [])
})

t.test('the same fee written per record, per group, and on the other side', async (t) => {
  const captures: Row[] = [
    { id: 'C1', seller: 'S1', gross: '103.00', fee: '3.00' },
    { id: 'C2', seller: 'S1', gross: '51.50', fee: '1.50' },
  ]
  const payouts: Row[] = [{ id: 'P1', seller: 'S1', amount: '149.51' }]
  const e1 = runRows([payoutPass({ sum: 'SUM(l.gross - l.fee) - 0.49', equals: 'r.amount' })], captures, payouts)
  t.same(withDeltas(e1), ['C1+C2|P1 0.00'])
  // the fee moved to equals: the captures' nets make the payout plus its fee
  const e2 = runRows([payoutPass({ sum: 'SUM(l.gross - l.fee)', equals: 'r.amount + 0.49' })], captures, payouts)
  t.same(withDeltas(e2), ['C1+C2|P1 0.00'])
})

t.test('a proportional fee: SUM(r.amount) * 0.98 = l.amount, exact at scale 4', async (t) => {
  const e = runRows(
    [
      {
        name: 'split',
        pattern: '1:N',
        when: 'l.customer = r.customer',
        aggregate: { sum: 'SUM(r.amount) * 0.98', equals: 'l.amount' },
      },
    ],
    [
      { id: 'L1', customer: 'C1', amount: '98.00' },
      { id: 'L2', customer: 'C2', amount: '49.01' },
    ],
    [
      { id: 'R1', customer: 'C1', amount: '60.00' },
      { id: 'R2', customer: 'C1', amount: '40.00' },
      { id: 'R3', customer: 'C1', amount: '98.00' },
      { id: 'R4', customer: 'C2', amount: '50.01' },
    ],
  )
  // 50.01 × 0.98 = 49.0098: 0.0002 short of 49.01, which tolerance 0 does not allow
  t.same(withDeltas(e), ['L1|R1+R2 0.0000'])
  const loose = runRows(
    [
      {
        name: 'split',
        pattern: '1:N',
        when: 'l.customer = r.customer',
        aggregate: { sum: 'SUM(r.amount) * 0.98', equals: 'l.amount', tolerance: '0.0002' },
      },
    ],
    [{ id: 'L2', customer: 'C2', amount: '49.01' }],
    [{ id: 'R4', customer: 'C2', amount: '50.01' }],
  )
  // left minus right: 49.01 - 49.0098
  t.same(withDeltas(loose), ['L2|R4 0.0002'])
})

t.test('a fixed-plus-percent fee on the other side: equals r.gross * 0.971 - 0.30', async (t) => {
  const e = runRows(
    [payoutPass({ sum: 'SUM(l.net)', equals: 'r.gross * 0.971 - 0.30' })],
    [
      { id: 'C1', seller: 'S1', net: '50.00' },
      { id: 'C2', seller: 'S1', net: '46.80' },
      { id: 'C3', seller: 'S1', net: '47.10' },
    ],
    // 100.00 × 0.971 - 0.30 = 96.80
    [{ id: 'P1', seller: 'S1', gross: '100.00' }],
  )
  t.same(withDeltas(e), ['C1+C2|P1 0.00000'])
})

t.test('negative amounts and a negative factor stay exact', async (t) => {
  // a refund inside a payout: 100.00 - 20.00 - 0.49 = 79.51
  const refund = runRows(
    [payoutPass({ sum: 'SUM(l.net) - 0.49', equals: 'r.amount' })],
    [
      { id: 'C1', seller: 'S1', net: '100.00' },
      { id: 'C2', seller: 'S1', net: '-20.00' },
      { id: 'C3', seller: 'S1', net: '-19.00' },
    ],
    [{ id: 'P1', seller: 'S1', amount: '79.51' }],
  )
  t.same(withDeltas(refund), ['C1+C2|P1 0.00'])
  // a debit of -50.00 settled by two positive credits: -SUM(r.amount) = l.amount
  for (const sum of ['-SUM(r.amount)', 'SUM(r.amount) * -1', '0 - SUM(r.amount)']) {
    const e = runRows(
      [{ name: 'reversal', pattern: '1:N', when: 'l.account = r.account', aggregate: { sum, equals: 'l.amount' } }],
      [{ id: 'L1', account: 'A', amount: '-50.00' }],
      [
        { id: 'R1', account: 'A', amount: '20.00' },
        { id: 'R2', account: 'A', amount: '30.00' },
        { id: 'R3', account: 'A', amount: '25.00' },
      ],
    )
    t.same(withDeltas(e), ['L1|R1+R2 0.00'], sum)
  }
})

t.test('15 significant digits: sums, fees and rates decide to the cent', async (t) => {
  const fee = (amount: string, tolerance?: RecipeAggregate['tolerance']) =>
    runRows(
      [payoutPass({ sum: 'SUM(l.net) - 0.49', equals: 'r.amount', ...(tolerance === undefined ? {} : { tolerance }) })],
      [
        { id: 'C1', seller: 'S1', net: '1234567890123.45' },
        { id: 'C2', seller: 'S1', net: '2234567890123.45' },
      ],
      [{ id: 'P1', seller: 'S1', amount }],
    )
  t.same(withDeltas(fee('3469135780246.41')), ['C1+C2|P1 0.00'])
  t.same(pairs(fee('3469135780246.42')), [], 'a cent more is not the sum')
  t.same(pairs(fee('3469135780246.40')), [], 'a cent less is not the sum')
  // one-sided: the group's value may be a cent above the payout, never below
  t.same(withDeltas(fee('3469135780246.40', { above: '0.01' })), ['C1+C2|P1 0.01'])
  t.same(pairs(fee('3469135780246.42', { above: '0.01' })), [])

  // 9999999999999.50 × 0.98 = 9799999999999.51: units × 98 is past 2^53, the equation is not
  const rate = (amount: string) =>
    runRows(
      [
        {
          name: 'split',
          pattern: '1:N',
          when: 'l.c = r.c',
          aggregate: { sum: 'SUM(r.amount) * 0.98', equals: 'l.amount' },
        },
      ],
      [{ id: 'L1', c: 'C', amount }],
      [
        { id: 'R1', c: 'C', amount: '4999999999999.50' },
        { id: 'R2', c: 'C', amount: '5000000000000.00' },
      ],
    )
  t.same(withDeltas(rate('9799999999999.51')), ['L1|R1+R2 0.0000'])
  t.same(pairs(rate('9799999999999.52')), [])
  t.same(pairs(rate('9799999999999.50')), [])
})

t.test('a one-sided tolerance: the sum may be above equals by up to 0.50, never below', async (t) => {
  const payouts: Row[] = [
    { id: 'P1', seller: 'S1', amount: '30.00' },
    { id: 'P2', seller: 'S2', amount: '30.00' },
    { id: 'P3', seller: 'S3', amount: '30.00' },
  ]
  const captures: Row[] = [
    { id: 'C1', seller: 'S1', net: '30.30' }, // 0.30 above
    { id: 'C2', seller: 'S2', net: '29.70' }, // 0.30 below
    { id: 'C3', seller: 'S3', net: '30.51' }, // 0.51 above
  ]
  for (const tolerance of [{ below: 0, above: 0.5 }, { above: '0.50' }]) {
    const e = runRows([payoutPass({ sum: 'l.net', equals: 'r.amount', tolerance })], captures, payouts)
    // N:1 puts the group on the left: left minus right is the group above the payout
    t.same(withDeltas(e), ['C1|P1 0.30'], JSON.stringify(tolerance))
  }
  const below = runRows(
    [payoutPass({ sum: 'l.net', equals: 'r.amount', tolerance: { below: '0.30', above: 0 } })],
    captures,
    payouts,
  )
  t.same(withDeltas(below), ['C2|P2 -0.30'])
  // 1:N: the group is on the right, so a group above the left record has a negative delta
  const mirrored = runRows(
    [payoutPass({ sum: 'r.net', equals: 'l.amount', tolerance: { above: 0.5 } }, '1:N')],
    payouts,
    captures,
  )
  t.same(withDeltas(mirrored), ['P1|C1 -0.30'])
  // a symmetric number still means either way
  const both = runRows([payoutPass({ sum: 'l.net', equals: 'r.amount', tolerance: 0.3 })], captures, payouts)
  t.same(withDeltas(both), ['C1|P1 0.30', 'C2|P2 -0.30'])
})

t.test('an exact fit beats a smaller group that is only within tolerance', async (t) => {
  const split = (tolerance: number) => ({
    name: 'split',
    pattern: '1:N' as const,
    when: 'l.customer = r.customer',
    aggregate: { sum: 'SUM(r.amount)', equals: 'l.amount', tolerance },
  })
  const left = [{ id: 'L1', customer: 'C1', amount: '100.00' }]
  const right = [
    { id: 'R1', customer: 'C1', amount: '99.50' },
    { id: 'R2', customer: 'C1', amount: '60.00' },
    { id: 'R3', customer: 'C1', amount: '40.00' },
  ]
  t.same(withDeltas(runRows([split(1)], left, right)), ['L1|R2+R3 0.00'], 'the exact pair, not the close single')
  t.same(withDeltas(runRows([split(0.25)], left, [...right, { id: 'R4', customer: 'C1', amount: '100.10' }])), [
    'L1|R2+R3 0.00',
  ])
  // with no exact fit the smallest group wins, then the closest
  t.same(
    withDeltas(
      runRows([split(1)], left, [
        right[0],
        { id: 'R5', customer: 'C1', amount: '50.10' },
        { id: 'R6', customer: 'C1', amount: '49.80' },
      ]),
    ),
    ['L1|R1 0.50'],
  )
  // two exact fits of one size are a tie held for review
  const tie = runRows([split(1)], left, [
    ...right,
    { id: 'R7', customer: 'C1', amount: '70.00' },
    { id: 'R8', customer: 'C1', amount: '30.00' },
  ])
  t.same(pairs(tie), ['L1|R2+R3+R7+R8'])
  t.equal(tie.matches[0].ambiguous, true)
})

t.test(
  "exact fits are taken for every record before any near fit: a near group does not take another's exact member",
  async (t) => {
    const split = {
      name: 'split',
      pattern: '1:N' as const,
      when: 'l.customer = r.customer',
      aggregate: { sum: 'SUM(r.amount)', equals: 'l.amount', tolerance: 0.5 },
    }
    const e = runRows(
      [split],
      [
        // searched first (same candidates, lower row): its closest fit is R1, which L2 equals
        { id: 'L1', customer: 'C1', amount: '50.40' },
        { id: 'L2', customer: 'C1', amount: '50.00' },
      ],
      [
        { id: 'R1', customer: 'C1', amount: '50.00' },
        { id: 'R2', customer: 'C1', amount: '50.85' },
      ],
    )
    t.same(withDeltas(e), ['L1|R2 -0.45', 'L2|R1 0.00'])
  },
)

t.test('the search bounds are counted once per record, exact round or not', async (t) => {
  // 30 candidates of 7.00 (no group makes 100.00): the exact round and the tolerance round both cap
  const e = runRows(
    [
      {
        name: 'split',
        pattern: '1:N',
        when: 'l.customer = r.customer',
        aggregate: { sum: 'SUM(r.amount) - 0.50', equals: 'l.amount', tolerance: 0.25, max_group: 3 },
      },
    ],
    [{ id: 'P1', customer: 'C1', amount: '100.00' }],
    Array.from({ length: 30 }, (_, n) => ({ id: `D${n}`, customer: 'C1', amount: '7.00' })),
  )
  t.same(pairs(e), [])
  t.same(e.result.summary.passes[0].search, { candidates_capped: 1, visits_exhausted: 0, groups_over_max: 0 })
})

t.test('N:M sums equals over its side of the group, the fee once per group', async (t) => {
  const e = evidence(
    recipeOf([
      {
        name: 'monthly',
        pattern: 'N:M',
        when: 'l.customer = r.customer',
        aggregate: { sum: 'SUM(r.amount) - 1.00', equals: 'l.amount', tolerance: 0 },
      },
    ]),
    tableFromRows([
      { id: 'L1', customer: 'C1', amount: '30.00' },
      { id: 'L2', customer: 'C1', amount: '20.00' },
      { id: 'L3', customer: 'C2', amount: '10.00' },
    ]),
    tableFromRows([
      { id: 'R1', customer: 'C1', amount: '25.50' },
      { id: 'R2', customer: 'C1', amount: '25.50' },
      { id: 'R3', customer: 'C2', amount: '10.00' },
    ]),
  )
  // C1: 51.00 - 1.00 = 50.00; C2: 10.00 - 1.00 is not 10.00
  t.same(withDeltas(e), ['L1+L2|R1+R2 0.00'])
})

t.test('explain shows the sum with SUM written out and both sides of the tolerance', async (t) => {
  const { explainRecipe } = await import('../src/recipes/explain.js')
  const schemas = {
    l: [
      { name: 'seller', type: 'string' as const, nullable: false },
      { name: 'net', type: 'decimal' as const, nullable: false, scale: 2 },
    ],
    r: [
      { name: 'seller', type: 'string' as const, nullable: false },
      { name: 'amount', type: 'decimal' as const, nullable: false, scale: 2 },
    ],
  }
  const explained = explainRecipe(
    recipeOf([
      payoutPass({ sum: 'SUM(l.net) - 0.490', equals: 'r.amount', tolerance: { above: '0.50' } }),
      { ...payoutPass({ sum: 'l.net', equals: 'r.amount', tolerance: 0.01 }), name: 'bare' },
    ]),
    schemas,
  )
  t.same(explained.passes[0].aggregate, {
    sum: 'SUM(l.net) - 0.49',
    equals: 'r.amount',
    tolerance: 'below 0, above 0.50',
    below: '0',
    above: '0.50',
    max_group: 5,
  })
  t.match(explained.text, 'groups: SUM(l.net) - 0.49 = r.amount up to 0.50 above and 0 below, at most 5 records')
  t.match(explained.passes[1].aggregate, { sum: 'SUM(l.net)', tolerance: '0.01', below: '0.01', above: '0.01' })
  t.match(explained.text, 'groups: SUM(l.net) = r.amount ± 0.01')
})

t.test('the window of sums is the equation solved exactly (property, against BigInt arithmetic)', async (t) => {
  const { GroupEquation } = await import('../src/engine/match/equation.js')
  const decimalArb = (maxScale: number, min: number, max: number) =>
    fc.record({
      units: fc.bigInt({ min: BigInt(min), max: BigInt(max) }),
      scale: fc.integer({ min: 0, max: maxScale }),
    })
  await fc.assert(
    fc.property(
      // a factor of 1 (the common case, computed without BigInt) as often as any other
      fc.oneof(
        fc.constantFrom({ units: 1n, scale: 0 }, { units: 10n, scale: 1 }),
        decimalArb(3, -2000, 2000).filter((f) => f.units !== 0n),
      ),
      decimalArb(3, -5000, 5000),
      fc.integer({ min: 0, max: 3 }),
      fc.integer({ min: 0, max: 3 }),
      decimalArb(3, 0, 300),
      decimalArb(3, 0, 300),
      fc.integer({ min: -100_000, max: 100_000 }),
      (factor, offset, eachScale, equalsScale, below, above, equals) => {
        const eq = new GroupEquation({ factor, offset }, eachScale, equalsScale, { below, above })
        const w = eq.window(equals)
        // every value at one scale fine enough for all terms, tolerance included
        const s = Math.max(factor.scale + eachScale, offset.scale, equalsScale, below.scale, above.scale)
        const at = (units: bigint, scale: number) => units * 10n ** BigInt(s - scale)
        const value = (S: number) =>
          at(factor.units * BigInt(S), factor.scale + eachScale) + at(offset.units, offset.scale)
        const e = at(BigInt(equals), equalsScale)
        const center = Math.round(w.base + w.frac)
        for (let S = Math.min(w.lo, center) - 3; S <= Math.max(w.hi, center) + 3; S++) {
          if (Math.abs(S - center) > 2000 && S > w.lo + 3 && S < w.hi - 3) continue
          const d = value(S) - e
          const fits = d >= -at(below.units, below.scale) && d <= at(above.units, above.scale)
          if (fits !== (S >= w.lo && S <= w.hi)) return false
          if ((d === 0n) !== (w.exact === S)) return false
          // the reported delta is the same difference at the equation's scale
          if (BigInt(eq.delta(equals, S)) * 10n ** BigInt(s - eq.scale) !== d) return false
        }
        return true
      },
    ),
    { numRuns: 300, seed: 15 },
  )
  t.pass('the window, the exact sum and the deltas agree with BigInt arithmetic')
  // past 2^52 a factor of 1 leaves its Number shortcut for BigInt, and stays exact
  const big = new GroupEquation({ factor: { units: 1n, scale: 0 }, offset: { units: -49n, scale: 2 } }, 2, 2, {
    below: { units: 0n, scale: 0 },
    above: { units: 1n, scale: 2 },
  })
  const equals = 2 ** 53 - 100 // above the shortcut's limit (2^52), its window still below 2^53
  t.same(big.window(equals), { lo: equals + 49, hi: equals + 50, exact: equals + 49, base: equals + 49, frac: 0 })
  t.same(big.window(1000), { lo: 1049, hi: 1050, exact: 1049, base: 1049, frac: 0 })
})

t.test('every group a run emits satisfies its equation exactly (property, random fees and rates)', async (t) => {
  const FACTORS = ['1', '0.98', '0.971', '-1', '2']
  let groups = 0
  await fc.assert(
    fc.property(
      fc.array(fc.array(fc.integer({ min: -500, max: 20_000 }), { minLength: 1, maxLength: 4 }), {
        minLength: 1,
        maxLength: 8,
      }),
      fc.constantFrom(...FACTORS),
      fc.integer({ min: 0, max: 200 }),
      fc.integer({ min: 0, max: 60 }),
      fc.integer({ min: 0, max: 60 }),
      fc.array(fc.integer({ min: -3, max: 3 }), { minLength: 8, maxLength: 8 }),
      (payoutGroups, factor, feeCents, belowCents, aboveCents, noise) => {
        const money = (cents: number | bigint) => {
          const c = BigInt(cents)
          const a = c < 0n ? -c : c
          return `${c < 0n ? '-' : ''}${a / 100n}.${String(a % 100n).padStart(2, '0')}`
        }
        const fUnits = BigInt(factor.replace('.', ''))
        const fScale = factor.includes('.') ? factor.length - factor.indexOf('.') - 1 : 0
        const captures: Row[] = []
        const payouts: Row[] = []
        payoutGroups.forEach((nets, p) => {
          for (const net of nets) captures.push({ id: `C${captures.length}`, seller: `S${p % 3}`, net: money(net) })
          // the payout's amount: the group's value rounded to cents, then moved by a few cents
          const value = fUnits * BigInt(nets.reduce((a, b) => a + b, 0)) - BigInt(feeCents) * 10n ** BigInt(fScale)
          const cents = value / 10n ** BigInt(fScale) + BigInt(noise[p])
          payouts.push({ id: `P${p}`, seller: `S${p % 3}`, amount: money(cents) })
        })
        const e = runRows(
          [
            payoutPass({
              sum: `SUM(l.net) * ${factor} - ${money(feeCents)}`,
              equals: 'r.amount',
              tolerance: { below: money(belowCents), above: money(aboveCents) },
              max_group: 4,
            }),
          ],
          captures,
          payouts,
        )
        if (partitionProblems(e, captures.length, payouts.length).length) return false
        const cents = (text: string) => BigInt(text.replace('.', ''))
        for (const m of e.matches) {
          if (m.ambiguous) continue
          groups++
          const sum = m.left_keys.reduce((a, k) => a + cents(captures[Number(k.slice(1))].net as string), 0n)
          const amount = cents(payouts[Number(m.right_keys[0].slice(1))].amount as string)
          // at scale 2 + fScale: value - equals within [-below, above]
          const shift = 10n ** BigInt(fScale)
          const d = fUnits * sum - BigInt(feeCents) * shift - amount * shift
          if (d < -BigInt(belowCents) * shift || d > BigInt(aboveCents) * shift) return false
          if (m.deltas.amount === null || BigInt(m.deltas.amount.replace('.', '')) !== d) return false
        }
        return true
      },
    ),
    { numRuns: 150, seed: 2015 },
  )
  t.ok(groups > 100, `${groups} groups checked`)
})
