// Result pages read off the event loop. A page or a `?key=` lookup reads a run's result file whole
// the first time (a million matches: 85 MB, parsed in ~30 ms) and keeps it; on the service's own
// thread that allocation set off collections of its heap that, with the parsing, held the loop for
// 100-200 ms, and the tables kept there made every later collection longer. Here one worker thread
// (pages-worker.ts) holds the open files and answers each call with the page, a few kilobytes of
// plain objects; the loop only posts the call and receives them (request-thread.ts: started at
// the first page, kept while the service runs).

import { RequestThread, revived, type ThreadError } from './request-thread.js'
import type { forget, matchesPage, storedSchemas, unmatchedPage } from './pages.js'

/** What the worker can be asked: the functions of pages.ts, by name, with their arguments. */
export type PagesCall =
  | { fn: 'matchesPage'; args: Parameters<typeof matchesPage> }
  | { fn: 'unmatchedPage'; args: Parameters<typeof unmatchedPage> }
  | { fn: 'storedSchemas'; args: Parameters<typeof storedSchemas> }
  | { fn: 'forget'; args: Parameters<typeof forget> }

export type PagesRequest = PagesCall & { id: number }

export type PagesReply = { id: number; value: unknown } | { id: number; error: ThreadError }

export class PagesThread {
  private readonly thread = new RequestThread<PagesReply>('pages-worker', 'result pages thread', (reply) =>
    'value' in reply ? { value: reply.value } : { error: revived(reply.error) },
  )

  matchesPage(...args: Parameters<typeof matchesPage>): ReturnType<typeof matchesPage> {
    return this.ask({ fn: 'matchesPage', args }) as ReturnType<typeof matchesPage>
  }

  unmatchedPage(...args: Parameters<typeof unmatchedPage>): ReturnType<typeof unmatchedPage> {
    return this.ask({ fn: 'unmatchedPage', args }) as ReturnType<typeof unmatchedPage>
  }

  storedSchemas(...args: Parameters<typeof storedSchemas>): ReturnType<typeof storedSchemas> {
    return this.ask({ fn: 'storedSchemas', args }) as ReturnType<typeof storedSchemas>
  }

  /** Forgets a run's files (its folder was deleted); nothing to do before the first page. */
  async forget(dir: string): Promise<void> {
    if (this.thread.started) await this.ask({ fn: 'forget', args: [dir] })
  }

  close(): Promise<void> {
    return this.thread.close()
  }

  private ask(call: PagesCall): Promise<unknown> {
    return this.thread.ask(call)
  }
}
