// The report's figures thread: reads a run's result files and answers with its figures
// (figures.ts), so the service's event loop only posts a request and receives a few kilobytes.

import { parentPort } from 'node:worker_threads'
import type { FiguresReply, FiguresRequest } from './figures-thread.js'
import { reportFigures } from './figures.js'
import { runInBackground } from '../background.js'

const port = parentPort
if (!port) throw new Error('runs/report/figures-worker.ts runs in a worker thread')
runInBackground()

port.on('message', async ({ id, dir, amounts, opts }: FiguresRequest) => {
  try {
    port.postMessage({ id, figures: await reportFigures(dir, amounts, opts) } satisfies FiguresReply)
  } catch (err) {
    port.postMessage({ id, error: (err as Error).message ?? String(err) } satisfies FiguresReply)
  }
})
