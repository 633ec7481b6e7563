import type { FastifyInstance } from 'fastify'

const FINISHED = ['completed', 'failed', 'cancelled', 'interrupted']

/** Polls a run until its status is one of `until` (by default: finished). */
export async function waitForRun(app: FastifyInstance, id: string, until = FINISHED) {
  const deadline = Date.now() + 120_000
  for (;;) {
    const run = (await app.inject({ method: 'GET', url: `/api/runs/${id}` })).json()
    if (until.includes(run.status)) return run
    if (Date.now() > deadline) throw new Error(`run ${id} still ${run.status}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}
