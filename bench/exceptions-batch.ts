// The exceptions of a run, alone: the keyed 1M × 1M workload of bench/gen-recon.ts loaded and
// reconciled once in this process, then its batch of exceptions made (exceptionBatch) and written
// (writeSet) ROUNDS times. An inner figure, for finding where a REST run's `writing` phase goes;
// what users wait for is bench/command.ts.
//   node --import tsx bench/exceptions-batch.ts [--rows 1000000] [--rounds 5]

import { createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadCsv } from '../src/engine/load/csv/index.js'
import { reconcile } from '../src/engine/reconcile.js'
import { exceptionBatch } from '../src/exceptions/batch.js'
import { setFile, writeSet } from '../src/exceptions/sidecar.js'
import type { Recipe } from '../src/recipes/schema.js'
import { reconFiles, writeRecon } from './gen-recon.js'

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name)
  return i >= 0 ? Number(process.argv[i + 1]) : fallback
}
const rows = arg('--rows', 1_000_000)
const rounds = arg('--rounds', 5)
const files = reconFiles(rows)
if (!existsSync(files.right)) await writeRecon(rows)
const recipe = JSON.parse(readFileSync('bench/recipes/recon-keyed.json', 'utf8')) as Recipe
const left = (await loadCsv(files.left)).table
const right = (await loadCsv(files.right)).table
const result = reconcile(recipe, left, right)
const none = { keys: [], ids: [] }
const out = mkdtempSync(join(tmpdir(), 'concord-exceptions-'))
console.log(`${result.unmatchedLeft.rows.length + result.unmatchedRight.rows.length} unmatched records`)
for (let round = 1; round <= rounds; round++) {
  const t0 = performance.now()
  const { rows: created, ...batch } = exceptionBatch(
    // the default EXCEPTION_FEE_SHARE; an inline recipe has no open items
    { open: { left: none, right: none, both: none }, carry: null, feeShare: '0.01' },
    recipe,
    result,
    { leftKey: recipe.left.key, rightKey: recipe.right.key },
    null,
  )
  const t1 = performance.now()
  writeSet(out, created, { seen: batch.seen, closed: batch.closed })
  const t2 = performance.now()
  const md5 = createHash('md5')
    .update(readFileSync(setFile(out)))
    .digest('hex')
  console.log(
    `round ${round}: batch ${(t1 - t0).toFixed(0)} ms, writeSet ${(t2 - t1).toFixed(0)} ms, ` +
      `${batch.count} exceptions, set file md5 ${md5}`,
  )
}
rmSync(out, { recursive: true, force: true })
