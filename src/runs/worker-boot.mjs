// Worker threads do not inherit the TypeScript loader of the thread that starts them: register
// tsx here, then load the worker module named in workerData. Plain JavaScript on purpose.
import { workerData } from 'node:worker_threads'
import { register } from 'tsx/esm/api'

register()
await import(workerData.module)
