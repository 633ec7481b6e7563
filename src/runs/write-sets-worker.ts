// The helper thread of write-sets.ts: writes the result sets of each job it is sent (claiming them
// one at a time when the job shares a counter with the calling thread), answering once per job.

import { parentPort } from 'node:worker_threads'
import { type HelperJob, helperJob } from './write-sets.js'

const port = parentPort
if (!port) throw new Error('runs/write-sets-worker.ts runs in a worker thread')

port.on('message', async (job: HelperJob) => port.postMessage(await helperJob(job)))
