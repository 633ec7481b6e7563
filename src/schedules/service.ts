// Schedules: a saved recipe run on a cron expression in a time zone, with its parameters bound to
// values or rolling tokens (rolling.ts) resolved at each firing, and open items carried by
// default (a scheduled run is the daily reconciliation carrying is for).
//
// The next occurrence is a column, so schedules survive restarts. Every SCHEDULER_TICK_MS each
// instance looks for due schedules and claims each with a compare-and-set on next_run_at
// (UPDATE … SET next_run_at = <the next occurrence after now> WHERE id = … AND next_run_at =
// <what it read>): of several instances sharing the database one wins the occurrence and starts
// the run, the others find the row changed. The next occurrence is computed from now, not from
// the missed one, so occurrences missed while every instance was down fire once, not once each.
// A crash between the claim and the run's insertion (one statement apart) loses that occurrence:
// at most once, never twice. The clock is injectable (tick(now)), and POST …/fire runs one now.

import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import fp from 'fastify-plugin'
import { type Kysely, sql } from 'kysely'
import type { Config } from '../config.js'
import type { Database, ScheduleRow } from '../db/schema.js'
import { ConcordError, notFound } from '../errors.js'
import { type Actor, type ExceptionChange, type OnChange, recordChanges } from '../exceptions/changes.js'
import { applyParams } from '../recipes/params.js'
import type { RecipesService } from '../recipes/service.js'
import type { RunsService, RunView } from '../runs/service.js'
import { checkZone, CRON_HINT, CronError, type Cron, nextOccurrence, parseCron } from './cron.js'
import { type Binding, resolveBindings } from './rolling.js'

export interface ScheduleInput {
  recipe_id: string
  name?: string | null
  cron: string
  timezone?: string
  params?: Record<string, Binding>
  carry_open_items?: boolean
  active?: boolean
}

export type SchedulePatch = Partial<Omit<ScheduleInput, 'recipe_id'>> & { version?: number }

export interface ScheduleView {
  id: string
  recipe_id: string
  name: string | null
  cron: string
  timezone: string
  params: Record<string, Binding>
  carry_open_items: boolean
  active: boolean
  next_run_at: string | null
  last_fired_at: string | null
  last_run_id: string | null
  last_error: { error: string; message: string } | null
  version: number
  created_at: string
  updated_at: string
}

const SCHEDULER: Actor = { actor: 'system:scheduler' }

function view(row: ScheduleRow): ScheduleView {
  const iso = (d: Date | null) => (d === null ? null : new Date(d).toISOString())
  return {
    id: row.id,
    recipe_id: row.recipe_id,
    name: row.name,
    cron: row.cron,
    timezone: row.timezone,
    params: row.params,
    carry_open_items: row.carry_open_items,
    active: row.active,
    next_run_at: iso(row.next_run_at),
    last_fired_at: iso(row.last_fired_at),
    last_run_id: row.last_run_id,
    last_error: row.last_error,
    version: row.version,
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  }
}

export class SchedulesService {
  private timer: NodeJS.Timeout | undefined
  private ticking: Promise<void> | null = null
  private onChange: OnChange = async () => {}

  constructor(
    private readonly db: Kysely<Database>,
    private readonly runs: RunsService,
    private readonly recipes: RecipesService,
    private readonly config: Config,
    private readonly log: FastifyBaseLogger,
    /** Milliseconds since the epoch: the scheduler's clock (tests set their own). */
    public clock: () => number = Date.now,
  ) {}

  /** The audit/webhook seam (changes.ts), shared with exceptions. */
  setOnChange(onChange: OnChange): void {
    this.onChange = onChange
  }

  /** The cron expression and zone, checked, with the next occurrence after `now`. */
  private timing(cronText: string, zone: string, now: number): { cron: Cron; next: number } {
    let cron: Cron
    try {
      cron = parseCron(cronText)
    } catch (err) {
      if (!(err instanceof CronError)) throw err
      throw new ConcordError('invalid_cron', `"${cronText}": ${err.message}`, 400, CRON_HINT)
    }
    try {
      checkZone(zone)
    } catch {
      throw new ConcordError(
        'invalid_timezone',
        `"${zone}" is not a time zone`,
        400,
        'an IANA name such as "UTC", "Europe/Lisbon" or "America/Sao_Paulo"',
      )
    }
    const next = nextOccurrence(cron, zone, now)
    if (next === null)
      throw new ConcordError(
        'invalid_cron',
        `"${cronText}" never fires (no date in the next five years matches)`,
        400,
        CRON_HINT,
      )
    return { cron, next }
  }

  /** The bindings resolved as of now, checked against the recipe's parameters as a run would. */
  private async checkParams(
    ws: string,
    recipeId: string,
    params: Record<string, Binding>,
    zone: string,
  ): Promise<void> {
    const { recipe } = await this.recipes.get(ws, recipeId)
    applyParams(recipe, resolveBindings(recipe, params, zone, this.clock()))
  }

  private async change(
    trx: Parameters<OnChange>[0],
    ws: string,
    actor: Actor,
    rest: Omit<ExceptionChange, 'workspace' | 'actor'>,
  ) {
    await this.onChange(trx, {
      workspace: ws,
      actor: actor.actor,
      ...(actor.request_id ? { request_id: actor.request_id } : {}),
      ...rest,
    })
  }

  async create(ws: string, input: ScheduleInput, actor: Actor): Promise<ScheduleView> {
    const zone = input.timezone ?? 'UTC'
    const active = input.active ?? true
    const { next } = this.timing(input.cron, zone, this.clock())
    await this.checkParams(ws, input.recipe_id, input.params ?? {}, zone)
    return this.db.transaction().execute(async (trx) => {
      const row = await trx
        .insertInto('schedules')
        .values({
          id: randomUUID(),
          workspace_id: ws,
          recipe_id: input.recipe_id,
          name: input.name ?? null,
          cron: input.cron.trim(),
          timezone: zone,
          params: JSON.stringify(input.params ?? {}),
          carry_open_items: input.carry_open_items ?? true,
          active,
          next_run_at: active ? new Date(next) : null,
        })
        .returningAll()
        .executeTakeFirstOrThrow()
      const out = view(row)
      await this.change(trx, ws, actor, {
        action: 'schedule.create',
        entity: { type: 'schedule', id: row.id },
        after: out,
      })
      return out
    })
  }

  async list(ws: string): Promise<ScheduleView[]> {
    const rows = await this.db
      .selectFrom('schedules')
      .selectAll()
      .where('workspace_id', '=', ws)
      .orderBy('created_at')
      .orderBy('id')
      .execute()
    return rows.map(view)
  }

  private async row(ws: string, id: string, db: Kysely<Database> = this.db): Promise<ScheduleRow> {
    const row = await db
      .selectFrom('schedules')
      .selectAll()
      .where('workspace_id', '=', ws)
      .where('id', '=', id)
      .executeTakeFirst()
    if (!row) throw notFound('schedule', id, 'GET /api/schedules lists them')
    return row
  }

  async get(ws: string, id: string): Promise<ScheduleView> {
    return view(await this.row(ws, id))
  }

  async update(ws: string, id: string, patch: SchedulePatch, actor: Actor): Promise<ScheduleView> {
    const current = await this.row(ws, id)
    const cron = patch.cron ?? current.cron
    const zone = patch.timezone ?? current.timezone
    const active = patch.active ?? current.active
    const params = patch.params ?? current.params
    const { next } = this.timing(cron, zone, this.clock())
    await this.checkParams(ws, current.recipe_id, params, zone)
    const retimed = patch.cron !== undefined || patch.timezone !== undefined || patch.active !== undefined
    return this.db.transaction().execute(async (trx) => {
      let q = trx
        .updateTable('schedules')
        .set((eb) => ({
          name: patch.name === undefined ? current.name : patch.name,
          cron: cron.trim(),
          timezone: zone,
          params: JSON.stringify(params),
          carry_open_items: patch.carry_open_items ?? current.carry_open_items,
          active,
          next_run_at: !active ? null : retimed || current.next_run_at === null ? new Date(next) : current.next_run_at,
          version: eb('version', '+', 1),
          updated_at: sql`now()`,
        }))
        .where('workspace_id', '=', ws)
        .where('id', '=', id)
      if (patch.version !== undefined) q = q.where('version', '=', patch.version)
      const row = await q.returningAll().executeTakeFirst()
      if (!row)
        throw new ConcordError(
          'version_conflict',
          `schedule ${id} changed since version ${patch.version}`,
          409,
          'read it again and retry',
        )
      const out = view(row)
      await this.change(trx, ws, actor, {
        action: 'schedule.update',
        entity: { type: 'schedule', id },
        before: view(current),
        after: out,
      })
      return out
    })
  }

  async remove(ws: string, id: string, actor: Actor): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const gone = await trx
        .deleteFrom('schedules')
        .where('workspace_id', '=', ws)
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst()
      if (!gone) throw notFound('schedule', id, 'GET /api/schedules lists them')
      await this.change(trx, ws, actor, {
        action: 'schedule.delete',
        entity: { type: 'schedule', id },
        before: view(gone),
      })
    })
  }

  /** Runs a schedule now (an operator's request), whatever its next occurrence; that stays as it is. */
  async fire(ws: string, id: string, actor: Actor): Promise<RunView> {
    const row = await this.row(ws, id)
    const run = await this.launch(row, this.clock(), actor)
    if (!run) {
      const failed = await this.row(ws, id)
      throw new ConcordError(
        failed.last_error?.error ?? 'run_failed',
        failed.last_error?.message ?? 'the run did not start',
        400,
      )
    }
    return run
  }

  /** Starts the schedule's run with its bindings resolved as of `now`, and records how that went. */
  private async launch(row: ScheduleRow, now: number, actor: Actor): Promise<RunView | null> {
    let run: RunView | null = null
    let error: { error: string; message: string } | null = null
    try {
      const { recipe } = await this.recipes.get(row.workspace_id, row.recipe_id)
      run = await this.runs.start(
        row.workspace_id,
        {
          recipe_id: row.recipe_id,
          mode: 'full',
          params: resolveBindings(recipe, row.params, row.timezone, now),
          carry_open_items: row.carry_open_items,
        },
        null,
        this.log,
        '',
        // the audit trail names the schedule as the run's starter
        { actor: `schedule:${row.id}`, request_id: actor.request_id },
      )
    } catch (err) {
      error =
        err instanceof ConcordError
          ? { error: err.code, message: err.message }
          : { error: 'run_failed', message: (err as Error).message }
      this.log.warn({ schedule_id: row.id, err }, 'scheduled run did not start')
    }
    await this.db.transaction().execute(async (trx) => {
      const after = await trx
        .updateTable('schedules')
        .set({
          last_fired_at: new Date(now),
          last_run_id: run?.id ?? row.last_run_id,
          last_error: error ? JSON.stringify(error) : null,
          updated_at: sql`now()`,
        })
        .where('id', '=', row.id)
        .returningAll()
        .executeTakeFirst()
      if (after)
        await this.change(trx, row.workspace_id, actor, {
          action: 'schedule.fire',
          entity: { type: 'schedule', id: row.id },
          after: { run_id: run?.id ?? null, error, next_run_at: view(after).next_run_at },
        })
    })
    return run
  }

  /**
   * Fires the schedules due at `now`: each claimed by compare-and-set on its next occurrence,
   * which moves to the first occurrence after `now` (missed ones fire once). Returns the runs.
   */
  async tick(now = this.clock()): Promise<string[]> {
    const due = await this.db
      .selectFrom('schedules')
      .selectAll()
      // compared as stored (microseconds), not as a JS Date (milliseconds)
      .select(sql<string>`next_run_at::text`.as('due_text'))
      .where('active', '=', true)
      .where('next_run_at', '<=', new Date(now))
      .orderBy('next_run_at')
      .limit(50)
      .execute()
    const started: string[] = []
    for (const row of due) {
      let next: number | null
      try {
        next = nextOccurrence(parseCron(row.cron), row.timezone, now)
      } catch {
        next = null
      }
      const claimed = await this.db
        .updateTable('schedules')
        .set({ next_run_at: next === null ? null : new Date(next), active: next !== null })
        .where('id', '=', row.id)
        .where(sql<boolean>`next_run_at = ${row.due_text}::timestamptz`)
        .returning('id')
        .executeTakeFirst()
      if (!claimed) continue // another instance fired it
      const run = await this.launch(row, now, SCHEDULER)
      if (run) started.push(run.id)
    }
    return started
  }

  /** Ticks every SCHEDULER_TICK_MS (0: never), one tick at a time. */
  start(): void {
    if (this.config.schedulerTickMs <= 0) return
    this.timer = setInterval(() => {
      if (this.ticking) return
      this.ticking = this.tick()
        .then(() => undefined)
        .catch((err) => this.log.warn({ err }, 'scheduler tick failed'))
        .finally(() => {
          this.ticking = null
        })
    }, this.config.schedulerTickMs)
    this.timer.unref()
  }

  async close(): Promise<void> {
    clearInterval(this.timer)
    await this.ticking
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    schedules: SchedulesService
  }
}

export default fp(
  async (app) => {
    const schedules = new SchedulesService(app.db, app.runs, app.recipes, app.config, app.log)
    schedules.setOnChange(recordChanges(app.audit, app.webhooks))
    app.decorate('schedules', schedules)
    app.addHook('onReady', async () => schedules.start())
    app.addHook('onClose', () => schedules.close())
  },
  { name: 'schedules', dependencies: ['db', 'runs', 'recipes', 'audit', 'webhooks'] },
)
