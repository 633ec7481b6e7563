// The body of a run: load the two sides, match them, write the results. It runs in a worker
// thread for the service (so the API keeps answering, and a cancel can stop it at once) and in
// process for `concord reconcile`; either way it reports progress through a callback.

import { type RunSummary, reconcile } from '../engine/reconcile.js'
import { resolveConditions, selectRows } from '../engine/load/filter.js'
import { describeTable, type Table, takeRows } from '../engine/data/table.js'
import type { FilterCondition } from '../engine/data/types.js'
import type { Recipe } from '../recipes/schema.js'
import { EngineContext, type Source } from '../sources/connector.js'
import { type ConnectorContext, type ConnectorRegistry, loadConnectors } from '../sources/registry.js'
import type { ResultsInput } from './results.js'
import { type ResultsWriter, setsWriter } from './write-sets.js'

export type RunMode = 'sample' | 'full'

export interface JobSpec {
  runId: string
  /** The recipe as it runs: its parameters already added to the scopes. */
  recipe: Recipe
  version: number | null
  mode: RunMode
  /** memory: the in-process engine; postgres: the joins run in the sources' database. */
  engine?: 'memory' | 'postgres'
  dryRun: boolean
  /** The two sources, with their full (unredacted) configs. */
  sources: { left: Source; right: Source }
  /** The sources of the recipe's lookups, by lookup name: loaded whole, in either mode. */
  lookups?: Record<string, Source>
  /** sample mode: the scoped tables loaded in the service. */
  sample?: { left: Table; right: Table }
  connectors: Omit<ConnectorContext, 'log'>
  /** Where the result files go; null for a dry run. */
  outDir: string | null
  /** A run that makes exceptions: the open items it may carry and close (src/exceptions/). */
  exceptions?: import('../exceptions/batch.js').ExceptionJob
}

export interface JobProgress {
  phase: 'queued' | 'loading' | 'matching' | 'writing' | 'done'
  rows_loaded: { left: number | null; right: number | null }
  pass: string | null
  percent: number
}

export function initialProgress(): JobProgress {
  return { phase: 'queued', rows_loaded: { left: null, right: null }, pass: null, percent: 0 }
}

/** The rows of a loaded table within a recipe side's scope (the table itself when it has none). */
export function inScope(table: Table, scope: FilterCondition[]): Table {
  if (!scope.length) return table
  return takeRows(table, selectRows(table, resolveConditions(describeTable(table), scope)))
}

export interface JobOptions {
  signal?: AbortSignal
  /**
   * A registry the caller already opened and closes itself (`concord reconcile` checked the recipe
   * against the sources through it, and its file cache holds what it parsed); without one the job
   * opens its own.
   */
  connectors?: ConnectorRegistry
  /**
   * Writes a completed run's results; by default the Arrow files into `spec.outDir` (nothing when
   * it is null). `concord reconcile --out` encodes CSV from the tables in memory instead. A writer
   * may call `alongside` (the run's own work after matching: its exceptions) while a helper thread
   * writes; if it does not, the job calls it after.
   */
  write?: ResultsWriter
  /** Replaces the loaded sides before matching (open items carried in from earlier runs). */
  prepareTables?: (tables: { left: Table; right: Table }) => Promise<{ left: Table; right: Table }>
  /** Sees a completed run's results before they are written (its exceptions are made from them). */
  afterMatch?: (results: ResultsInput, lookups: Record<string, Table>) => void
}

/** Runs a job; resolves with the summary once the results (if any) are written. */
export async function runJob(
  spec: JobSpec,
  onProgress: (p: JobProgress) => void = () => {},
  { signal, connectors, write = storeIn(spec.outDir), prepareTables, afterMatch }: JobOptions = {},
): Promise<RunSummary> {
  const progress: JobProgress = { ...initialProgress(), phase: 'loading' }
  const report = (patch: Partial<JobProgress>) => {
    Object.assign(progress, patch)
    onProgress({ ...progress, rows_loaded: { ...progress.rows_loaded } })
  }
  report({})
  const keys = { leftKey: spec.recipe.left.key, rightKey: spec.recipe.right.key }
  // opened on first use: a sample run without lookups loads nothing through a connector
  let registry: Promise<ConnectorRegistry> | undefined = connectors && Promise.resolve(connectors)
  if (spec.engine !== undefined && spec.engine !== 'memory') {
    registry ??= loadConnectors(spec.connectors)
    let pushed: Pick<ResultsInput, 'result' | 'records'>
    try {
      pushed = await pushdown(spec, spec.engine, await registry, report)
    } finally {
      if (!connectors) await (await registry.catch(() => undefined))?.close()
    }
    return finish({ ...pushed, ...keys }, report, write, (r) => afterMatch?.(r, {}))
  }
  let tables: { left: Table; right: Table }
  let lookups: Record<string, Table>
  try {
    const load = async (source: Source, scope: FilterCondition[]): Promise<Table> => {
      registry ??= loadConnectors(spec.connectors)
      const scoped = await (
        await registry
      )
        .get(source.type)
        .registerScoped(new EngineContext(), source.alias, source, scope, { signal })
      return scoped.table
    }
    if (spec.mode === 'sample') {
      if (!spec.sample) throw new Error('a sample run needs the loaded scoped tables')
      // the same scope (and parameters) a full run loads with, applied to the loaded tables
      tables = {
        left: inScope(spec.sample.left, spec.recipe.left.scope ?? []),
        right: inScope(spec.sample.right, spec.recipe.right.scope ?? []),
      }
      report({ rows_loaded: { left: tables.left.length, right: tables.right.length }, percent: 30 })
    } else {
      const left = await load(spec.sources.left, spec.recipe.left.scope ?? [])
      report({ rows_loaded: { left: left.length, right: null }, percent: 15 })
      const right = await load(spec.sources.right, spec.recipe.right.scope ?? [])
      report({ rows_loaded: { left: left.length, right: right.length }, percent: 30 })
      tables = { left, right }
    }
    // a lookup table is read whole, whatever the sides' scopes (an FX rate from before the period counts)
    lookups = {}
    for (const [name, source] of Object.entries(spec.lookups ?? {})) lookups[name] = await load(source, [])
  } finally {
    if (!connectors) await (await registry?.catch(() => undefined))?.close()
  }
  if (prepareTables) tables = await prepareTables(tables)
  signal?.throwIfAborted()
  report({ phase: 'matching' })
  try {
    const result = reconcile(spec.recipe, tables.left, tables.right, {
      version: spec.version ?? undefined,
      signal,
      lookups,
      onProgress: (p) => report({ pass: p.pass, percent: 30 + Math.round(p.percent * 0.55) }),
      onMatches: write?.matches && ((early) => write.matches!({ result: early, ...keys })),
    })
    return await finish({ result, ...keys }, report, write, (r) => afterMatch?.(r, lookups))
  } catch (err) {
    await write?.abandon?.()
    throw err
  }
}

/** The default writer: the Arrow files into `dir` (the run's own work alongside), or nothing for a dry run. */
function storeIn(dir: string | null): JobOptions['write'] {
  return dir ? setsWriter(dir, 'arrow', { alongside: true }) : undefined
}

async function finish(
  results: ResultsInput,
  report: (patch: Partial<JobProgress>) => void,
  write: JobOptions['write'],
  afterMatch: (results: ResultsInput) => void,
): Promise<RunSummary> {
  const { summary } = results.result
  // a failed pass leaves the progress where the run stopped
  if (summary.status !== 'completed') {
    await write?.abandon?.()
    return summary
  }
  let along = false
  const alongside = () => {
    if (along) return
    along = true
    afterMatch(results)
  }
  if (write) {
    report({ phase: 'writing', percent: 85 })
    await write(results, alongside)
  }
  alongside()
  report({ phase: 'done', percent: 100 })
  return summary
}

async function pushdown(
  spec: JobSpec,
  engine: string,
  registry: ConnectorRegistry,
  report: (patch: Partial<JobProgress>) => void,
): Promise<Pick<ResultsInput, 'result' | 'records'>> {
  // the engine is the left source's connector's to offer (src/sources/connector.ts, pushdown)
  return registry.pushdownEngine(spec.sources.left, engine).run(spec.recipe, spec.sources, {
    version: spec.version ?? undefined,
    onProgress: (p) => {
      if (p.loaded) report({ rows_loaded: { left: p.loaded[0], right: p.loaded[1] }, percent: 30, phase: 'matching' })
      else report({ pass: p.pass, percent: 30 + Math.round(p.percent * 0.55) })
    },
  })
}
