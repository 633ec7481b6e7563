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

/** Polls a run until its progress passes `reached` (or it finishes); returns the run as then seen. */
export async function waitForProgress(
  app: FastifyInstance,
  id: string,
  reached: (p: {
    phase: string
    rows_loaded: { left: number | null; right: number | null }
    percent: number
  }) => boolean,
) {
  const deadline = Date.now() + 120_000
  for (;;) {
    const run = (await app.inject({ method: 'GET', url: `/api/runs/${id}` })).json()
    if (reached(run.progress) || FINISHED.includes(run.status)) return run
    if (Date.now() > deadline) throw new Error(`run ${id} still at ${JSON.stringify(run.progress)}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}
