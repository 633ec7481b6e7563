// A run report: the run as GET /api/runs/:id shows it (summary included), the figures read from its
// result files, and exception aging from whoever keeps exceptions. Exceptions live outside the
// runs module, so their aging comes through a provider the app hands in (ExceptionAging); without
// one, or when it has nothing for the run, the report says that no exceptions were recorded.

import type { FastifyBaseLogger } from 'fastify'
import type { Kysely } from 'kysely'
import type { Database } from '../../db/schema.js'
import type { RunsService, RunView } from '../service.js'
import { amountColumns, type AmountColumns } from './amounts.js'
import type { FigureOptions, ReportFigures } from './figures.js'

/** One age bucket of a run's open exceptions: e.g. { bucket: '0-1 days', count: 12, amount: '340.10' }. */
export interface AgingBucket {
  bucket: string
  count: number
  /** Exact decimal, as run summaries write amounts. */
  amount: string
}

/** Exception aging of a run, in the buckets' display order; null when none are recorded. */
export type ExceptionAging = (workspace: string, runId: string) => Promise<AgingBucket[] | null>

export interface RunReport {
  run: RunView
  /** Null for a dry run: it kept only its summary. */
  figures: ReportFigures | null
  aging: AgingBucket[] | null
  /** Why aging could not be read (the rest of the report stands). */
  aging_error: string | null
  generated_at: string
}

export interface ReportDeps {
  db: Kysely<Database>
  runs: RunsService
  log: FastifyBaseLogger
  /** The figures of a result folder (figures-thread.ts computes them off the event loop). */
  figures: (dir: string, amounts: AmountColumns, opts: FigureOptions) => Promise<ReportFigures>
  exceptionAging?: ExceptionAging
}

/** The report of run `id` in workspace `ws`: 404 for no such run, 409 unless it completed (as its result pages). */
export async function runReport(deps: ReportDeps, ws: string, id: string, opts: FigureOptions): Promise<RunReport> {
  const run = await deps.runs.get(ws, id)
  // the result pages' own refusals (results_not_ready, …); a dry run still has its summary to show
  const dir = run.status === 'completed' && run.dry_run ? null : await deps.runs.completedDir(ws, id)
  let figures: ReportFigures | null = null
  if (dir !== null) {
    const { recipe } = await deps.db
      .selectFrom('runs')
      .select('recipe')
      .where('id', '=', id)
      .where('workspace_id', '=', ws)
      .executeTakeFirstOrThrow()
    figures = await deps.figures(dir, await amountColumns(dir, recipe), opts)
  }
  let aging: AgingBucket[] | null = null
  let aging_error: string | null = null
  if (deps.exceptionAging) {
    try {
      aging = await deps.exceptionAging(ws, id)
    } catch (err) {
      // an optional section: the report stands without it, and says why
      deps.log.warn({ run_id: id, err }, 'exception aging unavailable for the run report')
      aging_error = (err as Error).message
    }
  }
  return { run, figures, aging, aging_error, generated_at: new Date().toISOString() }
}
