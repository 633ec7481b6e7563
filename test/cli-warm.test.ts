// `concord reconcile` on large files starts the engine's helper threads before it loads its
// modules (src/runs/cli-args.ts, warmForFiles): which threads it starts for which arguments, and
// that the partitioning helper it started is the one the engine then finds, running.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { partitionHelper } from '../src/engine/match/partition-helper.js'
import { warmForFiles } from '../src/runs/cli-args.js'

const dir = mkdtempSync(join(tmpdir(), 'concord-warm-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

const small = join(dir, 'small.csv')
writeFileSync(small, 'id,amount\n1,2.00\n')
const large = join(dir, 'large.csv')
// a little over 4 MiB: the threshold
const rows = ['id,ref,amount,booked']
for (let i = 0; rows.length < 130_000; i++) rows.push(`T${i},REF-${1_000_000 + i},${(i % 9973) + 0.25},2025-01-02`)
writeFileSync(large, rows.join('\n'))
const recipe = join(dir, 'recipe.json')

t.test('which helpers start', async (t) => {
  const none = { partition: false, sets: false }
  t.same(await warmForFiles(['--left', small, '--right', small, '--recipe', recipe, '--out', dir]), none, 'small files')
  t.same(await warmForFiles(['--left', 'bank', '--right', 'invoices', '--recipe', recipe]), none, 'aliases')
  t.same(await warmForFiles(['--left', large, '--right', small]), none, 'arguments the command refuses')
  t.same(await warmForFiles(['--left', large, '--right', small, '--recipe', recipe]), {
    partition: true,
    sets: false,
  })
  t.same(
    await warmForFiles(['--left', small, '--right', large, '--recipe', recipe, '--out', dir, '--format', 'arrow']),
    {
      partition: true,
      sets: false,
    },
  )
  t.same(await warmForFiles(['--left', small, '--right', large, '--recipe', recipe, '--out', dir]), {
    partition: true,
    sets: true,
  })
  t.equal(await partitionHelper().ready(), true, 'the engine finds the helper started, running')
})
