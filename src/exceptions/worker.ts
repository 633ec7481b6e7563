// The run worker's part in exceptions: carry the recipe's open items into the loaded sides before
// matching, make the batch of exceptions from the results after (batch.ts), and write it beside
// the results as the run's set (sidecar.ts): the service only reserves the ids and counts.

import { buildLookups } from '../engine/data/lookup.js'
import type { JobOptions, JobSpec } from '../runs/job.js'
import { type CarriedRows, type ExceptionBatch, type ExceptionJob, exceptionBatch } from './batch.js'
import { carryOpenItems } from './carry.js'
import { writeSet } from './sidecar.js'

export function exceptionsOptions(
  spec: JobSpec,
  job: ExceptionJob,
): { options: JobOptions; batch: () => ExceptionBatch | undefined } {
  let carried: CarriedRows | null = null
  let made: ExceptionBatch | undefined
  const options: JobOptions = {
    afterMatch: (results, lookups) => {
      const lookupSet = spec.recipe.lookups ? buildLookups(spec.recipe.lookups, lookups) : undefined
      const started = performance.now()
      const { rows, ...batch } = exceptionBatch(
        job,
        spec.recipe,
        results.result,
        { leftKey: results.leftKey, rightKey: results.rightKey },
        carried,
        lookupSet,
      )
      if (spec.outDir === null) throw new Error('a run that makes exceptions stores its results')
      writeSet(spec.outDir, rows, { seen: batch.seen, closed: batch.closed })
      made = { ...batch, workerMs: Math.round(performance.now() - started) }
    },
  }
  if (job.carry) {
    const carry = job.carry
    options.prepareTables = async (tables) => {
      const done = await carryOpenItems(spec.recipe, tables, carry)
      carried = done.carried
      return done.tables
    }
  }
  return { options, batch: () => made }
}
