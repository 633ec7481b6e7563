// Issue 16's judgement, as a test: the whole wizard path over REST (test/helpers/wizard.ts) on each
// shared dataset with the first confirmable rows of the previews (choice 0: 5 pairs, or 3 payout
// groups), scored on the full files against their truth. Every run must partition its records;
// the datasets the inference handles today must not get worse; transfers and payouts carry the
// issue's targets for transfers and payouts.
// The spread over five choices is bench/wizard-accuracy.ts (npm run accuracy:wizard).

import t from 'tap'
import { datasetsDir, datasetsSkip, testApp } from './helpers/app.js'
import { kallaGeneratedStatsProblems, Links } from './helpers/truth.js'
import {
  chooseConfirmations,
  orientedTruth,
  passLine,
  WIZARD_DATASETS,
  type WizardScore,
  wizardScore,
} from './helpers/wizard.js'

/**
 * Today's figures, the floor no change may go under: measured 2026-11-24 at 767e81d (main) with
 * this test's path and choice 0. Fractions of links: true claimed / truth links.
 */
const TODAY: Record<string, { precision: number; recall: number }> = {
  // 770 of 785 links; the 15 thrice-settled orders are held as ambiguous
  'acquirer-settlement': { precision: 1, recall: 770 / 785 },
  'kalla/generated': { precision: 1, recall: 41 / 41 },
  // every true payment but the wire-fee one (15.00 off, left for review)
  kalla: { precision: 1, recall: 9 / 10 },
}

/** Issue 16's targets for the sets with no shared key and with groups less a fee. */
const TARGETS: Record<string, { precision: number; recall: number }> = {
  transfers: { precision: 0.98, recall: 0.95 },
  payouts: { precision: 0.99, recall: 0.95 },
  'payouts flipped': { precision: 0.99, recall: 0.95 },
}

/** Truth links per dataset: pins the judges to the datasets' README. */
const LINKS: Record<string, number> = {
  transfers: 8843,
  payouts: 2210,
  'payouts flipped': 2210,
  'acquirer-settlement': 785,
  'kalla/generated': 41,
  kalla: 10,
}

const f3 = (x: number) => x.toFixed(3)

t.test('confirmations as a user picks them: preview order, whole groups, the k-th window', async (t) => {
  // left 0 has no partner; 1↔0; 2 and 3 are paid together by 1 (a group); 4↔5 (outside a 5-row
  // preview on the right: looked up); 5↔2; 6 is past the preview
  const links = new Links([
    [1, 0],
    [2, 1],
    [3, 1],
    [4, 5],
    [5, 2],
    [6, 3],
  ])
  const choice = (k: number, per = 2) => chooseConfirmations(links, 6, per, k)
  t.same(choice(0), [
    { left: [1], right: [0] },
    { left: [2, 3], right: [1] },
  ])
  t.same(
    choice(1),
    [
      { left: [4], right: [5] },
      { left: [5], right: [2] },
    ],
    'row 3 is in the group already confirmed: not a confirmation of its own',
  )
  t.same(choice(2), choice(0), 'four confirmations, windows of two: choice 2 wraps to the first')
  t.same(
    choice(1, 3).map((c) => c.left[0]),
    [5, 1, 2],
    'a window past the end wraps',
  )
  t.same(chooseConfirmations(new Links([]), 6, 5, 0), [])
})

t.test('the wizard path, first confirmed pairs, scored on the full files', { skip: datasetsSkip }, async (t) => {
  const { app } = await testApp(t, { dataDir: datasetsDir, env: { AI_MODE: 'deterministic' } })
  const scores: WizardScore[] = []
  for (const dataset of WIZARD_DATASETS) {
    await t.test(dataset.name, async (t) => {
      const truth = await orientedTruth(dataset)
      t.equal(truth.links.size, LINKS[dataset.name], `${LINKS[dataset.name]} truth links`)
      if (dataset.name === 'kalla/generated')
        t.same(await kallaGeneratedStatsProblems(await dataset.judge.load()), [], 'the judge agrees with stats.json')

      const s = await wizardScore(app, dataset, 0, truth)
      scores.push(s)
      t.equal(s.confirmed.length, dataset.perChoice, `${dataset.perChoice} confirmations`)
      t.same(s.validation.issues, [], 'validate_recipe finds no issue')
      t.equal(
        s.run.status,
        'completed',
        `the full run completes${s.run.error ? `: ${JSON.stringify(s.run.error)}` : ''}`,
      )
      t.same(s.partition, [], 'every record in exactly one of matched, ambiguous, unmatched')
      t.comment(
        `${dataset.name}: precision ${f3(s.precision)}, recall ${f3(s.recall)} (${s.truePositives} of ${s.truthLinks} links, ${s.falsePositives} wrong, ${s.ambiguous} ambiguous)`,
      )
      const floor = TODAY[dataset.name]
      if (floor) {
        t.ok(s.precision >= floor.precision, `precision ${f3(s.precision)} ≥ today's ${f3(floor.precision)}`)
        t.ok(s.recall >= floor.recall, `recall ${f3(s.recall)} ≥ today's ${f3(floor.recall)}`)
      }
      const target = TARGETS[dataset.name]
      if (target) {
        t.ok(s.precision >= target.precision, `precision ${f3(s.precision)} ≥ ${target.precision}`)
        t.ok(s.recall >= target.recall, `recall ${f3(s.recall)} ≥ ${target.recall}`)
      }
      // an inferred recipe is never one validate_recipe calls impossible on the pairs it came from
      const impossible = ((s.validation.warnings ?? []) as { code: string; message: string }[]).filter((w) =>
        ['shape_not_1_1', 'excludes_confirmed_pair', 'tolerance_too_wide'].includes(w.code),
      )
      t.same(impossible, [], 'no warning that a rule cannot be right')
    })
  }
  t.comment(
    [
      '| dataset | precision | recall | claimed | wrong | matches | ambiguous | recipe |',
      '|---|---|---|---|---|---|---|---|',
      ...scores.map(
        (s) =>
          `| ${s.dataset} | ${f3(s.precision)} | ${f3(s.recall)} | ${s.claimed} | ${s.falsePositives} | ${s.matches} | ${s.ambiguous} | ${s.recipe.passes.map(passLine).join(' → ')} |`,
      ),
    ].join('\n'),
  )
})
