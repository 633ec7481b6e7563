// A worker thread running one of this folder's modules (or, given `base`, one beside that module).
// Built, the module is JavaScript a worker loads as it is. From the TypeScript sources (tests,
// bench) the worker starts from the build when it is current (builtTwin), else worker-boot.mjs
// registers tsx in the worker first (a worker does not inherit its parent's loader).

import { Worker } from 'node:worker_threads'
import { builtTwin, siblingModule } from '../engine/worker-source.js'

export function moduleWorker(name: string, base: string = import.meta.url): Worker {
  const module = siblingModule(base, name)
  if (module.pathname.endsWith('.js')) return new Worker(module)
  // from the sources: the built module when the build is current (worker-source.ts, builtTwin)
  const twin = builtTwin(module)
  return twin
    ? new Worker(twin)
    : new Worker(new URL('./worker-boot.mjs', import.meta.url), { workerData: { module: module.href } })
}
