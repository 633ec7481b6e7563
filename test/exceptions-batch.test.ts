// A run's batch of new exceptions (src/exceptions/batch.ts), from a real reconciliation: each
// unmatched record's key and its closest candidate's key as the set file stores them, and a
// second unmatched record with a key the side already had counted once, not twice. Keys of one
// text column are read as bytes, others as text: both must give the same set.

import t from 'tap'
import { stringAt } from '../src/engine/data/column.js'
import type { Column } from '../src/engine/data/column.js'
import { tableFromRows } from '../src/engine/load/json.js'
import { reconcile } from '../src/engine/reconcile.js'
import { exceptionBatch, type ExceptionJob } from '../src/exceptions/batch.js'
import { recipeOf } from './helpers/engine.js'

const none = { keys: [], ids: [] }
const job: ExceptionJob = { open: { left: none, right: none, both: none }, carry: null, feeShare: '0' }
const text = (c: Column) =>
  Array.from({ length: c.length }, (_, i) =>
    c.type !== 'string' ? '?' : c.valid !== null && c.valid[i] === 0 ? null : stringAt(c, i),
  )

// left: A1 twice (the second is the same open item), a key with non-ASCII bytes, two NULL keys
// (read as '': one open item) and keys whose bytes differ only late or in length
const left = tableFromRows([
  { id: 'A1', ref: 'x1', amount: '10.00' },
  { id: 'A1', ref: 'x9', amount: '11.00' },
  { id: 'Äbc→2', ref: 'x2', amount: '5.00' },
  { id: null, ref: 'x3', amount: '3.00' },
  { id: null, ref: 'x4', amount: '4.00' },
  { id: 'K-0001', ref: 'x5', amount: '1.00' },
  { id: 'K-0002', ref: 'x6', amount: '1.00' },
  { id: 'K-00011', ref: 'x7', amount: '1.00' },
  { id: 'M1', ref: 'm', amount: '7.00' },
])
const right = tableFromRows([
  { id: 'B1', ref: 'x1', amount: '10.50' },
  { id: 'Ünï', ref: 'x2', amount: '5.25' },
  { id: 'N1', ref: 'm', amount: '7.00' },
  { id: 'N1', ref: 'zz', amount: '8.00' },
  { id: 'N1', ref: 'zy', amount: '9.00' },
])
const pass = { name: 'same', pattern: '1:1' as const, when: 'l.ref = r.ref AND ABS(l.amount - r.amount) <= 0.01' }

t.test('keys of one text column: copied as bytes, a repeated key counted once', async (t) => {
  const recipe = recipeOf([pass])
  const result = reconcile(recipe, left, right, { parallel: false })
  t.equal(result.matches.count, 1, 'M1 ⇄ N1')
  const batch = exceptionBatch(job, recipe, result, { leftKey: ['id'], rightKey: ['id'] }, null)
  const { rows } = batch
  const keys = text(rows.key.finish())
  const candidates = text(rows.candidate.finish())
  const sides = Array.from(rows.side.subarray(0, rows.length))
  const bySide = (s: number) => keys.filter((_, i) => sides[i] === s)
  t.same(bySide(0), ['A1', 'Äbc→2', '', 'K-0001', 'K-0002', 'K-00011'], 'left: one row per key, in order')
  t.same(bySide(1), ['B1', 'Ünï', 'N1'], 'right: N1 once, though two of its records are unmatched')
  t.equal(batch.duplicateKeys, 3, 'A1, the second NULL key and the third N1')
  t.equal(batch.count, 9)
  // the candidate is the other side's key, bytes and all; none where no record shares the join
  t.equal(candidates[keys.indexOf('A1')], 'B1')
  t.equal(candidates[keys.indexOf('Äbc→2')], 'Ünï')
  t.equal(candidates[keys.indexOf('Ünï')], 'Äbc→2')
  t.equal(candidates[keys.indexOf('K-0001')], null)

  // the same records keyed by two columns: keys are text ('A1|x1'), and every key is distinct
  const both = exceptionBatch(job, recipe, result, { leftKey: ['id', 'ref'], rightKey: ['id', 'ref'] }, null)
  t.equal(both.duplicateKeys, 0)
  t.equal(both.count, 12)
  t.same(text(both.rows.key.finish()).slice(0, 3), ['A1|x1', 'A1|x9', 'Äbc→2|x2'])
  t.equal(text(both.rows.candidate.finish())[0], 'B1|x1', 'its candidate by the same two columns')
})

t.test('many keys: the seen-keys table grows past collisions and finds every repeat', async (t) => {
  const n = 5000
  // every key twice, the second far from the first; lengths vary so equal hashes of unequal
  // lengths are told apart
  const rows = Array.from({ length: 2 * n }, (_, i) => ({ id: `k${(i % n) * 7919}`, ref: `r${i}`, amount: '1.00' }))
  const l = tableFromRows(rows)
  const r = tableFromRows([{ id: 'none', ref: 'nothing', amount: '2.00' }])
  const recipe = recipeOf([pass])
  const result = reconcile(recipe, l, r, { parallel: false })
  const batch = exceptionBatch(job, recipe, result, { leftKey: ['id'], rightKey: ['id'] }, null)
  t.equal(batch.duplicateKeys, n)
  t.equal(batch.count, n + 1)
  t.same(text(batch.rows.key.finish()).slice(0, 3), ['k0', 'k7919', 'k15838'])
})
