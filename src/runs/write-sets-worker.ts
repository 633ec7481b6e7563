// The helper thread of write-sets.ts: writes the result sets it is sent, one at a time, answering
// { ok } for each.

import { parentPort } from 'node:worker_threads'
import { type SetJob, writeSet } from './write-sets.js'

const port = parentPort
if (!port) throw new Error('runs/write-sets-worker.ts runs in a worker thread')

port.on('message', async (job: SetJob) => {
  try {
    await writeSet(job)
    port.postMessage({ ok: true })
  } catch {
    // the calling thread writes the set again and reports what goes wrong there
    port.postMessage({ ok: false })
  }
})
