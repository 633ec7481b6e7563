// `prefer` on a 1:1 pass: a tie is resolved by rule instead of held as ambiguous, the record left
// over stays unmatched and says whom it tied with; validation and explain show it.

import t from 'tap'
import { tableFromRows } from '../src/engine/load/json.js'
import { explainRecipe } from '../src/recipes/explain.js'
import type { RecipePass } from '../src/recipes/schema.js'
import { structuralIssues, validateRecipe } from '../src/recipes/validate.js'
import { pairs, partitionProblems, recipeOf, runRows } from './helpers/engine.js'

const WINDOW =
  "l.ref = r.ref AND ABS(l.amount - r.amount) <= 1.00 AND r.date BETWEEN l.date - INTERVAL '7 days' AND l.date + INTERVAL '7 days'"

// three payments that score alike for L1 (0.75: an amount 1% off on the day, or the amount exact
// a week off) and each first by another rule: R1 by key, R2 by amount (R3 too, later key), R3 by date
const invoice = [{ id: 'L1', ref: 'A', amount: '100.00', date: '2024-01-10' }]
const payments = [
  { id: 'R1', ref: 'A', amount: '101.00', date: '2024-01-10' },
  { id: 'R2', ref: 'A', amount: '100.00', date: '2024-01-17' },
  { id: 'R3', ref: 'A', amount: '100.00', date: '2024-01-03' },
]
const pass = (prefer?: RecipePass['prefer']): RecipePass => ({ name: 'p', pattern: '1:1', when: WINDOW, prefer })

t.test('without prefer, the three equally good payments and the invoice are one ambiguous match', async (t) => {
  const e = runRows([pass()], invoice, payments)
  t.same(pairs(e), ['L1|R1+R2+R3'])
  t.equal(e.matches[0].ambiguous, true)
  t.equal(e.matches[0].score, 0.75)
  t.match(e.result.summary.passes[0].assignment, { components: 1, exact: 1, ties_resolved: 0 })
})

t.test('prefer picks one payment by its rule; the others stay unmatched, tied with the one preferred', async (t) => {
  const chosen: Record<string, string> = { first_key: 'R1', closest_amount: 'R2', earliest: 'R3' }
  for (const [prefer, winner] of Object.entries(chosen)) {
    const e = runRows([pass(prefer as RecipePass['prefer'])], invoice, payments)
    t.same(pairs(e), [`L1|${winner}`], prefer)
    t.equal(e.matches[0].ambiguous, false)
    t.equal(e.matches[0].score, 0.75)
    t.same(partitionProblems(e, 1, 3), [])
    t.same(
      e.unmatchedRight.map((u) => [u.record_key, u.closest_candidate, u.tied_with, u.failed]),
      ['R1', 'R2', 'R3'].filter((r) => r !== winner).map((r) => [r, 'L1', winner, { pass: 'p', conjunct: '' }]),
    )
    t.match(e.unmatchedRight[0].reason, `tied with ${winner} for L1 in pass p; prefer ${prefer} chose ${winner}`)
    t.match(e.result.summary.passes[0].assignment, { ties_resolved: 1 })
    t.equal(e.result.summary.ambiguous, 0)
  }
})

t.test('two identical invoices and two identical payments: prefer pairs them first with first', async (t) => {
  const invoices = ['I2', 'I1'].map((id) => ({ id, ref: 'A', amount: '50.00', date: '2024-03-01' }))
  const twins = ['P1', 'P2'].map((id) => ({ id, ref: 'A', amount: '50.00', date: '2024-03-01' }))
  const held = runRows([pass()], invoices, twins)
  t.same(pairs(held), ['I2+I1|P1+P2'], 'records in the order read')
  t.equal(held.matches[0].ambiguous, true)
  for (const prefer of ['first_key', 'earliest', 'closest_amount'] as const) {
    const e = runRows([pass(prefer)], invoices, twins)
    t.same(pairs(e), ['I1|P1', 'I2|P2'], prefer)
    t.same(e.unmatchedLeft, [])
  }
  // a third invoice has no payment left: it is the one passed over, tied with the first
  const three = runRows([pass('first_key')], [...invoices, { ...invoices[0], id: 'I0' }], twins)
  t.same(pairs(three), ['I0|P1', 'I1|P2'])
  t.same(
    three.unmatchedLeft.map((u) => [u.record_key, u.tied_with, u.closest_candidate]),
    [['I2', 'I0', 'P1']],
  )
})

t.test('a record prefer passed over can still match in a later pass', async (t) => {
  const later: RecipePass = { name: 'loose', pattern: '1:1', when: 'l.ref = r.ref AND ABS(l.amount - r.amount) <= 5' }
  const e = runRows(
    [pass('first_key'), later],
    [
      { id: 'L1', ref: 'A', amount: '10.00', date: '2024-01-01' },
      { id: 'L2', ref: 'A', amount: '10.00', date: '2024-01-01' },
    ],
    [
      { id: 'R1', ref: 'A', amount: '10.00', date: '2024-01-01' },
      { id: 'R2', ref: 'A', amount: '13.00', date: '2024-05-01' },
    ],
  )
  t.same(
    e.matches.map((m) => [m.pass, ...m.left_keys, ...m.right_keys]),
    [
      ['p', 'L1', 'R1'],
      ['loose', 'L2', 'R2'],
    ],
  )
  t.same(e.unmatchedLeft, [])
})

const schemas = {
  l: tableFromRows([{ id: 'a', ref: 'x', amount: '1.00', date: '2024-01-01', n: 1 }]).columns,
  r: tableFromRows([{ id: 'a', ref: 'x', amount: '1.00', date: '2024-01-01', n: 1 }]).columns,
}

t.test('validation: prefer only on 1:1 passes, a known value, and a column to read', async (t) => {
  const recipe = recipeOf([
    { name: 'ok', pattern: '1:1', when: WINDOW, prefer: 'earliest' },
    {
      name: 'grouped',
      pattern: '1:N',
      when: 'l.ref = r.ref',
      aggregate: { sum: 'r.amount', equals: 'l.amount' },
      prefer: 'first_key',
    },
  ])
  const report = validateRecipe(recipe, schemas)
  t.same(
    report.issues.map((i) => [i.pass, i.code]),
    [['grouped', 'unexpected_prefer']],
  )
  // no date anywhere in the recipe: earliest has nothing to read; first_key always works
  const noDates = recipeOf([
    { name: 'by_ref', pattern: '1:1', when: 'l.ref = r.ref AND l.n = r.n', prefer: 'earliest' },
    { name: 'by_key', pattern: '1:1', when: 'l.ref = r.ref', prefer: 'first_key' },
  ])
  t.match(validateRecipe(noDates, schemas).issues, [
    { pass: 'by_ref', code: 'invalid_prefer', message: /earliest.*compares a date/ },
  ])
  t.equal(validateRecipe(noDates, schemas).issues.length, 1)
  const unknown = structuralIssues(
    { ...recipeOf([{ name: 'p', pattern: '1:1', when: WINDOW }]), passes: [{ ...pass(), prefer: 'latest' }] },
    { FilterCondition: {} },
  )
  t.match(unknown, [
    { pass: 'p', code: 'invalid_prefer', message: 'prefer "latest" is not one of earliest, first_key, closest_amount' },
  ])
})

t.test('explain shows how a 1:1 pass assigns and what its preference reads', async (t) => {
  const ex = explainRecipe(recipeOf([pass('closest_amount'), { ...pass(), name: 'q' }]), schemas)
  t.same(ex.passes[0].prefer, {
    value: 'closest_amount',
    by: 'the smallest |l.amount - r.amount|, then the left key (l.id), then the right key (r.id)',
  })
  t.equal(ex.passes[1].prefer, null)
  t.match(ex.text, /assign: the most matches, then the best total score; ties go by prefer closest_amount/)
  t.match(ex.text, /pass q[^]*ties are held as ambiguous/)
})
