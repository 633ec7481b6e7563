// The partitioning helper thread (see partition-helper.ts): partitions the side it is given with
// the same code as the engine's own thread, and hands the result back with its buffers
// transferred. It starts from bundled JavaScript (worker-source.ts), so it imports nothing but
// partition.ts.

import { type MessagePort, workerData } from 'node:worker_threads'
import { hashBytes } from './keys.js'
import { type PartitionedSide, partitionSide } from './partition.js'
import { BEAT, DONE, type PartitionJob, type PartitionReply, READY } from './partition-job.js'

const { port, state } = workerData as { port: MessagePort; state: Int32Array }

function buffers(side: PartitionedSide): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>([
    side.rows.buffer as ArrayBuffer,
    side.start.buffer as ArrayBuffer,
    side.hash.buffer as ArrayBuffer,
  ])
  for (const c of side.table.data) {
    for (const a of [
      c.valid,
      'values' in c ? c.values : null,
      'offsets' in c ? c.offsets : null,
      'data' in c ? c.data : null,
    ])
      if (a) out.add(a.buffer as ArrayBuffer)
  }
  return [...out]
}

port.on('message', (job: PartitionJob) => {
  let reply: PartitionReply
  try {
    const keys = 'column' in job.keys ? hashBytes(job.keys.column) : job.keys
    const side = partitionSide(job.table, job.columns, keys, job.bits, () => Atomics.add(state, BEAT, 1))
    reply = { seq: job.seq, side }
    port.postMessage(reply, buffers(side))
  } catch (err) {
    reply = { seq: job.seq, error: err instanceof Error ? err.message : String(err) }
    port.postMessage(reply)
  }
  Atomics.store(state, DONE, job.seq)
  Atomics.notify(state, DONE)
})
Atomics.store(state, READY, 1)
