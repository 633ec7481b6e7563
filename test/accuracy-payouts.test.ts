// Accuracy on ../shared/datasets/payouts: card captures against seller payouts, where a payout
// pays 1–5 captures of one seller, their net amounts summed less a fixed 0.49 payout fee. The
// recipe says so (`SUM(l.net_amount) - 0.49 = r.amount`, tolerance 0), with only what a user
// reads off the data: same seller and currency, paid within a week of the capture. Judged link by
// link against truth.csv: a link is (capture_id, payout_id); every capture of a claimed group is a
// claimed link; an ambiguous match claims nothing.

import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { loadCsv } from '../src/engine/load/csv/index.js'
import type { Recipe, RecipeAggregate } from '../src/recipes/schema.js'
import { datasetsDir, datasetsSkip } from './helpers/datasets.js'
import { evidence, partitionProblems } from './helpers/engine.js'

const dir = join(datasetsDir, 'payouts')

async function load() {
  const captures = (await loadCsv(join(dir, 'captures.csv'))).table
  const payouts = (await loadCsv(join(dir, 'payouts.csv'))).table
  const truth = new Set(
    (await readFile(join(dir, 'truth.csv'), 'utf8'))
      .trim()
      .split(/\r?\n/)
      .slice(1)
      .map((line) => line.trim()),
  )
  return { captures, payouts, truth }
}

/** Captures left (N:1) or, flipped, payouts left (1:N): the same rule written from either side. */
function payoutRecipe(flipped: boolean, days: number, tolerance: RecipeAggregate['tolerance']): Recipe {
  const [c, p] = flipped ? ['r', 'l'] : ['l', 'r']
  const captures = { source: 'captures', key: ['capture_id'] }
  const payouts = { source: 'payouts', key: ['payout_id'] }
  return {
    name: 'captures-vs-payouts',
    left: flipped ? payouts : captures,
    right: flipped ? captures : payouts,
    passes: [
      {
        name: 'payout',
        pattern: flipped ? '1:N' : 'N:1',
        when:
          `${c}.seller_id = ${p}.seller_id AND ${c}.currency = ${p}.currency AND ` +
          `${p}.payout_date BETWEEN CAST(${c}.captured_at AS date) AND CAST(${c}.captured_at AS date) + INTERVAL '${days} days'`,
        aggregate: { sum: `SUM(${c}.net_amount) - 0.49`, equals: `${p}.amount`, tolerance, max_group: 5 },
      },
    ],
  }
}

async function score(flipped: boolean, days: number, tolerance: RecipeAggregate['tolerance']) {
  const { captures, payouts, truth } = await load()
  const [left, right] = flipped ? [payouts, captures] : [captures, payouts]
  const e = evidence(payoutRecipe(flipped, days, tolerance), left, right)
  let truePositives = 0
  let falsePositives = 0
  let ambiguous = 0
  for (const m of e.matches) {
    if (m.ambiguous) {
      ambiguous++
      continue
    }
    const [captureIds, payoutIds] = flipped ? [m.right_keys, m.left_keys] : [m.left_keys, m.right_keys]
    for (const c of captureIds)
      for (const p of payoutIds) {
        if (truth.has(`${c},${p}`)) truePositives++
        else falsePositives++
      }
  }
  return {
    links: truth.size,
    truePositives,
    falsePositives,
    ambiguous,
    precision: truePositives / (truePositives + falsePositives),
    recall: truePositives / truth.size,
    partition: partitionProblems(e, left.length, right.length),
    search: e.result.summary.passes[0].search,
  }
}

t.test('payouts with the fee in the recipe: captures left, N:1', { skip: datasetsSkip }, async (t) => {
  const s = await score(false, 7, 0)
  t.comment(
    `N:1: precision ${s.precision.toFixed(4)}, recall ${s.recall.toFixed(4)} (${s.truePositives} of ${s.links} links, ${s.falsePositives} wrong)`,
  )
  t.equal(s.links, 2210, 'the dataset is the one described')
  t.ok(s.precision >= 0.99, `precision ${s.precision}`)
  t.ok(s.recall >= 0.95, `recall ${s.recall}`)
  t.same(s.partition, [])
  t.same(s.search, { candidates_capped: 0, visits_exhausted: 0, groups_over_max: 0 })
})

t.test('the same rule flipped: payouts left, 1:N', { skip: datasetsSkip }, async (t) => {
  const s = await score(true, 7, 0)
  t.comment(
    `1:N: precision ${s.precision.toFixed(4)}, recall ${s.recall.toFixed(4)} (${s.truePositives} of ${s.links} links, ${s.falsePositives} wrong)`,
  )
  t.ok(s.precision >= 0.99, `precision ${s.precision}`)
  t.ok(s.recall >= 0.95, `recall ${s.recall}`)
  t.same(s.partition, [])
})

t.test(
  'a looser recipe keeps its accuracy: exact fits are taken before near ones',
  { skip: datasetsSkip },
  async (t) => {
    // a month's window and a cent-to-euro tolerance give many more groups that fit roughly
    const s = await score(false, 30, 1)
    t.comment(`N:1, 30 days, ± 1.00: precision ${s.precision.toFixed(4)}, recall ${s.recall.toFixed(4)}`)
    t.ok(s.precision >= 0.99, `precision ${s.precision}`)
    t.ok(s.recall >= 0.95, `recall ${s.recall}`)
    // and a one-sided tolerance reads the same way
    const above = await score(false, 30, { below: 0, above: '0.50' })
    t.ok(above.precision >= 0.99 && above.recall >= 0.95, `above only: ${above.precision} / ${above.recall}`)
  },
)
