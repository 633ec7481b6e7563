// validate_recipe's warnings: rules that cannot be right on sample rows and confirmed pairs, and
// what those cannot show. Hand-made samples pin each warning and its numbers; the payouts dataset
// (a payout is 1–5 captures' net amounts less 0.49) pins the 1:1-versus-group case on real rows;
// one test goes through POST /api/ai, deterministic and Claude-backed.

import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import type { ColumnT, RowT } from '../src/ai/schemas.js'
import { validateRecipe } from '../src/ai/tools/validate_recipe.js'
import type { RecipePass } from '../src/recipes/schema.js'
import { testApp } from './helpers/app.js'
import { datasetsDir, datasetsSkip } from './helpers/datasets.js'
import { fakeAnthropic } from './helpers/fake-anthropic.js'

type Pair = { left: number; right: number }
type Answer = ReturnType<typeof validateRecipe.deterministic>

const bankSchema: ColumnT[] = [
  { name: 'txn_id', type: 'string' },
  { name: 'ref', type: 'string' },
  { name: 'amount', type: 'decimal', scale: 2 },
  { name: 'booked', type: 'date' },
]
const invoiceSchema: ColumnT[] = [
  { name: 'inv_id', type: 'string' },
  { name: 'reference', type: 'string' },
  { name: 'total', type: 'decimal', scale: 2 },
  { name: 'issued', type: 'date' },
]
const bank: RowT[] = [
  { txn_id: 'T1', ref: 'INV-1', amount: '100.00', booked: '2025-01-10' },
  { txn_id: 'T2', ref: 'INV-2', amount: '250.50', booked: '2025-01-12' },
  { txn_id: 'T3', ref: 'INV-3', amount: '80.25', booked: '2025-01-15' },
  { txn_id: 'T4', ref: 'INV-4', amount: '120.00', booked: '2025-01-20' },
  { txn_id: 'T5', ref: 'INV-5', amount: '99.99', booked: '2025-01-22' },
]
const invoices: RowT[] = [
  { inv_id: 'I1', reference: 'INV-1', total: '100.00', issued: '2025-01-09' },
  { inv_id: 'I2', reference: 'INV-2', total: '250.50', issued: '2025-01-10' },
  { inv_id: 'I3', reference: 'INV-3', total: '80.25', issued: '2025-01-15' },
  { inv_id: 'I4', reference: 'INV-4', total: '120.00', issued: '2025-01-18' },
  { inv_id: 'I5', reference: 'INV-5', total: '100.00', issued: '2025-01-21' },
]
const AMOUNT = 'ABS(l.amount - r.total) <= 0.01'
const WINDOW = "r.issued BETWEEN l.booked - INTERVAL '3 days' AND l.booked"
const GOOD = `l.ref = r.reference AND ${AMOUNT} AND ${WINDOW}`
const fourPairs: Pair[] = [0, 1, 2, 4].map((k) => ({ left: k, right: k }))

function recipeOf(passes: RecipePass[], sources = ['bank', 'invoices'], keys = ['txn_id', 'inv_id']) {
  return {
    name: 'test',
    left: { source: sources[0], key: [keys[0]] },
    right: { source: sources[1], key: [keys[1]] },
    passes,
  }
}

function bankInput(passes: RecipePass[], confirmed: Pair[] | undefined = fourPairs, left = bank, right = invoices) {
  return {
    recipe: recipeOf(passes),
    schemas: { left: bankSchema, right: invoiceSchema },
    samples: { left, right },
    ...(confirmed ? { confirmed_pairs: confirmed } : {}),
  }
}

/** The deterministic answer, held to the tool's own check as the service holds it. */
function validate(input: ReturnType<typeof bankInput> | Record<string, unknown>): Answer {
  const out = validateRecipe.deterministic(input as never)
  const problems = validateRecipe.check!(out, input as never)
  if (problems.length) throw new Error(problems.join('; '))
  return out
}

const codes = (a: Answer) => a.warnings.map((w) => `${w.pass ?? '-'}:${w.code}`)
const warning = (a: Answer, code: string) => a.warnings.find((w) => w.code === code)

t.test('a recipe with no problems gets no warnings; without samples the answer is as before', async (t) => {
  const clean = validate(bankInput([{ name: 'by_ref', pattern: '1:1', when: GOOD }]))
  t.same(clean, { valid: true, issues: [], suggestions: [], warnings: [] })
  const bare = validate({
    recipe: recipeOf([{ name: 'by_ref', pattern: '1:1', when: 'l.ref = r.reference' }]),
    schemas: { left: bankSchema, right: invoiceSchema },
  })
  t.same(bare, { valid: true, issues: [], suggestions: [], warnings: [] }, 'no samples: no warnings at all')
})

t.test('tolerance_too_wide: an amount tolerance past the median sample amount, exactly', async (t) => {
  // the ten amounts compared: 80.25 80.25 99.99 100 100 100 120 120 250.5 250.5, median 100
  const at = (tol: string) =>
    validate(
      bankInput([
        { name: 'by_ref', pattern: '1:1', when: `l.ref = r.reference AND ABS(l.amount - r.total) <= ${tol}` },
      ]),
    )
  const wide = warning(at('500'), 'tolerance_too_wide')
  t.ok(wide, '500 among amounts of about 100')
  t.match(wide, {
    pass: 'by_ref',
    message: /<= 500 lets amounts 500 apart agree.*median of the 10 sample amounts it compares is 100\b/,
  })
  t.match(wide!.message, /the confirmed pairs differ by at most 0\.01$/, 'says what the confirmed pairs needed')
  t.notOk(warning(at('100'), 'tolerance_too_wide'), 'a tolerance equal to the median is not past it')
  t.ok(warning(at('100.01'), 'tolerance_too_wide'), 'one cent past the median is (decimal-exact)')
  t.notOk(warning(at('0.01'), 'tolerance_too_wide'))

  const relative = validate(
    bankInput([
      { name: 'by_ref', pattern: '1:1', when: 'l.ref = r.reference AND ABS(l.amount - r.total) <= 1 * ABS(l.amount)' },
    ]),
  )
  t.match(warning(relative, 'tolerance_too_wide')?.message, /difference of 100% of an amount/)
  const onePercent = validate(
    bankInput([
      {
        name: 'by_ref',
        pattern: '1:1',
        when: 'l.ref = r.reference AND ABS(l.amount - r.total) <= 0.01 * ABS(l.amount)',
      },
    ]),
  )
  t.notOk(warning(onePercent, 'tolerance_too_wide'))
})

// payments (left) each paying one customer's invoices (right): P1 = I1 + I2, P2 = I3 + I4, P3 = I5
const paySchema: ColumnT[] = [
  { name: 'pay_id', type: 'string' },
  { name: 'customer', type: 'string' },
  { name: 'amount', type: 'decimal', scale: 2 },
]
const invSchema: ColumnT[] = [
  { name: 'inv_id', type: 'string' },
  { name: 'customer', type: 'string' },
  { name: 'total', type: 'decimal', scale: 2 },
]
const payments: RowT[] = [
  { pay_id: 'P1', customer: 'C1', amount: '300.00' },
  { pay_id: 'P2', customer: 'C2', amount: '75.00' },
  { pay_id: 'P3', customer: 'C3', amount: '40.00' },
]
const parts: RowT[] = [
  { inv_id: 'I1', customer: 'C1', total: '100.00' },
  { inv_id: 'I2', customer: 'C1', total: '200.00' },
  { inv_id: 'I3', customer: 'C2', total: '50.00' },
  { inv_id: 'I4', customer: 'C2', total: '25.00' },
  { inv_id: 'I5', customer: 'C3', total: '40.00' },
]
const splitPairs: Pair[] = [
  { left: 0, right: 0 },
  { left: 0, right: 1 },
  { left: 1, right: 2 },
  { left: 1, right: 3 },
  { left: 2, right: 4 },
]
const splitInput = (passes: RecipePass[], confirmed: Pair[] = splitPairs) => ({
  recipe: recipeOf(passes, ['payments', 'invoices'], ['pay_id', 'inv_id']),
  schemas: { left: paySchema, right: invSchema },
  samples: { left: payments, right: parts },
  confirmed_pairs: confirmed,
})
const groupPass = (tolerance: number | string, sum = 'SUM(r.total)'): RecipePass => ({
  name: 'split',
  pattern: '1:N',
  when: 'l.customer = r.customer',
  aggregate: { sum, equals: 'l.amount', tolerance, max_group: 5 },
})

t.test('tolerance_too_wide: a group tolerance past a typical summed record', async (t) => {
  // the five invoice totals 25 40 50 100 200: median 50
  const wide = validate(splitInput([groupPass(60)]))
  t.same(codes(wide), ['split:tolerance_too_wide'])
  t.match(warning(wide, 'tolerance_too_wide')?.message, /tolerance 60 is more than .*median 50 over 5 sample records/)
  t.same(codes(validate(splitInput([groupPass(50)]))), [], 'equal to the median: not past it')
  t.same(codes(validate(splitInput([groupPass(0.01)]))), [])
})

t.test('shape_not_1_1: a 1:1 pass when confirmed pairs share a record', async (t) => {
  const oneToOne = validate(
    splitInput([
      { name: 'exact', pattern: '1:1', when: 'l.customer = r.customer AND ABS(l.amount - r.total) <= 0.01' },
    ]),
  )
  const shape = warning(oneToOne, 'shape_not_1_1')
  t.match(shape, { pass: 'exact', message: /2 groups shaped 1:N: e\.g\. left 0 with right 0, 1\b.*use pattern 1:N/ })
  t.same(shape!.pairs, splitPairs.slice(0, 4), 'the pairs of the two groups, not the single pair')
  // a 1:1 pass for the single pair, then the group pass: the 1:1 pass takes no pair of a group
  const both = validate(
    splitInput([
      { name: 'exact', pattern: '1:1', when: 'l.customer = r.customer AND l.amount = r.total' },
      groupPass(0),
    ]),
  )
  t.notOk(warning(both, 'shape_not_1_1'), 'the groups have their pass, and the 1:1 pass cannot break them')
  // ... but a 1:1 pass loose enough to take a group's pair first breaks the group
  const loose = validate(
    splitInput([
      { name: 'loose', pattern: '1:1', when: 'l.customer = r.customer AND ABS(l.amount - r.total) <= 25' },
      groupPass(0),
    ]),
  )
  t.same(warning(loose, 'shape_not_1_1')?.pairs, splitPairs.slice(2, 4), "P2's group: I3 is within 25 of 75")
})

t.test('excludes_confirmed_pair: which conjunct rejects which confirmed pair, with its values', async (t) => {
  const late = invoices.map((r, k) => (k === 3 ? { ...r, issued: '2025-01-15' } : r))
  const pairs = [0, 1, 2, 3].map((k) => ({ left: k, right: k }))
  const out = validate(bankInput([{ name: 'by_ref', pattern: '1:1', when: GOOD }], pairs, bank, late))
  t.same(codes(out), ['by_ref:excludes_confirmed_pair'])
  const w = warning(out, 'excludes_confirmed_pair')!
  t.same(w.pairs, [{ left: 3, right: 3 }])
  t.equal(
    w.message,
    `"${WINDOW}" rejects 1 confirmed pair that no pass matches: (left 3, right 3): l.booked "2025-01-20", r.issued "2025-01-15"`,
  )
  // another pass matching it: the window is no longer wrong for it
  const covered = validate(
    bankInput(
      [
        { name: 'by_ref', pattern: '1:1', when: GOOD },
        { name: 'late', pattern: '1:1', when: `l.ref = r.reference AND ${AMOUNT}` },
      ],
      pairs,
      bank,
      late,
    ),
  )
  t.notOk(warning(covered, 'excludes_confirmed_pair'))

  // a group sum that misses every confirmed group by the fee it should not take
  const fee = validate(splitInput([groupPass(0, 'SUM(r.total) - 0.49')]))
  const sum = warning(fee, 'excludes_confirmed_pair')!
  t.match(sum.message, /^the group sum SUM\(r\.total\) - 0\.49 = l\.amount within 0 rejects 5 confirmed pairs/)
  t.match(sum.message, /its confirmed group is off by -0\.49/)

  // a probabilistic pass: no blocking rule finds the pair
  const renamed = invoices.map((r, k) => (k === 2 ? { ...r, reference: 'X-3' } : r))
  const prob = validate(
    bankInput(
      [
        {
          name: 'fuzzy',
          pattern: '1:1',
          block: ['l.ref = r.reference'],
          compare: [{ name: 'amount', relative: ['l.amount', 'r.total'] }],
        },
      ],
      fourPairs,
      bank,
      renamed,
    ),
  )
  const blocked = warning(prob, 'excludes_confirmed_pair')!
  t.match(blocked, { pass: 'fuzzy', pairs: [{ left: 2, right: 2 }] })
  t.match(blocked.message, /^no blocking rule finds 1 confirmed pair .*l\.ref "INV-3", r\.reference "X-3"/)
})

t.test('too_many_pairs: a condition admitting far more pairs than records', async (t) => {
  const window = "r.issued BETWEEN l.booked - INTERVAL '30 days' AND l.booked + INTERVAL '30 days'"
  const out = validate(
    bankInput([{ name: 'by_date', pattern: '1:1', when: `${window} AND ABS(l.amount - r.total) <= 100` }]),
  )
  t.match(warning(out, 'too_many_pairs'), {
    pass: 'by_date',
    message: /admits 17 of the 25 pairs of sample rows, more than 3× the 5 a 1:1 pass could match/,
  })
  const keyed = validate(bankInput([{ name: 'by_ref', pattern: '1:1', when: `l.ref = r.reference AND ${window}` }]))
  t.notOk(warning(keyed, 'too_many_pairs'), 'the reference tells records apart')
})

t.test('unsupported_pass and thin_evidence: what the confirmed pairs cannot show', async (t) => {
  const out = validate(
    bankInput([
      { name: 'by_ref', pattern: '1:1', when: GOOD },
      { name: 'after', pattern: '1:1', when: `${AMOUNT} AND r.issued > l.booked` },
    ]),
  )
  t.same(codes(out), ['after:unsupported_pass'], 'every confirmed pair has issued <= booked')

  const two = validate(bankInput([{ name: 'by_ref', pattern: '1:1', when: GOOD }], fourPairs.slice(0, 2)))
  const thin = warning(two, 'thin_evidence')!
  t.equal(thin.pass, 'by_ref')
  t.equal(
    thin.message,
    `"${AMOUNT}", "${WINDOW}" rest on 2 confirmed pairs: fewer than 3 cannot show how wide they must be`,
  )
  const exact = validate(
    bankInput(
      [{ name: 'by_ref', pattern: '1:1', when: 'l.ref = r.reference AND l.amount = r.total' }],
      fourPairs.slice(0, 2),
    ),
  )
  t.notOk(warning(exact, 'thin_evidence'), 'equalities have no width to learn')

  const none = validate(bankInput([{ name: 'by_ref', pattern: '1:1', when: GOOD }], []))
  t.same(codes(none), ['-:thin_evidence'])
  t.match(warning(none, 'thin_evidence')?.message, /^no confirmed pairs/)

  const noAmount = validate(bankInput([{ name: 'by_ref', pattern: '1:1', when: `l.ref = r.reference AND ${WINDOW}` }]))
  t.same(codes(noAmount), ['-:no_amount_check'])
})

t.test('bad positions and values are warnings that name them, never a crash, and never change valid', async (t) => {
  const badPairs = validate(
    bankInput([{ name: 'by_ref', pattern: '1:1', when: GOOD }], [...fourPairs, { left: 9, right: 0 }]),
  )
  t.equal(badPairs.valid, true)
  t.same(codes(badPairs), ['-:invalid_pair'], 'the four good pairs are still judged (no thin evidence)')
  t.match(warning(badPairs, 'invalid_pair'), {
    message: /1 confirmed pair names a row the samples do not have \(5 left rows, 5 right rows\): \(left 9, right 0\)/,
    pairs: [{ left: 9, right: 0 }],
  })
  const unreadable = bank.map((r, k) => (k === 3 ? { ...r, amount: 'abc' } : r))
  const badValue = validate(bankInput([{ name: 'by_ref', pattern: '1:1', when: GOOD }], fourPairs, unreadable))
  t.same(codes(badValue), ['-:invalid_sample'])
  t.match(warning(badValue, 'invalid_sample')?.message, /left row 3 amount "abc" is not a decimal/)
  const noDates = bank.map(({ booked: _, ...r }) => r)
  const unjudged = validate(bankInput([{ name: 'by_ref', pattern: '1:1', when: GOOD }], fourPairs, noDates))
  t.same(codes(unjudged), ['by_ref:not_judged'])
  t.match(warning(unjudged, 'not_judged')?.message, /the samples have no l\.booked/)
  const pairsAlone = validate({
    recipe: recipeOf([{ name: 'by_ref', pattern: '1:1', when: GOOD }]),
    schemas: { left: bankSchema, right: invoiceSchema },
    confirmed_pairs: fourPairs,
  })
  t.same(codes(pairsAlone), ['-:invalid_pair'])
  const invalid = validate(
    bankInput([{ name: 'by_ref', pattern: '1:1', when: GOOD.replace('r.reference', 'r.referense') }]),
  )
  t.equal(invalid.valid, false)
  t.same(invalid.warnings, [], 'a pass the validator rejects is not judged again')
})

t.test("the Claude path's check requires every deterministic warning", async (t) => {
  const input = bankInput([
    { name: 'by_ref', pattern: '1:1', when: 'l.ref = r.reference AND ABS(l.amount - r.total) <= 500' },
  ])
  const truth = validateRecipe.deterministic(input as never)
  t.same(validateRecipe.check!(truth, input as never), [])
  const silent = { ...truth, warnings: [] }
  t.same(validateRecipe.check!(silent, input as never), [
    `missing warning tolerance_too_wide for pass "by_ref": ${truth.warnings[0].message}`,
  ])
  const wrongPass = { ...truth, warnings: [{ ...truth.warnings[0], pass: null }] }
  t.equal(validateRecipe.check!(wrongPass, input as never).length, 1, 'the warning belongs to its pass')
})

t.test(
  'payouts: a 1:1 recipe for N:1 groups is warned about, the group-sum recipe is not',
  { skip: datasetsSkip },
  async (t) => {
    const dir = join(datasetsDir, 'payouts')
    const csv = async (file: string) => {
      const [header, ...lines] = (await readFile(join(dir, file), 'utf8')).trim().split(/\r?\n/)
      const names = header.split(',')
      return lines.map((line) => Object.fromEntries(line.split(',').map((v, k) => [names[k], v])))
    }
    const [captures, payouts, truth] = await Promise.all(['captures.csv', 'payouts.csv', 'truth.csv'].map(csv))
    const paid = payouts.filter((p) => truth.some((l) => l.payout_id === p.payout_id)).slice(0, 3)
    const left: RowT[] = []
    const confirmed: Pair[] = []
    paid.forEach((p, j) => {
      for (const link of truth.filter((l) => l.payout_id === p.payout_id)) {
        left.push(captures.find((c) => c.capture_id === link.capture_id)!)
        confirmed.push({ left: left.length - 1, right: j })
      }
    })
    t.ok(confirmed.length > paid.length, `${confirmed.length} captures in 3 payouts: groups, not pairs`)
    const schemas = {
      left: [
        { name: 'capture_id', type: 'string' },
        { name: 'seller_id', type: 'string' },
        { name: 'order_id', type: 'string' },
        { name: 'captured_at', type: 'timestamp' },
        { name: 'currency', type: 'string' },
        { name: 'gross_amount', type: 'decimal' },
        { name: 'fee_amount', type: 'decimal' },
        { name: 'net_amount', type: 'decimal' },
        { name: 'status', type: 'string' },
      ] as ColumnT[],
      right: [
        { name: 'payout_id', type: 'string' },
        { name: 'seller_id', type: 'string' },
        { name: 'payout_date', type: 'date' },
        { name: 'currency', type: 'string' },
        { name: 'amount', type: 'decimal' },
      ] as ColumnT[],
    }
    const input = (passes: RecipePass[]) => ({
      recipe: recipeOf(passes, ['captures', 'payouts'], ['capture_id', 'payout_id']),
      schemas,
      samples: { left, right: paid },
      confirmed_pairs: confirmed,
    })
    const oneToOne = validate(
      input([
        {
          name: 'by_seller',
          pattern: '1:1',
          when: 'l.seller_id = r.seller_id AND ABS(l.net_amount - r.amount) <= 4300',
        },
      ]),
    )
    t.ok(codes(oneToOne).includes('by_seller:shape_not_1_1'), codes(oneToOne).join(' '))
    t.ok(codes(oneToOne).includes('by_seller:tolerance_too_wide'))
    t.same(warning(oneToOne, 'shape_not_1_1')?.pairs, confirmed, 'every confirmed pair is in a group')
    const grouped = validate(
      input([
        {
          name: 'payout',
          pattern: 'N:1',
          when: "l.seller_id = r.seller_id AND l.currency = r.currency AND r.payout_date BETWEEN CAST(l.captured_at AS date) AND CAST(l.captured_at AS date) + INTERVAL '7 days'",
          aggregate: { sum: 'SUM(l.net_amount) - 0.49', equals: 'r.amount', tolerance: 0, max_group: 5 },
        },
      ]),
    )
    t.same(codes(grouped), [], 'the group sum explains every confirmed group')
  },
)

t.test('POST /api/ai validate_recipe: warnings deterministic, and the Claude path must pass the same', async (t) => {
  const input = bankInput([
    { name: 'by_ref', pattern: '1:1', when: 'l.ref = r.reference AND ABS(l.amount - r.total) <= 500' },
  ])
  const { app } = await testApp(t)
  const res = await app.inject({ method: 'POST', url: '/api/ai', payload: { tool: 'validate_recipe', input } })
  t.equal(res.statusCode, 200, res.body)
  t.match(res.json(), {
    engine: 'deterministic',
    result: { valid: true, warnings: [{ pass: 'by_ref', code: 'tolerance_too_wide', message: /median .* is 100\b/ }] },
  })
  const truth = res.json().result

  const fake = await fakeAnthropic(t)
  const { app: llm } = await testApp(t, {
    env: { AI_MODE: 'llm', ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: fake.baseURL, AI_MAX_RETRIES: '0' },
  })
  fake.script({ text: JSON.stringify({ ...truth, warnings: [] }) }, { text: JSON.stringify(truth) })
  const answered = await llm.inject({ method: 'POST', url: '/api/ai', payload: { tool: 'validate_recipe', input } })
  t.equal(answered.statusCode, 200, answered.body)
  t.same(answered.json(), { result: truth, engine: 'llm' })
  t.equal(fake.requests.length, 2, 'the answer without the warning was sent back')
  t.match(JSON.stringify(fake.requests[1].messages.at(-1)), /missing warning tolerance_too_wide for pass \\"by_ref\\"/)
})
