// The partitioning helper thread (src/engine/match/partition-helper.ts): a large left side loaded from
// CSV (columns in shared memory) is partitioned on the helper while the engine's thread does the
// right, and the run must be exactly the one-thread run. A helper that cannot do a job answers
// null and the caller partitions the side itself; sides not in shared memory never go to it.

import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { prng } from '../bench/gen-data.js'
import { loadCsv } from '../src/engine/load/csv/index.js'
import { tableFromRows } from '../src/engine/load/json.js'
import { keyHashes, plainStringKeys } from '../src/engine/match/keys.js'
import { partitionBits, partitionSide } from '../src/engine/match/partition.js'
import { endPartitionHelper, PARALLEL_MIN_ROWS, partitionHelper } from '../src/engine/match/partition-helper.js'
import { planPass } from '../src/engine/plan/plan.js'
import { ExprCompiler } from '../src/engine/plan/compile.js'
import { reconcile, type RunResult } from '../src/engine/reconcile.js'
import { isShared } from '../src/engine/data/shared.js'
import type { Table } from '../src/engine/data/table.js'
import { parsePredicate } from '../src/language/predicate.js'
import type { Recipe } from '../src/recipes/schema.js'

const ROWS = PARALLEL_MIN_ROWS + 10_000

/**
 * Bank lines and invoices sharing references (some NULL, some repeated), amounts within a cent or
 * not, dates a few days apart, and some payments split over two invoices.
 */
function writeFiles(dir: string): { left: string; right: string } {
  const rnd = prng(11)
  const left = ['txn_id,reference,amount,txn_date']
  const right = ['invoice_id,ref,total_amount,invoice_date']
  const day = (d: number) => new Date(Date.UTC(2024, 0, 1 + d)).toISOString().slice(0, 10)
  for (let i = 0; i < ROWS; i++) {
    const ref = rnd() < 0.02 ? '' : `R${Math.floor(rnd() * ROWS * 0.9)}`
    const cents = 100 + Math.floor(rnd() * 1_000_000)
    const d = Math.floor(rnd() * 300)
    left.push(`T${i},${ref},${(cents / 100).toFixed(2)},${day(d)}`)
    const shift = Math.floor(rnd() * 5)
    if (rnd() < 0.05) {
      // a split: two invoices that add up to the payment
      const part = Math.floor(cents / 3)
      right.push(`I${i}a,${ref},${(part / 100).toFixed(2)},${day(d - shift)}`)
      right.push(`I${i}b,${ref},${((cents - part) / 100).toFixed(2)},${day(d - shift)}`)
      continue
    }
    const off = rnd() < 0.7 ? 0 : rnd() < 0.5 ? 1 : 7
    right.push(`I${i},${rnd() < 0.9 ? ref : `R${i}`},${((cents + off) / 100).toFixed(2)},${day(d - shift)}`)
  }
  const files = { left: join(dir, 'bank.csv'), right: join(dir, 'invoices.csv') }
  writeFileSync(files.left, `${left.join('\n')}\n`)
  writeFileSync(files.right, `${right.join('\n')}\n`)
  return files
}

const recipe: Recipe = {
  name: 'parallel',
  left: { source: 'bank', key: ['txn_id'] },
  right: { source: 'invoices', key: ['invoice_id'] },
  passes: [
    // a band pass before the hash passes: its evidence is probed again at the end, over the input tables
    {
      name: 'same day and amount',
      pattern: '1:1',
      when: 'r.invoice_date BETWEEN l.txn_date AND l.txn_date AND ABS(l.amount - r.total_amount) <= 0',
    },
    {
      name: 'reference',
      pattern: '1:1',
      when: "l.reference = r.ref AND ABS(l.amount - r.total_amount) <= 0.01 AND r.invoice_date BETWEEN l.txn_date - INTERVAL '3 days' AND l.txn_date",
      after: ['same day and amount'],
    },
    {
      name: 'split',
      pattern: '1:N',
      when: "l.reference = r.ref AND r.invoice_date BETWEEN l.txn_date - INTERVAL '10 days' AND l.txn_date",
      aggregate: { sum: 'r.total_amount', equals: 'l.amount', tolerance: 0.01, max_group: 3 },
      after: ['reference'],
    },
  ],
}

/** A run without its timings, which differ between any two runs. */
function comparable(r: RunResult) {
  const { timings: _, passes, ...summary } = r.summary
  return {
    summary,
    passes: passes.map(({ ms: _ms, ...p }) => p),
    matches: r.matches,
    unmatchedLeft: r.unmatchedLeft,
    unmatchedRight: r.unmatchedRight,
  }
}

function snapshot(table: Table): unknown[] {
  return table.data.map((c) => ({ ...c, ...('values' in c ? { values: [...c.values] } : {}) }))
}

t.test('a large CSV side is partitioned on the helper, and the run is the one-thread run', async (t) => {
  const files = writeFiles(t.testdir())
  const [l, r] = await Promise.all([loadCsv(files.left), loadCsv(files.right)])
  t.ok(
    l.table.data.every((c) => (c.type === 'string' ? isShared(c.offsets) && isShared(c.data) : isShared(c.values))),
    'the CSV loader puts columns in shared memory',
  )
  const helper = partitionHelper()
  t.equal(await helper.ready(), true, 'the helper starts')
  const before = snapshot(l.table)
  const jobs = helper.jobs
  const parallel = reconcile(recipe, l.table, r.table)
  t.equal(helper.jobs - jobs, 2, 'both hash passes partitioned their left side on the helper')
  const single = reconcile(recipe, l.table, r.table, { parallel: false })
  t.equal(helper.jobs - jobs, 2, 'parallel: false keeps the helper out')
  t.same(comparable(parallel), comparable(single), 'matches, unmatched sets and summary are identical')
  t.strictSame(snapshot(l.table), before, 'the input table is untouched')
  const passes = parallel.summary.passes
  t.ok(
    passes.every((p) => p.status === 'done' && p.matches > 100),
    `every pass matched (${passes.map((p) => p.matches).join(' / ')})`,
  )
  t.equal(
    parallel.summary.left.matched + parallel.summary.left.unmatched,
    ROWS,
    'every left record is matched or unmatched',
  )
})

t.test('an ended helper is replaced by the next pass', async (t) => {
  const files = writeFiles(t.testdir())
  const [l, r] = await Promise.all([loadCsv(files.left), loadCsv(files.right)])
  const ended = partitionHelper()
  t.equal(await ended.ready(), true)
  endPartitionHelper()
  t.equal(ended.usable, false, 'ended')
  const single = reconcile(recipe, l.table, r.table, { parallel: false })
  const parallel = reconcile(recipe, l.table, r.table)
  const next = partitionHelper()
  t.not(next, ended, 'the run started another')
  t.same(comparable(parallel), comparable(single), 'and matched as one thread does')
})

t.test('the helper partitions like this thread; a job it cannot do answers null', async (t) => {
  const files = writeFiles(t.testdir())
  const [l, r] = await Promise.all([loadCsv(files.left), loadCsv(files.right)])
  const tables = { l: l.table, r: r.table }
  const when = 'l.reference = r.ref'
  const plan = planPass(parsePredicate(when), when, (s, c) => tables[s].columns.find((x) => x.name === c)?.type)
  const keys = keyHashes(plan.keys, new ExprCompiler({ l: tables.l.columns, r: tables.r.columns }, tables), tables)
  const bits = partitionBits(ROWS)
  const helper = partitionHelper()
  t.equal(await helper.ready(), true)
  const columns = ['reference', 'amount', 'txn_date']
  const there = helper.partition(tables.l, columns, keys.left, bits)()
  t.strictSame(there, partitionSide(tables.l, columns, keys.left, bits), 'same positions, rows, hashes and columns')
  const key = plainStringKeys(plan.keys, tables)!
  t.equal(key.left, tables.l.data[tables.l.columns.findIndex((c) => c.name === 'reference')], 'the key column')
  t.strictSame(
    helper.partition(tables.l, columns, { column: key.left }, bits)(),
    there,
    'given the key column, the helper hashes it as keyHashes does',
  )

  const jobs = helper.jobs
  t.equal(helper.partition(tables.l, ['reference', 'no_such_column'], keys.left, bits)(), null, 'an error answers null')
  t.equal(helper.jobs, jobs + 1, 'the job reached the helper')
  t.throws(() => partitionSide(tables.l, ['reference', 'no_such_column'], keys.left, bits), /no_such_column/)
  t.ok(helper.usable, 'and the helper serves the next job')
  t.ok(helper.partition(tables.l, columns, keys.left, bits)(), 'it does')
  helper.partition(tables.l, columns, keys.left, bits) // never waited for, as when a pass throws
  t.strictSame(
    helper.partition(tables.l, ['amount'], keys.left, bits)(),
    partitionSide(tables.l, ['amount'], keys.left, bits),
    'a reply nobody waited for is skipped',
  )
  t.ok(helper.usable, 'without giving up on the helper')

  const plain = tableFromRows([{ reference: 'a', amount: 1 }])
  const plainKeys = { hash: new Uint32Array(1), isNull: new Uint8Array(1) }
  t.equal(helper.partition(plain, ['reference'], plainKeys, 0)(), null, 'columns outside shared memory stay here')
  t.equal(helper.jobs, jobs + 3, 'without a job posted')
})
