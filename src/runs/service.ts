// Runs: a recipe matched as a background job. A run is a database row (what ran, status,
// progress, summary) and, once completed, a folder of result files. Jobs run in worker threads,
// at most RUN_CONCURRENCY at a time, the rest queued; a cancel terminates the thread. Results
// appear all at once: the worker writes them into a temporary folder, which is renamed into
// place before the row turns `completed`. On start-up, runs left `queued` or `running` by a
// crash or restart become `interrupted`, and their partial files are removed.

import { randomUUID } from 'node:crypto'
import { mkdir, readdir, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Worker } from 'node:worker_threads'
import type { FastifyBaseLogger } from 'fastify'
import fp from 'fastify-plugin'
import { type Kysely, sql, type Transaction } from 'kysely'
import { type Attribution, SYSTEM } from '../audit/service.js'
import type { Config } from '../config.js'
import type { Database, RunRow, RunStatus } from '../db/schema.js'
import type { RunSummary } from '../engine/reconcile.js'
import { resolveConditions } from '../engine/load/filter.js'
import { describeTable, type Table } from '../engine/data/table.js'
import { ConcordError, notFound } from '../errors.js'
import { applyParams } from '../recipes/params.js'
import { isProbabilistic, type Recipe, type RecipeModel } from '../recipes/schema.js'
import type { RecipesService } from '../recipes/service.js'
import type { Source } from '../sources/connector.js'
import { scopeOwner, type SourcesService } from '../sources/service.js'
import { initialProgress, type JobProgress, type JobSpec, type RunMode } from './job.js'
import type { Metrics } from '../metrics.js'
import { PagesThread } from './pages-thread.js'
import { WorkerPool } from './pool.js'
import { CsvExporter } from './exporter.js'
import { type RunObservers, runChanged } from './events.js'

export interface StartRun {
  recipe_id?: string
  version?: number
  recipe?: Recipe
  mode?: RunMode
  dry_run?: boolean
  params?: Record<string, unknown>
  engine?: 'memory' | 'postgres'
  /** A completed run whose probabilistic passes' models the same-named passes reuse (no EM). */
  reuse_model_from?: string
  /** A sample run's named set of scoped tables (see sources' scopeOwner). */
  scope_set?: string
  /** Carry the saved recipe's open exceptions into the run (src/exceptions/carry.ts). */
  carry_open_items?: boolean
}

export interface RunView {
  id: string
  status: RunStatus
  mode: RunMode
  engine: 'memory' | 'postgres'
  dry_run: boolean
  recipe_id: string | null
  recipe_version: number | null
  recipe_name: string
  params: Record<string, string | number | boolean>
  progress: JobProgress
  summary: RunSummary | null
  error: { error: string; message: string; suggestion?: string } | null
  retry_of: string | null
  carry_open_items: boolean
  created_at: string
  started_at: string | null
  finished_at: string | null
}

/** How often a run waiting for another instance's run of its recipe looks again. */
const RECIPE_TURN_POLL_MS = 250
const FINISHED: ReadonlySet<RunStatus> = new Set(['completed', 'failed', 'cancelled', 'interrupted'])

/**
 * What other services add to a run's life (exceptions, src/exceptions/service.ts): `prepare`
 * completes a job's spec before it runs; `removing` and `removed` hear of a deleted run; `finished` runs in the
 * transaction that records a run's outcome, with whatever the worker sent beside the summary (`extra`). A `finished` hook
 * that throws rolls the outcome back: a completed run then becomes failed, its files removed.
 */
export interface RunHooks {
  prepare: ((row: RunRow, spec: JobSpec) => Promise<void>)[]
  finished: ((
    trx: Transaction<Database>,
    run: RunRow,
    outcome: { status: RunStatus; summary?: RunSummary; extra?: unknown },
  ) => Promise<void>)[]
  /** In the transaction that deletes a run's row, before the delete. */
  removing: ((trx: Transaction<Database>, run: RunRow) => Promise<void>)[]
  /** After a run's row (and what cascades from it) was deleted. */
  removed: ((runId: string) => void)[]
}

interface Active {
  worker: Worker
  progress: JobProgress
  savedAt: number
  cancelled: boolean
  /** Who cancelled it, for the audit trail. */
  cancelledBy?: Attribution
}

export class RunsService {
  private readonly queue: string[] = []
  private readonly active = new Map<string, Active>()
  /** Launched runs (from taking their turn until their row is final). */
  private readonly settled = new Map<string, Promise<void>>()
  /**
   * Queued or launched runs that take part in their recipe's open items (full, stored runs of a
   * saved recipe): the recipe's id. They take turns, so each learns what the one before it left.
   */
  private readonly openItemsOf = new Map<string, string>()
  /** Launched runs cancelled while they wait for their recipe's turn (`recipeTurn`). */
  private readonly cancelWhileWaiting = new Map<string, Attribution>()
  private closing = false
  private readonly pool: WorkerPool
  /** CSV exports, encoded on export worker threads. */
  readonly exporter = new CsvExporter()
  /** Pages of results and `?key=` lookups, read on their own thread (pages-thread.ts). */
  readonly pages = new PagesThread()
  /** This instance: it owns the runs it queued and beats while it lives (instances table). */
  readonly instance = randomUUID()
  private heartbeat: NodeJS.Timeout | undefined
  /** A queued sample run's scoped tables, captured when it was started. */
  private readonly samples = new Map<string, { left: Table; right: Table }>()
  readonly hooks: RunHooks = { prepare: [], finished: [], removing: [], removed: [] }

  constructor(
    private readonly db: Kysely<Database>,
    private readonly recipes: RecipesService,
    private readonly sources: SourcesService,
    private readonly config: Config,
    private readonly log: FastifyBaseLogger,
    private readonly metrics?: Metrics,
    /** The audit trail and webhooks, told of each change of a run's row in its transaction. */
    private readonly observers: RunObservers = {},
  ) {
    this.pool = new WorkerPool(config.runConcurrency)
  }

  get runsDir(): string {
    return this.config.runsDir
  }

  resultsDir(id: string): string {
    return join(this.runsDir, id)
  }

  private tmpDir(id: string): string {
    return join(this.runsDir, `.tmp-${id}`)
  }

  /**
   * Joins the database's instances and starts beating; then recovers what dead instances left.
   * Every RUN_HEARTBEAT_MS this instance says it lives, and takes over (as `interrupted`) the
   * unfinished runs of any instance silent for five beats: a crashed or killed instance's runs
   * become retryable on any other, while the live instances' runs are never touched.
   */
  async join(): Promise<void> {
    await mkdir(this.runsDir, { recursive: true })
    await this.db.insertInto('instances').values({ id: this.instance }).execute()
    // instances silent for a day are gone for good (their runs were taken over long since)
    await this.db
      .deleteFrom('instances')
      .where('heartbeat_at', '<', sql<Date>`now() - interval '1 day'`)
      .execute()
    // an embedded database belongs to one process (db/lock.ts): whoever ran runs before is gone
    await this.recover(this.config.databaseUrl === undefined)
    // partial results no unfinished run will finish (a crash before recovery took the row)
    const unfinished = new Set(
      (await this.db.selectFrom('runs').select('id').where('status', 'in', ['queued', 'running']).execute()).map(
        (r) => r.id,
      ),
    )
    for (const name of await readdir(this.runsDir))
      if (name.startsWith('.tmp-') && !unfinished.has(name.slice(5)))
        await rm(join(this.runsDir, name), { recursive: true, force: true })
    this.heartbeat = setInterval(() => void this.beat(), this.config.runHeartbeatMs)
    this.heartbeat.unref()
  }

  private async beat(): Promise<void> {
    try {
      await this.db
        .updateTable('instances')
        .set({ heartbeat_at: sql`now()` })
        .where('id', '=', this.instance)
        .execute()
      await this.recover()
    } catch (err) {
      this.log.warn({ err }, 'run heartbeat failed')
    }
  }

  /**
   * Unfinished runs whose owner stopped beating (or left no trace) become `interrupted`; their
   * partial files go. `othersGone`: every instance but this one is known to be dead.
   */
  async recover(othersGone = false): Promise<void> {
    const lapse = sql<Date>`now() - ${`${5 * this.config.runHeartbeatMs} milliseconds`}::interval`
    const found = await this.db
      .selectFrom('runs')
      .select('id')
      .where('status', 'in', ['queued', 'running'])
      .where((eb) =>
        eb.or([
          eb('owner', 'is', null),
          othersGone ? eb('owner', '<>', this.instance) : eb.val(false),
          eb.not(
            eb.exists(
              eb
                .selectFrom('instances')
                .select('id')
                .whereRef('instances.id', '=', 'runs.owner')
                .where('heartbeat_at', '>', lapse),
            ),
          ),
        ]),
      )
      .execute()
    if (!found.length) return
    // each taken over in one transaction with its audit row; the status condition leaves alone a
    // run that finished, or that another instance took over, since it was found
    const stale = await this.db.transaction().execute(async (tx) => {
      const before = await tx
        .selectFrom('runs')
        .selectAll()
        .where(
          'id',
          'in',
          found.map((r) => r.id),
        )
        .where('status', 'in', ['queued', 'running'])
        .forUpdate()
        .execute()
      if (!before.length) return []
      const taken = await tx
        .updateTable('runs')
        .set({
          status: 'interrupted',
          finished_at: new Date(),
          error: JSON.stringify({
            error: 'interrupted',
            message: 'the instance running this run stopped while it was in progress; nothing of it was kept',
            suggestion: `POST /api/runs/<id>/retry starts it again`,
          }),
        })
        .where(
          'id',
          'in',
          before.map((r) => r.id),
        )
        .returningAll()
        .execute()
      for (const after of taken)
        await runChanged(
          tx,
          this.observers,
          'run.interrupted',
          before.find((b) => b.id === after.id),
          after,
          SYSTEM,
        )
      return taken
    })
    for (const { id } of stale) {
      await rm(this.resultsDir(id), { recursive: true, force: true })
      await rm(this.tmpDir(id), { recursive: true, force: true })
    }
    if (stale.length) this.log.warn({ runs: stale.map((r) => r.id) }, 'runs of a stopped instance interrupted')
  }

  /** Validates the request, records the run as `queued` and schedules it. */
  async start(
    ws: string,
    body: StartRun,
    /** The run this one retries, whose recipe's origin and parameters it records from the start. */
    retryOf: Pick<RunRow, 'id' | 'recipe_id' | 'recipe_version' | 'params'> | null = null,
    /** The request's logger, so the line that queues the run carries the request id too. */
    log: FastifyBaseLogger = this.log,
    /** Whose scoped tables a sample run reads (a chat session), else the workspace's. */
    owner = '',
    /** Who started it, for the audit trail. */
    by: Attribution = SYSTEM,
  ): Promise<RunView> {
    if ((body.recipe_id === undefined) === (body.recipe === undefined)) {
      throw new ConcordError(
        'invalid_request',
        'give either recipe_id (a saved recipe) or recipe (an inline one)',
        400,
        '{ "recipe_id": "…", "mode": "full" }',
      )
    }
    const mode = body.mode ?? 'full'
    const engine = body.engine ?? 'memory'
    let recipe: Recipe
    let recipeId: string | null = null
    let version: number | null = null
    if (body.recipe_id !== undefined) {
      const saved = await this.recipes.get(ws, body.recipe_id, body.version)
      recipe = saved.recipe
      recipeId = saved.id
      version = saved.version
    } else {
      recipe = (await this.recipes.checked(ws, body.recipe)).recipe
    }
    if (body.reuse_model_from !== undefined) recipe = await this.withModels(ws, recipe, body.reuse_model_from)
    const { recipe: applied, used } = applyParams(recipe, body.params ?? {})
    await this.recipes.checked(ws, applied)
    const sample: Partial<Record<'left' | 'right', Table>> = {}
    if (mode === 'sample') {
      const tables = this.sources.engine(ws, body.scope_set ? scopeOwner(body.scope_set) : owner)
      for (const side of ['left', 'right'] as const) {
        const loaded = tables.get(applied[side].source)
        if (!loaded)
          throw new ConcordError(
            'scope_not_loaded',
            `no scoped table is loaded for ${side} source "${applied[side].source}"`,
            409,
            `load one with POST /api/sources/${applied[side].source}/load-scoped, or run with "mode": "full"`,
          )
        // the recipe's scope and parameters filter the loaded rows: refuse now what would not apply
        try {
          resolveConditions(describeTable(loaded.table), applied[side].scope ?? [])
        } catch (err) {
          if (!(err instanceof ConcordError)) throw err
          throw new ConcordError(
            err.code,
            `the ${side} scope does not apply to the loaded scoped table of "${applied[side].source}": ${err.message}`,
            400,
            err.suggestion ?? 'load the scoped table again, or run with "mode": "full"',
          )
        }
        sample[side] = loaded.table
      }
    }
    if (engine !== 'memory') {
      if (mode === 'sample')
        throw new ConcordError(
          'pushdown_unavailable',
          `a sample run uses the scoped tables loaded in memory: it cannot run in engine "${engine}"`,
          400,
          'run with "mode": "full", or with engine "memory"',
        )
      await this.checkPushdown(ws, applied, engine)
    }
    const carry = body.carry_open_items ?? false
    if (
      carry &&
      (mode !== 'full' ||
        body.dry_run ||
        engine !== 'memory' ||
        (retryOf ?? { recipe_id: recipeId }).recipe_id === null)
    )
      throw new ConcordError(
        'carry_unavailable',
        'carry_open_items needs a full run (not a dry run) of a saved recipe on engine memory',
        400,
        'run a saved recipe with "mode": "full", or leave carry_open_items out',
      )
    const id = randomUUID()
    await this.db.transaction().execute(async (tx) => {
      const queued = await tx
        .insertInto('runs')
        .values({
          id,
          workspace_id: ws,
          recipe_id: retryOf ? retryOf.recipe_id : recipeId,
          recipe_version: retryOf ? retryOf.recipe_version : version,
          recipe: JSON.stringify(applied),
          mode,
          engine,
          dry_run: body.dry_run ?? false,
          params: JSON.stringify(retryOf ? retryOf.params : used),
          status: 'queued',
          progress: JSON.stringify(initialProgress()),
          retry_of: retryOf?.id ?? null,
          owner: this.instance,
          carry_open_items: carry,
        })
        .returningAll()
        .executeTakeFirstOrThrow()
      await runChanged(tx, this.observers, retryOf ? 'run.retried' : 'run.started', undefined, queued, by)
    })
    // the tables as they are now: a later load (another request, another session) does not change this run
    if (sample.left && sample.right) this.samples.set(id, { left: sample.left, right: sample.right })
    log.info({ run_id: id, recipe: applied.name, mode, engine }, 'run queued')
    const recipeOfRun = retryOf ? retryOf.recipe_id : recipeId
    if (mode === 'full' && !body.dry_run && recipeOfRun !== null) this.openItemsOf.set(id, recipeOfRun)
    this.queue.push(id)
    this.pump()
    return this.get(ws, id)
  }

  /** The models a completed run's probabilistic passes used, by pass name (its summary keeps them). */
  async learnedModels(ws: string, runId: string): Promise<Record<string, RecipeModel>> {
    const from = await this.get(ws, runId)
    const learned = Object.fromEntries(
      (from.summary?.passes ?? []).flatMap((p) => (p.probabilistic ? [[p.name, p.probabilistic.model] as const] : [])),
    )
    if (from.status !== 'completed' || Object.keys(learned).length === 0)
      throw new ConcordError(
        'model_not_found',
        `run ${runId} has no probabilistic model (status ${from.status})`,
        400,
        'name a completed run of a recipe with a probabilistic pass',
      )
    return learned
  }

  /**
   * The recipe with the models an earlier run learned, for its probabilistic passes that give
   * none: the run stores them in its summary, so the next run can skip training.
   */
  private async withModels(ws: string, recipe: Recipe, runId: string): Promise<Recipe> {
    const learned = new Map(Object.entries(await this.learnedModels(ws, runId)))
    const passes = recipe.passes.map((p) => {
      if (!isProbabilistic(p) || p.model) return p
      const model = learned.get(p.name)
      if (!model)
        throw new ConcordError(
          'model_not_found',
          `run ${runId} learned no model for pass "${p.name}" (it has: ${[...learned.keys()].join(', ')})`,
          400,
          'reuse a run of the same recipe, or give the pass a "model"',
        )
      return { ...p, model }
    })
    return { ...recipe, passes }
  }

  /** Starts a new run with what an earlier one ran: the same recipe, parameters, mode and engine. */
  async retry(ws: string, id: string, by: Attribution = SYSTEM): Promise<RunView> {
    const row = await this.row(ws, id)
    if (!FINISHED.has(row.status))
      throw new ConcordError('run_in_progress', `run ${id} is still ${row.status}`, 409, 'cancel it first')
    // the stored recipe already has its parameters in its scopes; its origin (saved recipe and
    // version) and parameters are recorded as the run is queued, so its summary carries them too
    const { params: _declared, ...recipe } = row.recipe
    return this.start(
      ws,
      { recipe, mode: row.mode, dry_run: row.dry_run, engine: row.engine, carry_open_items: row.carry_open_items },
      row,
      this.log,
      '',
      by,
    )
  }

  private async checkPushdown(ws: string, recipe: Recipe, engine: string): Promise<void> {
    const sources = {
      left: await this.sources.source(ws, recipe.left.source),
      right: await this.sources.source(ws, recipe.right.source),
    }
    // the engine is the left source's connector's to offer, and the fit its to judge
    const problem = this.sources.pushdownEngine(sources.left, engine).problem(recipe, sources)
    if (problem)
      throw new ConcordError(
        'pushdown_unavailable',
        problem,
        400,
        'use engine "memory" (the message says what the other engine needs)',
      )
  }

  /**
   * Launches queued runs while fewer than RUN_CONCURRENCY are launched (counted from launch, not
   * from the worker's start: a run takes a few awaits to get there, and counting only those that
   * had let a burst of requests all start at once). A full run of a recipe waits while another of
   * the same recipe is launched: each reads the recipe's open items when it starts (the exceptions'
   * `prepare` hook), and two at once would both open the records neither had seen as open items.
   * Runs of other recipes pass it in the queue.
   */
  private pump(): void {
    while (!this.closing && this.settled.size < this.config.runConcurrency) {
      const busy = new Set<string>()
      for (const id of this.settled.keys()) {
        const recipe = this.openItemsOf.get(id)
        if (recipe !== undefined) busy.add(recipe)
      }
      const at = this.queue.findIndex((id) => !busy.has(this.openItemsOf.get(id) ?? ''))
      if (at < 0) return
      const [id] = this.queue.splice(at, 1)
      const done = this.launch(id).catch((err) => this.log.error({ err, run_id: id }, 'run launch failed'))
      this.settled.set(id, done)
      void done.finally(() => {
        this.settled.delete(id)
        this.openItemsOf.delete(id)
        this.cancelWhileWaiting.delete(id)
        this.pump()
      })
    }
  }

  private async launch(id: string): Promise<void> {
    try {
      await this.execute(id)
    } catch (err) {
      // a source deleted since the run was queued, a worker that could not start, …
      this.active.delete(id)
      const body = err instanceof ConcordError ? err.toJSON() : { error: 'run_failed', message: (err as Error).message }
      await this.finish(id, 'failed', { error: body })
    } finally {
      this.samples.delete(id)
    }
  }

  private async execute(id: string): Promise<void> {
    const row = await this.row(null, id)
    const ws = row.workspace_id
    if (row.status !== 'queued') return
    const spec: JobSpec = {
      runId: id,
      recipe: row.recipe,
      version: row.recipe_version,
      mode: row.mode,
      engine: row.engine,
      dryRun: row.dry_run,
      sources: {
        left: await this.sources.source(ws, row.recipe.left.source),
        right: await this.sources.source(ws, row.recipe.right.source),
      },
      lookups: await this.lookupSources(ws, row.recipe),
      connectors: {
        dataDir: this.config.dataDir,
        statementTimeoutMs: this.config.sourceStatementTimeoutMs,
        poolMax: this.config.sourcePoolMax,
        modules: this.config.connectorModules,
      },
      outDir: row.dry_run ? null : this.tmpDir(id),
    }
    if (row.mode === 'sample') {
      const captured = this.samples.get(id)
      if (!captured)
        return this.finish(id, 'failed', {
          error: { error: 'scope_not_loaded', message: 'the scoped tables this run was started with are gone' },
        })
      spec.sample = captured
    }
    const recipeId = this.openItemsOf.get(id)
    // a run in its recipe's open items is running from its turn on, before it reads them
    if (recipeId !== undefined && !(await this.recipeTurn(id, recipeId))) return
    for (const prepare of this.hooks.prepare) await prepare(row, spec)
    const mine = recipeId !== undefined || (await this.markRunning(this.db, id))
    if (!mine) return // taken over (interrupted) or cancelled meanwhile
    // with nothing to stop it, no await between here and `active` (where a cancel finds the worker)
    if ((this.closing || this.cancelWhileWaiting.has(id)) && (await this.stoppedBeforeStart(id))) return
    const pooled = this.pool.acquire()
    const { worker } = pooled
    const active: Active = {
      worker,
      progress: { ...initialProgress(), phase: 'loading' },
      savedAt: 0,
      cancelled: false,
    }
    this.active.set(id, active)
    this.metrics?.runsActive.inc()
    this.log.info({ run_id: id }, 'run started')
    await new Promise<void>((resolve) => {
      let finished = false
      const end = async (
        status: RunStatus,
        patch: { summary?: RunSummary; error?: RunView['error']; extra?: unknown },
        reusable: boolean,
      ) => {
        if (finished) return
        finished = true
        this.active.delete(id)
        this.metrics?.runsActive.dec()
        worker.off('message', onMessage).off('error', onError).off('exit', onExit)
        // a worker that finished its job normally serves the next one; any other is let go
        if (reusable) this.pool.release(pooled)
        else await worker.terminate()
        const by = status === 'cancelled' ? active.cancelledBy : undefined
        await this.finish(id, status, patch, active.progress, by).catch((err) =>
          this.log.error({ err, run_id: id }, 'run bookkeeping failed'),
        )
        resolve()
      }
      const onMessage = (msg: {
        type: string
        progress?: JobProgress
        summary?: RunSummary
        error?: RunView['error']
        exceptions?: unknown
      }) => {
        if (msg.type === 'progress' && msg.progress) {
          active.progress = msg.progress
          void this.saveProgress(id, active)
        } else if (msg.type === 'done' && msg.summary) {
          const failed = msg.summary.passes.find((p) => p.status === 'failed')
          if (failed)
            void end(
              'failed',
              {
                summary: msg.summary,
                error: { error: 'pass_failed', message: `pass ${failed.name} failed: ${failed.error}` },
              },
              true,
            )
          else void end('completed', { summary: msg.summary, extra: msg.exceptions }, true)
        } else if (msg.type === 'failed') void end('failed', { error: msg.error }, true)
      }
      const onError = (err: Error) =>
        void end('failed', { error: { error: 'run_failed', message: err.message } }, false)
      const onExit = () => {
        if (active.cancelled)
          void end('cancelled', { error: { error: 'cancelled', message: 'the run was cancelled' } }, false)
        else if (this.closing)
          void end(
            'interrupted',
            { error: { error: 'interrupted', message: 'the service stopped during the run' } },
            false,
          )
        else void end('failed', { error: { error: 'run_failed', message: 'the run stopped unexpectedly' } }, false)
      }
      worker.on('message', onMessage).on('error', onError).on('exit', onExit)
      worker.postMessage(spec)
    })
  }

  /** The sources of the recipe's lookups, by lookup name (one deleted since the run was queued fails it). */
  private async lookupSources(ws: string, recipe: Recipe): Promise<Record<string, Source>> {
    const out: Record<string, Source> = {}
    for (const [name, def] of Object.entries(recipe.lookups ?? {}))
      out[name] = await this.sources.source(ws, def.source)
    return out
  }

  /** Progress goes to the database at most once a second (and is read live from memory). */
  private async saveProgress(id: string, active: Active): Promise<void> {
    const now = Date.now()
    if (now - active.savedAt < 1000) return
    active.savedAt = now
    await this.db
      .updateTable('runs')
      .set({ progress: JSON.stringify(active.progress) })
      .where('id', '=', id)
      .where('owner', '=', this.instance)
      .where('status', '=', 'running')
      .execute()
      .catch(() => {})
  }

  /** Records the outcome; a completed run's files are moved into place first, then the row says so. */
  private async finish(
    id: string,
    status: RunStatus,
    patch: { summary?: RunSummary; error?: RunView['error']; extra?: unknown },
    lastProgress?: JobProgress,
    /** Who caused it (a cancel); the service itself otherwise. */
    by: Attribution = SYSTEM,
  ): Promise<void> {
    this.samples.delete(id)
    const row = await this.row(null, id)
    const tmp = this.tmpDir(id)
    let outcome = status
    if (status === 'completed' && !row.dry_run) {
      try {
        await rename(tmp, this.resultsDir(id))
      } catch (err) {
        outcome = 'failed'
        patch = {
          ...patch,
          error: { error: 'results_not_stored', message: `the results could not be stored: ${(err as Error).message}` },
        }
      }
    }
    await rm(tmp, { recursive: true, force: true })
    try {
      // the outcome, its audit row, its webhook event and its exceptions commit together
      const recorded = await this.record(id, row, outcome, patch, lastProgress, by).catch(async (err) => {
        if (outcome !== 'completed') throw err
        // a hook refused the completed run (its exceptions could not be stored): it fails instead
        this.log.error({ err, run_id: id }, 'completed run not recorded: its hooks failed')
        await rm(this.resultsDir(id), { recursive: true, force: true })
        outcome = 'failed'
        patch = {
          ...patch,
          error: {
            error: 'exceptions_not_stored',
            message: `the run's exceptions could not be stored: ${(err as Error).message}`,
          },
        }
        return this.record(id, row, outcome, patch, lastProgress, by)
      })
      if (!recorded) {
        await rm(this.resultsDir(id), { recursive: true, force: true })
        this.log.warn({ run_id: id, status: outcome }, 'run outcome not recorded: the run was taken over meanwhile')
        return
      }
    } catch (err) {
      // the row could not say `completed`: the files must not outlive that
      await rm(this.resultsDir(id), { recursive: true, force: true })
      throw err
    }
    const seconds = row.started_at ? (Date.now() - new Date(row.started_at).getTime()) / 1000 : 0
    this.metrics?.runSeconds.observe({ status: outcome, engine: row.engine, mode: row.mode }, seconds)
    if (outcome === 'completed' && patch.summary) {
      const rows = patch.summary.left.rows + patch.summary.right.rows
      this.metrics?.runRows.inc({ side: 'left' }, patch.summary.left.rows)
      this.metrics?.runRows.inc({ side: 'right' }, patch.summary.right.rows)
      if (seconds > 0) this.metrics?.runRowsPerSecond.observe({ engine: row.engine }, rows / seconds)
    }
    this.log.info({ run_id: id, status: outcome, matches: patch.summary?.matches, seconds }, 'run finished')
  }

  /**
   * The outcome's row update and the hooks, in one transaction; false when the run was not this
   * instance's unfinished run any more.
   */
  private async record(
    id: string,
    row: RunRow,
    outcome: RunStatus,
    patch: { summary?: RunSummary; error?: RunView['error']; extra?: unknown },
    lastProgress?: JobProgress,
    by: Attribution = SYSTEM,
  ): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const recorded = await trx
        .updateTable('runs')
        .set({
          status: outcome,
          finished_at: new Date(),
          // a completed run is done; any other keeps where it stopped (phase, pass, rows, percent)
          progress: JSON.stringify(
            outcome === 'completed'
              ? { ...(lastProgress ?? row.progress), phase: 'done', percent: 100 }
              : (lastProgress ?? row.progress),
          ),
          summary: patch.summary ? JSON.stringify(patch.summary) : null,
          error: patch.error ? JSON.stringify(patch.error) : null,
        })
        .where('id', '=', id)
        // only this instance's run, still unfinished: one another instance took over as
        // interrupted (this one was silent too long) stays so, and keeps no files
        .where('owner', '=', this.instance)
        .where('status', 'in', ['queued', 'running'])
        .returningAll()
        .executeTakeFirst()
      if (!recorded) return false
      await runChanged(trx, this.observers, `run.${outcome}`, row, recorded, by)
      for (const finished of this.hooks.finished)
        await finished(trx, recorded, { status: outcome, summary: patch.summary, extra: patch.extra })
      return true
    })
  }

  /**
   * Waits until no other full run of the recipe is running, on any instance (this one's take
   * turns in `pump`), then marks this one running, under a lock of the recipe's row so two
   * instances cannot both pass; a run that finished has committed its exceptions with its status,
   * so the open items this run reads next include them. False when the run is no longer this
   * instance's to start (cancelled while it waited, taken over, or the service is stopping).
   */
  private async recipeTurn(id: string, recipeId: string): Promise<boolean> {
    let told = false
    for (;;) {
      if (await this.stoppedBeforeStart(id)) return false
      const turn = await this.db.transaction().execute(async (tx) => {
        await tx.selectFrom('recipes').select('id').where('id', '=', recipeId).forUpdate().execute()
        const busy = await tx
          .selectFrom('runs')
          .select('id')
          .where('recipe_id', '=', recipeId)
          .where('status', '=', 'running')
          .where('mode', '=', 'full')
          .where('dry_run', '=', false)
          .where('id', '<>', id)
          // this instance's are launched one per recipe (pump): one of its own still 'running'
          // is a row whose outcome could not be recorded, not a run to wait for
          .where('owner', '<>', this.instance)
          .executeTakeFirst()
        return busy ? busy.id : this.markRunning(tx, id)
      })
      if (typeof turn === 'boolean') return turn
      if (!told) this.log.info({ run_id: id, waits_for: turn }, 'run waits for the running run of its recipe')
      told = true
      await new Promise((r) => setTimeout(r, RECIPE_TURN_POLL_MS))
    }
  }

  /** Its row turns `running`: false when it is no longer this instance's queued run (taken over, cancelled). */
  private async markRunning(db: Kysely<Database>, id: string): Promise<boolean> {
    const mine = await db
      .updateTable('runs')
      .set({ status: 'running', started_at: new Date() })
      .where('id', '=', id)
      .where('owner', '=', this.instance)
      .where('status', '=', 'queued')
      .returning('id')
      .executeTakeFirst()
    return mine !== undefined
  }

  /**
   * A launched run whose worker has not started yet ends here when it was cancelled meanwhile
   * (`cancel` could not stop a worker it does not have) or the service is stopping: true when so.
   */
  private async stoppedBeforeStart(id: string): Promise<boolean> {
    const cancelledBy = this.cancelWhileWaiting.get(id)
    if (cancelledBy) await this.finishUnstarted(id, 'cancelled', cancelledBy)
    else if (this.closing) await this.finishUnstarted(id, 'interrupted')
    else return false
    return true
  }

  /** A run that never got a worker: cancelled (by whom), or interrupted by the service stopping. */
  private finishUnstarted(id: string, how: 'cancelled' | 'interrupted', by: Attribution = SYSTEM): Promise<void> {
    const error =
      how === 'cancelled'
        ? { error: 'cancelled', message: 'the run was cancelled before it started' }
        : { error: 'interrupted', message: 'the service stopped before the run started' }
    return this.finish(id, how, { error }, undefined, by)
  }

  async cancel(ws: string, id: string, by: Attribution = SYSTEM): Promise<RunView> {
    const row = await this.row(ws, id)
    if (FINISHED.has(row.status))
      throw new ConcordError(
        'run_finished',
        `run ${id} is already ${row.status}`,
        409,
        'only a queued or running run can be cancelled',
      )
    const queued = this.queue.indexOf(id)
    if (queued >= 0) {
      this.queue.splice(queued, 1)
      this.openItemsOf.delete(id)
      await this.finishUnstarted(id, 'cancelled', by)
    } else {
      const active = this.active.get(id)
      if (active) {
        active.cancelled = true
        active.cancelledBy = by
        await active.worker.terminate()
      } else if (this.settled.has(id)) this.cancelWhileWaiting.set(id, by) // perhaps waiting for its recipe's turn
      await this.settled.get(id)
    }
    this.log.info({ run_id: id }, 'run cancelled')
    return this.get(ws, id)
  }

  async remove(ws: string, id: string, by: Attribution = SYSTEM): Promise<void> {
    const row = await this.row(ws, id)
    if (!FINISHED.has(row.status)) await this.cancel(ws, id, by)
    await this.db.transaction().execute(async (tx) => {
      for (const removing of this.hooks.removing) await removing(tx, row)
      const deleted = await tx.deleteFrom('runs').where('id', '=', id).returningAll().executeTakeFirst()
      if (deleted) await runChanged(tx, this.observers, 'run.deleted', deleted, undefined, by)
    })
    for (const removed of this.hooks.removed) removed(id)
    await rm(this.resultsDir(id), { recursive: true, force: true })
    await this.pages.forget(this.resultsDir(id))
    this.log.info({ run_id: id }, 'run deleted')
  }

  async get(ws: string, id: string): Promise<RunView> {
    return this.view(await this.row(ws, id))
  }

  async list(ws: string, limit: number, offset: number): Promise<{ runs: RunView[]; total: number }> {
    const rows = await this.db
      .selectFrom('runs')
      .selectAll()
      .where('workspace_id', '=', ws)
      .orderBy('created_at', 'desc')
      .orderBy('id')
      .limit(limit)
      .offset(offset)
      .execute()
    const { count } = await this.db
      .selectFrom('runs')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('workspace_id', '=', ws)
      .executeTakeFirstOrThrow()
    return { runs: rows.map((r) => this.view(r)), total: Number(count) }
  }

  /** The folder of a completed run's results, or a 409 saying why there are none (yet). */
  async completedDir(ws: string, id: string): Promise<string> {
    const row = await this.row(ws, id)
    if (row.status !== 'completed')
      throw new ConcordError(
        'results_not_ready',
        `run ${id} is ${row.status}`,
        409,
        row.status === 'queued' || row.status === 'running'
          ? 'poll GET /api/runs/<id> until it is completed'
          : 'only a completed run has results',
      )
    if (row.dry_run)
      throw new ConcordError(
        'no_results',
        `run ${id} was a dry run: it kept only its summary`,
        409,
        'run again without dry_run',
      )
    return this.resultsDir(id)
  }

  /** Stops the workers on shutdown; their runs become `interrupted`. */
  async close(): Promise<void> {
    this.closing = true
    for (const id of this.queue.splice(0)) await this.finishUnstarted(id, 'interrupted').catch(() => {})
    for (const active of this.active.values()) await active.worker.terminate()
    await Promise.all(this.settled.values())
    await this.pool.close()
    await this.exporter.close()
    await this.pages.close()
    clearInterval(this.heartbeat)
    await this.db
      .deleteFrom('instances')
      .where('id', '=', this.instance)
      .execute()
      .catch(() => {})
  }

  private async row(ws: string | null, id: string): Promise<RunRow> {
    let query = this.db.selectFrom('runs').selectAll().where('id', '=', id)
    if (ws !== null) query = query.where('workspace_id', '=', ws)
    const row = await query.executeTakeFirst()
    if (!row) throw notFound('run', id, 'GET /api/runs lists the runs')
    return row
  }

  private view(row: RunRow): RunView {
    const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString())
    return {
      id: row.id,
      status: row.status,
      mode: row.mode,
      engine: row.engine,
      dry_run: row.dry_run,
      recipe_id: row.recipe_id,
      recipe_version: row.recipe_version,
      recipe_name: row.recipe.name,
      params: row.params,
      progress: this.active.get(row.id)?.progress ?? row.progress,
      summary: row.summary,
      error: row.error,
      retry_of: row.retry_of,
      carry_open_items: row.carry_open_items,
      created_at: iso(row.created_at)!,
      started_at: iso(row.started_at),
      finished_at: iso(row.finished_at),
    }
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    runs: RunsService
  }
}

export default fp(
  async (app) => {
    const runs = new RunsService(app.db, app.recipes, app.sources, app.config, app.log, app.metrics, {
      audit: app.audit,
      webhooks: app.webhooks,
    })
    await runs.join()
    app.decorate('runs', runs)
    app.addHook('onClose', () => runs.close())
  },
  { name: 'runs', dependencies: ['db', 'sources', 'recipes', 'metrics', 'audit', 'webhooks'] },
)
