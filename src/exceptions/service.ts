// Exceptions: every completed full run turns its unmatched records and ambiguous matches into
// exceptions, classified by why (classify.ts), kept as a set file beside its results and recorded
// (a block of ids, the counts) in the transaction that records the run as completed (bulk.ts,
// sidecar.ts), served from memory until an operator touches one (sets.ts, materialize.ts), and
// worked by operators until resolved (actions.ts). Open exceptions of a
// saved recipe are open items: the next run of the recipe matches against them (carry.ts, when
// the run asks to carry them) and closes those it matches. Dry runs keep no results and sample
// runs match a trial subset, so neither makes exceptions.
//
// Every change goes through `onChange` (changes.ts) inside its transaction; the app wires it to
// the audit trail and webhooks. Without one, changes are only logged at debug level.

import type { FastifyBaseLogger } from 'fastify'
import fp from 'fastify-plugin'
import { type Kysely, sql, type Transaction } from 'kysely'
import type { Config } from '../config.js'
import type { Database, RunRow } from '../db/schema.js'
import type { JobSpec } from '../runs/job.js'
import type { RunsService } from '../runs/service.js'
import * as actions from './actions.js'
import type { CarrySource, ExceptionBatch, ExceptionJob, OpenItems } from './batch.js'
import { runChanges, writeBatch } from './bulk.js'
import { ExceptionSets } from './sets.js'
import { materialize } from './materialize.js'
import { REASONS } from './classify.js'
import { addDecimal, decimalText, type ExactDecimal, exactDecimal, ZERO } from '../language/decimal.js'
import { type Actor, type ExceptionChange, type OnChange, recordChanges } from './changes.js'
import {
  agingForRun,
  type ExceptionQuery,
  exceptionRow,
  exceptionView,
  type ExceptionView,
  listExceptions,
} from './queries.js'

export interface ExceptionDetail {
  exception: ExceptionView
  comments: HistoryView[]
  history: HistoryView[]
  evidence: Record<string, unknown> | null
}

interface HistoryView {
  id: number
  actor: string
  action: string
  detail: Record<string, unknown> | null
  created_at: string
}

export class ExceptionsService {
  private onChange: OnChange

  constructor(
    private readonly db: Kysely<Database>,
    private readonly runs: RunsService,
    private readonly config: Config,
    private readonly log: FastifyBaseLogger,
    /** The exceptions still in their runs' set files. */
    readonly sets: ExceptionSets,
    /** Rows per bulk statement: small on the embedded database, which runs each on the event loop. */
    private readonly chunkRows: number,
    onChange?: OnChange,
  ) {
    this.onChange =
      onChange ??
      (async (_trx, change) => this.log.debug({ change: { ...change, after: undefined } }, 'exception change'))
  }

  /** Replaces the audit/webhook seam (the integrator wires audit.record and webhooks.emit here). */
  setOnChange(onChange: OnChange): void {
    this.onChange = onChange
  }

  private get deps() {
    return {
      db: this.db,
      runs: this.runs,
      sets: this.sets,
      onChange: (trx: Transaction<Database>, c: ExceptionChange) => this.onChange(trx, c),
    }
  }

  /** Joins the runs' life: what a job needs to make exceptions, and writing them when it completes. */
  attach(): void {
    this.runs.hooks.prepare.push((row, spec) => this.prepare(row, spec))
    this.runs.hooks.removing.push((trx, run) => this.keepClosed(trx, run))
    this.runs.hooks.removed.push(() => this.sets.invalidate())
    this.runs.hooks.finished.push(async (trx, run, outcome) => {
      if (outcome.status !== 'completed' || !outcome.extra) return
      await this.createForRun(trx, run, outcome.extra as ExceptionBatch)
    })
  }

  /**
   * A run about to be deleted keeps what it closed: the earlier runs' file exceptions its overlay
   * closed become rows, resolved as it left them (`matched_by_later_run`), as the rows it closed
   * stay. Dropped with its overlay they would open again, beside any open exception a later run
   * made for the same record since.
   */
  private async keepClosed(trx: Transaction<Database>, run: RunRow): Promise<void> {
    const file = await this.sets.of(run.workspace_id, trx)
    const ids = file.closedByRun(run.id)
    if (ids.length) await materialize(trx, this.sets, run.workspace_id, ids)
  }

  /** A full, stored run learns its recipe's open items (to close, carry or not duplicate). */
  async prepare(row: RunRow, spec: JobSpec): Promise<void> {
    if (row.dry_run || row.mode !== 'full') return
    const open: OpenItems = { left: { keys: [], ids: [] }, right: { keys: [], ids: [] }, both: { keys: [], ids: [] } }
    const sources = { left: new Map<string, CarrySource>(), right: new Map<string, CarrySource>() }
    if (row.recipe_id !== null) {
      // the files' copy first (an item materialized between the two reads is then a row to the second)
      const file = await this.sets.of(row.workspace_id)
      const items = await this.db
        .selectFrom('exceptions')
        .select(['id', 'side', 'record_key', 'run_id', 'carry'])
        .where('recipe_id', '=', row.recipe_id)
        .where('status', '=', 'open')
        .execute()
      // and those still in set files: open, not yet rows
      const recipeId = row.recipe_id
      const inFiles = (s: { recipe_id: string | null }) => s.recipe_id === recipeId
      for (const { g } of file.rows(inFiles)) {
        if (!file.isOpen(g) || file.isMaterialized(g)) continue
        items.push(file.item(g))
      }
      for (const item of items) {
        open[item.side].keys.push(item.record_key)
        open[item.side].ids.push(Number(item.id))
        if (!row.carry_open_items || item.side === 'both' || !item.carry) continue
        const bySide = sources[item.side]
        let source = bySide.get(item.run_id)
        if (!source)
          bySide.set(item.run_id, (source = { runDir: this.runs.resultsDir(item.run_id), keys: [], ids: [] }))
        source.keys.push(item.record_key)
        source.ids.push(Number(item.id))
      }
    }
    const job: ExceptionJob = {
      open,
      carry: row.carry_open_items ? { left: [...sources.left.values()], right: [...sources.right.values()] } : null,
      feeShare: this.config.exceptionFeeShare,
    }
    spec.exceptions = job
  }

  /** Writes a completed run's exceptions in the transaction recording it (runs' finished hook). */
  async createForRun(trx: Transaction<Database>, run: RunRow, batch: ExceptionBatch): Promise<void> {
    const started = performance.now()
    const written = await writeBatch(trx, run, batch, this.chunkRows)
    this.sets.invalidate()
    for (const change of runChanges(run, written, batch.carried)) await this.onChange(trx, change)
    if (batch.duplicateKeys)
      this.log.warn(
        { run_id: run.id, records: batch.duplicateKeys },
        'unmatched records shared a key with another: each key is one exception',
      )
    this.log.info(
      {
        run_id: run.id,
        created: written.created,
        seen: written.seen,
        closed: written.closed.length,
        carried: batch.carried,
        ms: Math.round(performance.now() - started),
        worker_ms: batch.workerMs,
      },
      'run exceptions recorded',
    )
  }

  list(ws: string, q: ExceptionQuery) {
    return listExceptions(this.db, this.sets, ws, q)
  }

  async get(ws: string, id: number): Promise<ExceptionDetail> {
    const row = await exceptionRow(this.db, this.sets, ws, id)
    const entries = await this.db
      .selectFrom('exception_history')
      .selectAll()
      .where('exception_id', '=', id)
      .orderBy('id')
      .execute()
    const history = entries.map((e) => ({
      id: Number(e.id),
      actor: e.actor,
      action: e.action,
      detail: e.detail,
      created_at: new Date(e.created_at).toISOString(),
    }))
    return {
      exception: exceptionView(row),
      comments: history.filter((h) => h.action === 'comment'),
      history,
      evidence: await this.evidence(row.run_id, row.side, row.record_key),
    }
  }

  /** The record and why it is unmatched, from the stored results of the run that created it. */
  private async evidence(runId: string, side: string, key: string): Promise<Record<string, unknown> | null> {
    if (side === 'both') return null
    try {
      const page = await this.runs.pages.unmatchedPage(this.runs.resultsDir(runId), side as 'left' | 'right', 0, 1, {
        recordKey: key,
      })
      const item = page.items[0]
      if (!item) return null
      const { record_key: _key, ...rest } = item
      return rest
    } catch {
      return null
    }
  }

  /**
   * What a run left to work, for a card: its exceptions by reason (count, amount at risk, how
   * many still open) and the largest open ones.
   */
  async overviewOfRun(ws: string, runId: string, top: number) {
    const { rows: fromRows } = await sql<{ id: number; reason: string; status: string; amount_at_risk: string }>`
      select id, reason, status, amount_at_risk::text as amount_at_risk
      from exceptions where workspace_id = ${ws} and run_id = ${runId}
    `.execute(this.db)
    const file = await this.sets.of(ws)
    const counts = new Map<string, { count: number; open: number; amount: ExactDecimal }>()
    const add = (reason: string, open: boolean, amount: string) => {
      const into = counts.get(reason) ?? { count: 0, open: 0, amount: ZERO }
      into.count++
      if (open) into.open++
      into.amount = addDecimal(into.amount, exactDecimal(amount) ?? ZERO, 1n)
      counts.set(reason, into)
    }
    for (const r of fromRows) add(r.reason, r.status === 'open', r.amount_at_risk)
    file
      .tally(runId, false, REASONS.length, (g) => file.reasonIndexOf(g))
      .forEach((f, n) => {
        if (!f.count) return
        const into = counts.get(REASONS[n]) ?? { count: 0, open: 0, amount: ZERO }
        counts.set(REASONS[n], {
          count: into.count + f.count,
          open: into.open + f.open,
          amount: addDecimal(into.amount, f.amount, 1n),
        })
      })
    const rows = [...counts]
      .map(([reason, c]) => ({ reason, count: c.count, open: c.open, amount_at_risk: decimalText(c.amount) }))
      .sort((a, b) => b.count - a.count || (a.reason < b.reason ? -1 : 1))
    const largest = await this.list(ws, { run_id: runId, sort: 'amount', limit: top })
    return {
      run_id: runId,
      total: rows.reduce((a, r) => a + Number(r.count), 0),
      open: rows.reduce((a, r) => a + Number(r.open), 0),
      by_reason: rows.map((r) => ({
        reason: r.reason,
        count: Number(r.count),
        open: Number(r.open),
        amount_at_risk: r.amount_at_risk,
      })),
      largest: largest.items.map((x) => ({
        id: x.id,
        side: x.side,
        record_key: x.record_key,
        reason: x.reason,
        amount: x.amount,
        amount_at_risk: x.amount_at_risk,
        age_days: x.age_days,
      })),
    }
  }

  /** A run's open exceptions by age bucket (0-1 d, 2-7 d, 8-30 d, >30 d), with their amount at risk. */
  agingForRun(ws: string, runId: string): Promise<{ bucket: string; count: number; amount: string }[]> {
    return agingForRun(this.db, this.sets, ws, runId)
  }

  assign(ws: string, id: number, body: { assignee: string | null; version?: number }, actor: Actor) {
    return actions.assign(this.deps, ws, id, body, actor)
  }

  comment(ws: string, id: number, text: string, actor: Actor) {
    return actions.comment(this.deps, ws, id, text, actor)
  }

  resolve(
    ws: string,
    id: number,
    resolution: actions.Resolution,
    body: { reason: string; version?: number },
    actor: Actor,
  ) {
    return actions.resolve(this.deps, ws, id, resolution, body, actor)
  }

  match(ws: string, body: actions.ManualMatch, actor: Actor) {
    return actions.manualMatch(this.deps, ws, body, actor)
  }

  unmatch(ws: string, body: { run_id: string; match_id: string; reason: string }, actor: Actor) {
    return actions.unmatch(this.deps, ws, body, actor)
  }

  bulk(ws: string, body: Parameters<typeof actions.bulk>[2], actor: Actor) {
    return actions.bulk(this.deps, ws, body, actor)
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    exceptions: ExceptionsService
  }
}

export interface ExceptionsPluginOptions {
  /** The audit/webhook seam; see changes.ts. */
  onChange?: OnChange
}

export default fp<ExceptionsPluginOptions>(
  async (app, opts) => {
    // PGlite runs each statement on the event loop's thread: 1,000 rows hold it ~0.1-0.2 s (the
    // updates of open items a later run saw that are already rows)
    const chunkRows = app.database.kind === 'pglite' ? 1_000 : 50_000
    const exceptions = new ExceptionsService(
      app.db,
      app.runs,
      app.config,
      app.log,
      new ExceptionSets(app.db, (id) => app.runs.resultsDir(id), app.database.kind === 'pglite'),
      chunkRows,
      opts.onChange ?? recordChanges(app.audit, app.webhooks),
    )
    exceptions.attach()
    app.decorate('exceptions', exceptions)
  },
  { name: 'exceptions', dependencies: ['db', 'runs', 'audit', 'webhooks'] },
)
