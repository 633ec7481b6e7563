// A worker thread running one of this folder's modules (or, given `base`, one beside that module).
// Built, the module is JavaScript a worker loads as it is; from the TypeScript sources (tests, bench), worker-boot.mjs registers tsx in the
// worker first (a worker does not inherit its parent's loader).

import { Worker } from 'node:worker_threads'
import { siblingModule } from '../engine/worker-source.js'

export function moduleWorker(name: string, base: string = import.meta.url): Worker {
  const module = siblingModule(base, name)
  return module.pathname.endsWith('.js')
    ? new Worker(module)
    : new Worker(new URL('./worker-boot.mjs', import.meta.url), { workerData: { module: module.href } })
}
