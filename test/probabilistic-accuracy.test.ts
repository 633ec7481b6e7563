// Probabilistic passes on the shared datasets, each judged against its ground truth: transfers/
// (no shared key: names in memos, fees and FX on amounts, booking lags) and febrl 4a/4b (person
// records with typos). The recipes are what a reconciler would write from the datasets' README,
// with the default threshold (more likely a match than not); skipped, visibly, without the data.

import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { loadCsv } from '../src/engine/load/csv/index.js'
import type { Recipe } from '../src/recipes/schema.js'
import { datasetsDir, datasetsSkip } from './helpers/datasets.js'
import { evidence, partitionProblems } from './helpers/engine.js'

const csv = async (path: string) => (await loadCsv(join(datasetsDir, path))).table

const transfersRecipe: Recipe = {
  name: 'transfers',
  left: { source: 'sent', key: ['sent_id'] },
  right: { source: 'received', key: ['received_id'] },
  passes: [
    {
      name: 'by_payer',
      pattern: '1:1',
      block: [
        // the payer's surname is in both memos; amounts drift by fees and FX, bookings lag
        'shares_token(l.memo, r.memo)',
        'r.amount BETWEEN l.amount * 0.9 AND l.amount * 1.1 AND r.booking_date BETWEEN l.sent_date AND l.sent_date + 21',
      ],
      compare: [
        {
          name: 'memo',
          text: ['l.memo', 'r.memo'],
          levels: [
            'token_set >= 0.95',
            'token_set >= 0.85',
            'token_set >= 0.7',
            'token_set >= 0.5',
            'token_set >= 0.3',
          ],
        },
        { name: 'amount', relative: ['l.amount', 'r.amount'], levels: [0, 0.005, 0.025, 0.1] },
        {
          name: 'lag',
          days: ['l.sent_date', 'r.booking_date'],
          levels: [
            [0, 0],
            [1, 1],
            [2, 3],
            [4, 7],
            [8, 14],
            [15, 21],
          ],
        },
      ],
    },
  ],
}

t.test('transfers: a probabilistic pass links transfers that share no key', { skip: datasetsSkip }, async (t) => {
  const sent = await csv('transfers/sent.csv')
  const received = await csv('transfers/received.csv')
  const truth = new Set(
    (await readFile(join(datasetsDir, 'transfers/truth.csv'), 'utf8'))
      .trim()
      .split(/\r?\n/)
      .slice(1)
      .map((line) => line.replace(',', '|')),
  )
  t.same([sent.length, received.length, truth.size], [9309, 9285, 8843], 'the dataset is the one described')
  const e = evidence(transfersRecipe, sent, received)
  t.same(partitionProblems(e, sent.length, received.length), [])
  let right = 0
  let wrong = 0
  for (const m of e.matches) {
    if (m.ambiguous) continue
    if (truth.has(`${m.left_keys[0]}|${m.right_keys[0]}`)) right++
    else wrong++
  }
  const precision = right / (right + wrong)
  const recall = right / truth.size
  const report = e.result.summary.passes[0].probabilistic!
  t.comment(
    `transfers: precision ${precision.toFixed(4)}, recall ${recall.toFixed(4)} (${right} true, ${wrong} false); ${report.candidates} candidates (${report.blocking.map((b) => `${b.join} ${b.pairs}`).join(', ')}), EM ${report.training.iterations} iterations`,
  )
  t.ok(precision >= 0.98, `precision ${precision}`)
  t.ok(recall >= 0.95, `recall ${recall}`)
  t.equal(report.training.converged, true)
})

const febrlRecipe: Recipe = {
  name: 'febrl',
  left: { source: 'a', key: ['rec_id'] },
  right: { source: 'b', key: ['rec_id'] },
  passes: [
    {
      name: 'people',
      pattern: '1:1',
      // any one field agreeing exactly makes a candidate: typos rarely hit them all
      block: [
        'l.date_of_birth = r.date_of_birth',
        'l.postcode = r.postcode',
        'l.surname = r.surname',
        'l.given_name = r.given_name',
        'l.soc_sec_id = r.soc_sec_id',
      ],
      compare: [
        {
          name: 'given_name',
          text: ['l.given_name', 'r.given_name'],
          levels: ['exact', 'jaro_winkler >= 0.92', 'jaro_winkler >= 0.8'],
        },
        {
          name: 'surname',
          text: ['l.surname', 'r.surname'],
          levels: ['exact', 'jaro_winkler >= 0.92', 'jaro_winkler >= 0.8'],
        },
        {
          name: 'date_of_birth',
          text: ['CAST(l.date_of_birth AS text)', 'CAST(r.date_of_birth AS text)'],
          levels: ['exact', 'jaro_winkler >= 0.9'],
        },
        {
          name: 'soc_sec_id',
          text: ['CAST(l.soc_sec_id AS text)', 'CAST(r.soc_sec_id AS text)'],
          levels: ['exact', 'jaro_winkler >= 0.9'],
        },
        { name: 'street_number', exact: ['l.street_number', 'r.street_number'] },
        { name: 'address_1', text: ['l.address_1', 'r.address_1'], levels: ['exact', 'token_set >= 0.8'] },
        { name: 'suburb', text: ['l.suburb', 'r.suburb'], levels: ['exact', 'jaro_winkler >= 0.9'] },
        { name: 'postcode', text: ['l.postcode', 'r.postcode'], levels: ['exact', 'jaro_winkler >= 0.9'] },
        { name: 'state', exact: ['l.state', 'r.state'], tf: true },
      ],
    },
  ],
}

t.test('febrl 4a/4b: a probabilistic pass links person records', { skip: datasetsSkip }, async (t) => {
  const a = await csv('febrl/dataset4a.csv')
  const b = await csv('febrl/dataset4b.csv')
  const e = evidence(febrlRecipe, a, b)
  t.same(partitionProblems(e, a.length, b.length), [])
  let right = 0
  let wrong = 0
  for (const m of e.matches) {
    if (m.ambiguous) continue
    if (m.left_keys[0].replace(/-org$/, '') === m.right_keys[0].replace(/-dup-\d+$/, '')) right++
    else wrong++
  }
  const precision = right / (right + wrong)
  const recall = right / 5000
  t.comment(
    `febrl probabilistic: precision ${precision.toFixed(4)}, recall ${recall.toFixed(4)} (${right} true, ${wrong} false)`,
  )
  t.ok(precision >= 0.99, `precision ${precision}`)
  t.ok(recall >= 0.98, `recall ${recall}`)
})
