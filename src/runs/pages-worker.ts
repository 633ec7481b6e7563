// The result pages thread: runs the calls pages-thread.ts posts against pages.ts, whose cache of
// open result files lives here, and answers each with its value or its error. Requests wait on
// it, so it keeps its normal priority (not background.ts).

import { parentPort } from 'node:worker_threads'
import { forget, matchesPage, storedSchemas, unmatchedPage } from './pages.js'
import type { PagesReply, PagesRequest } from './pages-thread.js'
import { crossing } from './request-thread.js'

const port = parentPort
if (!port) throw new Error('runs/pages-worker.ts runs in a worker thread')

port.on('message', async (request: PagesRequest) => {
  const { id } = request
  try {
    const value =
      request.fn === 'matchesPage'
        ? await matchesPage(...request.args)
        : request.fn === 'unmatchedPage'
          ? await unmatchedPage(...request.args)
          : request.fn === 'storedSchemas'
            ? await storedSchemas(...request.args)
            : forget(...request.args)
    port.postMessage({ id, value: value ?? null } satisfies PagesReply)
  } catch (err) {
    port.postMessage({ id, error: crossing(err) } satisfies PagesReply)
  }
})
