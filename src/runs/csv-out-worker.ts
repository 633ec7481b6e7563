// The helper thread of csv-out.ts: writes the result sets it is sent as CSV files, one at a time,
// answering { ok } for each.

import { parentPort } from 'node:worker_threads'
import { type CsvSetJob, writeCsvSet } from './csv-out.js'

const port = parentPort
if (!port) throw new Error('runs/csv-out-worker.ts runs in a worker thread')

port.on('message', (job: CsvSetJob) => {
  try {
    writeCsvSet(job)
    port.postMessage({ ok: true })
  } catch {
    // the command's thread writes the set again and reports what goes wrong there
    port.postMessage({ ok: false })
  }
})
