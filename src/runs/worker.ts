// A run's worker thread: runs one JobSpec at a time, posting progress, then `done` with the
// summary (and, for a run that makes exceptions, their batch) or `failed` with an error body.
// The service terminates the thread to cancel a run.

import { parentPort } from 'node:worker_threads'
import { ConcordError } from '../errors.js'
import { type JobOptions, type JobSpec, runJob } from './job.js'
import { exceptionsOptions } from '../exceptions/worker.js'
import { runInBackground } from './background.js'

const port = parentPort
if (!port) throw new Error('runs/worker.ts runs in a worker thread')
runInBackground()

port.on('message', async (spec: JobSpec) => {
  try {
    const exceptions = spec.exceptions ? exceptionsOptions(spec, spec.exceptions) : undefined
    const options: JobOptions = exceptions?.options ?? {}
    const summary = await runJob(spec, (progress) => port.postMessage({ type: 'progress', progress }), options)
    port.postMessage({ type: 'done', summary, exceptions: exceptions?.batch() })
  } catch (err) {
    const error =
      err instanceof ConcordError
        ? err.toJSON()
        : { error: 'run_failed', message: (err as Error).message ?? String(err) }
    port.postMessage({ type: 'failed', error })
  }
})
