// The exceptions that live in runs' set files (sidecar.ts), served from memory: per workspace, the
// sets in id order, each exception's current state (a later run's overlay may have seen it still
// open, with a fresh reason, or closed it with a match), and its order by amount at risk and by
// age, sorted once when a set arrives. An exception an operator touched is a database row
// (materialize.ts) and the row is what counts: callers drop materialized ids from what this gives,
// and queries.ts merges the two sources page by page on the same (sort value, id) keys.
//
// Files never change once their run is recorded, so what is cached is only ever extended: each
// call asks the database for the workspace's sets (one small query) and reads only new files.

import type { Kysely } from 'kysely'
import { type StringColumn, stringAt } from '../engine/data/column.js'
import { ascendingOrder } from '../engine/data/order.js'
import type { Table } from '../engine/data/table.js'
import { formatDate, formatDecimal, parseDate, POW10 } from '../engine/data/values.js'
import type { Database } from '../db/schema.js'
import { addDecimal, type ExactDecimal, exactDecimal, ZERO } from '../language/decimal.js'
import { REASONS } from './classify.js'
import type { ExceptionRowWithAge } from './queries.js'
import { materializedIn } from './materialize.js'
import { type Overlay, readSet, SIDES } from './sidecar.js'

const DAY_MS = 86_400_000
/** Filtered lists kept per workspace (each at most 4 bytes a row). */
const KEPT_LISTS = 16
const today = () => Math.floor(Date.now() / DAY_MS)

interface SetInfo {
  run_id: string
  recipe_id: string | null
  recipe_version: number | null
  first_id: number
  count: number
  created_on: string
  created_at: Date
  /** Bumped by every materialization of one of its exceptions: a cached copy reloads which are rows. */
  touched: number
}

interface LoadedSet {
  info: SetInfo
  createdDay: number
  side: Float64Array
  reason: Float64Array
  carry: Float64Array
  /** Scaled units (NaN: none): the record's amount at its scale, at risk and difference at `scale`. */
  amountUnits: Float64Array
  amountScale: Float64Array
  atRiskUnits: Float64Array
  differenceUnits: Float64Array
  scale: number
  date: Int32Array
  dateValid: Uint8Array | null
  text: Record<'record_key' | 'keys' | 'match_id' | 'candidate_key', StringColumn>
  overlay: Overlay
}

/** Which file rows a list wants (the database's filters, read the same way). */
export interface FileFilter {
  status: 'open' | 'resolved' | 'all'
  run_id?: string
  recipe_id?: string
  side?: 'left' | 'right' | 'both'
  reasons?: string[]
  /** A named assignee: no file row has one. */
  assigned?: boolean
  /** age_from bounds, in days since the epoch. */
  ageFromMin?: number
  ageFromMax?: number
  amountMin?: number
  amountMax?: number
}

export type SortKey = 'amount' | 'age' | 'created'

const textAt = (col: StringColumn, row: number): string | null =>
  col.valid !== null && col.valid[row] === 0 ? null : stringAt(col, row)

/** The file rows of one workspace, with their current state. */
export class WorkspaceSets {
  readonly sets: LoadedSet[]
  /** Global row g of set s is starts[s] + i; its id is sets[s].info.first_id + i. */
  private readonly starts: number[]
  readonly length: number
  private readonly reason: Uint8Array
  private readonly atRisk: Float64Array
  private readonly ageFrom: Int32Array
  private readonly closedBy: Int32Array
  private readonly lastRun: Int32Array
  /** Row g's set (filters decide a set's part once, then read this per row). */
  private readonly setIndex: Int32Array
  private readonly sideCode: Uint8Array
  /** 1 where the exception is a database row: the row is what counts, the file's copy is skipped. */
  private readonly materialized: Uint8Array
  /** The `touched` each set's materialized ids were read at. */
  readonly touchedAt: number[]
  /** What the latest run that saw it changed: candidate, amount at risk (text), difference. */
  private readonly seen = new Map<
    number,
    { candidate: string | null; atRisk: string | null; difference: string | null }
  >()
  private readonly closedMatch = new Map<number, string>()
  private readonly lists = new Map<string, Uint32Array>()
  private byAmount: Uint32Array | null = null
  private byAge: Uint32Array | null = null

  constructor(sets: LoadedSet[]) {
    this.sets = sets
    this.starts = []
    let n = 0
    for (const s of sets) {
      this.starts.push(n)
      n += s.info.count
    }
    this.length = n
    this.reason = new Uint8Array(n)
    this.atRisk = new Float64Array(n)
    this.ageFrom = new Int32Array(n)
    this.closedBy = new Int32Array(n).fill(-1)
    this.lastRun = new Int32Array(n).fill(-1)
    this.setIndex = new Int32Array(n)
    this.sideCode = new Uint8Array(n)
    this.materialized = new Uint8Array(n)
    this.touchedAt = sets.map(() => -1)
    sets.forEach((s, k) => {
      const at = this.starts[k]
      this.setIndex.fill(k, at, at + s.info.count)
      for (let i = 0; i < s.info.count; i++) {
        this.sideCode[at + i] = s.side[i]
        this.reason[at + i] = s.reason[i]
        const units = s.atRiskUnits[i]
        this.atRisk[at + i] = Number.isNaN(units) ? 0 : units / POW10[s.scale]
        this.ageFrom[at + i] = s.dateValid === null || s.dateValid[i] ? s.date[i] : s.createdDay
      }
    })
    // each run's overlay, in the order the runs were recorded, on the rows of earlier sets
    sets.forEach((s, k) => {
      const seen = s.overlay.seen
      for (let j = 0; j < seen.ids.length; j++) {
        const g = this.locate(seen.ids[j])
        // as the database's update: only an exception still open is refreshed
        if (g < 0 || this.closedBy[g] >= 0) continue
        this.lastRun[g] = k
        const reason = REASONS.indexOf(seen.reason[j] as (typeof REASONS)[number])
        if (reason >= 0) this.reason[g] = reason
        if (seen.amount_at_risk[j] !== null) this.atRisk[g] = Number(seen.amount_at_risk[j])
        const before = this.seen.get(g)
        this.seen.set(g, {
          candidate: seen.candidate_key[j],
          atRisk: seen.amount_at_risk[j] ?? before?.atRisk ?? null,
          difference: seen.difference[j],
        })
      }
      const closed = s.overlay.closed
      for (let j = 0; j < closed.ids.length; j++) {
        const g = this.locate(closed.ids[j])
        if (g < 0 || this.closedBy[g] >= 0) continue
        this.closedBy[g] = k
        this.closedMatch.set(g, closed.match_id[j])
      }
    })
  }

  /** The global row of an exception id, or -1 when no set holds it. */
  locate(id: number): number {
    let lo = 0
    let hi = this.sets.length - 1
    while (lo <= hi) {
      const mid = (lo + hi) >> 1
      const s = this.sets[mid].info
      if (id < s.first_id) hi = mid - 1
      else if (id >= s.first_id + s.count) lo = mid + 1
      else return this.starts[mid] + (id - s.first_id)
    }
    return -1
  }

  private setOf(g: number): number {
    return this.setIndex[g]
  }

  idOf(g: number): number {
    const k = this.setOf(g)
    return this.sets[k].info.first_id + (g - this.starts[k])
  }

  /** Marks which of set k's exceptions are database rows (their ids, read at `touched`). */
  markMaterialized(k: number, ids: Iterable<number>, touched: number): void {
    const set = this.sets[k].info
    const at = this.starts[k]
    this.materialized.fill(0, at, at + set.count)
    for (const id of ids)
      if (id >= set.first_id && id < set.first_id + set.count) this.materialized[at + id - set.first_id] = 1
    this.touchedAt[k] = touched
    this.lists.clear()
  }

  isMaterialized(g: number): boolean {
    return this.materialized[g] === 1
  }

  /**
   * The filter as a test of a file row that is not a database row: what depends on the set (run,
   * recipe) decided once per set, the rest read from typed arrays (a page may skip most rows).
   */
  predicate(f: FileFilter): (g: number) => boolean {
    if (f.assigned) return () => false
    const setOk = Uint8Array.from(this.sets, (s) =>
      (f.run_id === undefined || s.info.run_id === f.run_id) &&
      (f.recipe_id === undefined || s.info.recipe_id === f.recipe_id)
        ? 1
        : 0,
    )
    const reasonOk = f.reasons ? Uint8Array.from(REASONS, (r) => (f.reasons!.includes(r) ? 1 : 0)) : null
    const side = f.side === undefined ? -1 : SIDES.indexOf(f.side)
    const status = f.status === 'open' ? 1 : f.status === 'resolved' ? 0 : -1
    const ageMin = f.ageFromMin ?? -Infinity
    const ageMax = f.ageFromMax ?? Infinity
    const amountMin = f.amountMin ?? -Infinity
    const amountMax = f.amountMax ?? Infinity
    const { materialized, setIndex, closedBy, sideCode, reason, ageFrom, atRisk } = this
    return (g) => {
      if (materialized[g] === 1 || setOk[setIndex[g]] === 0) return false
      if (status >= 0 && (closedBy[g] < 0 ? 1 : 0) !== status) return false
      if (side >= 0 && sideCode[g] !== side) return false
      if (reasonOk !== null && reasonOk[reason[g]] === 0) return false
      const age = ageFrom[g]
      if (age < ageMin || age > ageMax) return false
      const risk = atRisk[g]
      return risk >= amountMin && risk <= amountMax
    }
  }

  private order(sort: SortKey): Uint32Array | null {
    if (sort === 'created') return null
    if (sort === 'amount') return (this.byAmount ??= ascendingOrder(this.atRisk))
    return (this.byAge ??= ascendingOrder(this.ageFrom))
  }

  /**
   * The rows passing a filter, in the sort's ascending order: found by one pass over the sorted
   * rows, then kept (a few filters per workspace) so that paging through a queue is a binary
   * search, not a scan past every row the filter skips. Making a row materialized or a new set
   * arriving (a new copy of this object) drops them.
   */
  private listOf(f: FileFilter, sort: SortKey): Uint32Array {
    const key = JSON.stringify([sort, f])
    const kept = this.lists.get(key)
    if (kept) {
      // most recently used last
      this.lists.delete(key)
      this.lists.set(key, kept)
      return kept
    }
    const perm = this.order(sort)
    const passes = this.predicate(f)
    const out = new Uint32Array(this.length)
    let n = 0
    if (perm === null) {
      for (let g = 0; g < this.length; g++) if (passes(g)) out[n++] = g
    } else for (let p = 0; p < perm.length; p++) if (passes(perm[p])) out[n++] = perm[p]
    const list = out.slice(0, n)
    if (this.lists.size >= KEPT_LISTS) this.lists.delete(this.lists.keys().next().value!)
    this.lists.set(key, list)
    return list
  }

  /** Rows in the list's order after the cursor (value, id) that pass the filter. */
  *walk(f: FileFilter, sort: SortKey, desc: boolean, after: { value: string; id: number } | null): Generator<number> {
    const list = this.listOf(f, sort)
    const n = list.length
    const key = sort === 'amount' ? this.atRisk : sort === 'age' ? this.ageFrom : null
    let p = desc ? n - 1 : 0
    if (after !== null) {
      // rows sort by (key, g), and g follows the id; the cursor's row may be a database row
      const value = sort === 'amount' ? Number(after.value) : sort === 'age' ? parseDate(after.value)! : after.id
      const g0 = this.locate(after.id)
      const below = (g: number, orEqual: boolean) => {
        const v = key === null ? this.idOf(g) : key[g]
        if (v !== value) return v < value
        const [a, b] = g0 >= 0 ? [g, g0] : [this.idOf(g), after.id]
        return orEqual ? a <= b : a < b
      }
      // the first position not below (or at) the cursor
      let lo = 0
      let hi = n
      while (lo < hi) {
        const mid = (lo + hi) >> 1
        if (below(list[mid], !desc)) lo = mid + 1
        else hi = mid
      }
      p = desc ? lo - 1 : lo
    }
    for (; desc ? p >= 0 : p < n; desc ? p-- : p++) yield list[p]
  }

  /** How many file rows (not database rows) pass the filter. */
  count(f: FileFilter): number {
    return this.listOf(f, 'created').length
  }

  /** The id ranges of the sets (to ask the database which of their ids are materialized). */
  ranges(pick: (s: SetInfo) => boolean = () => true): [number, number][] {
    return this.sets
      .filter((s) => s.info.count > 0 && pick(s.info))
      .map((s) => [s.info.first_id, s.info.first_id + s.info.count - 1])
  }

  /** Every file row of the sets picked, with its set (for open items, overviews and aging). */
  *rows(pick: (s: SetInfo) => boolean): Generator<{ g: number; k: number; i: number }> {
    for (let k = 0; k < this.sets.length; k++) {
      if (!pick(this.sets[k].info)) continue
      for (let i = 0; i < this.sets[k].info.count; i++) yield { g: this.starts[k] + i, k, i }
    }
  }

  /** The set a run recorded (one at most: a set's key is its run), or -1. */
  private setOfRun(runId: string): number {
    return this.sets.findIndex((s) => s.info.run_id === runId)
  }

  /** Exceptions in other runs' files that a run's overlay closed and that are not rows. */
  closedByRun(runId: string): number[] {
    const k = this.setOfRun(runId)
    if (k < 0) return []
    const ids: number[] = []
    for (const id of this.sets[k].overlay.closed.ids) {
      const g = this.locate(id)
      if (g >= 0 && this.closedBy[g] === k && this.materialized[g] === 0) ids.push(id)
    }
    return ids
  }

  /** Exceptions in files that a run's match closed (unmatching it reopens them), and its ambiguous group's. */
  touchedByMatch(runId: string, matchId: string): number[] {
    const ids: number[] = []
    for (const s of this.sets) {
      if (s.info.run_id !== runId) continue
      const closed = s.overlay.closed
      for (let j = 0; j < closed.ids.length; j++) if (closed.match_id[j] === matchId) ids.push(closed.ids[j])
      for (let i = 0; i < s.info.count; i++)
        if (SIDES[s.side[i]] === 'both' && textAt(s.text.match_id, i) === matchId) ids.push(s.info.first_id + i)
    }
    return ids
  }

  /** What a run needs of an open item (prepare: to close, carry or not duplicate it). */
  item(g: number): { id: number; side: 'left' | 'right' | 'both'; record_key: string; run_id: string; carry: boolean } {
    const k = this.setIndex[g]
    const set = this.sets[k]
    const i = g - this.starts[k]
    return {
      id: set.info.first_id + i,
      side: SIDES[set.side[i]],
      record_key: stringAt(set.text.record_key, i),
      run_id: set.info.run_id,
      carry: set.carry[i] === 1,
    }
  }

  /**
   * Counts (all, open) and exact amounts at risk of a run's file rows, by group: the exceptions
   * its set holds and, with `withSeen`, earlier runs' it saw still open. Database rows are the
   * caller's. `group` gives a row's group, or -1 to leave it out. For the run's cards and report,
   * on the event loop: scaled units add as floats while that is exact and go to BigInt after. A
   * report of a run with 100,000 unmatched took 53-58 ms of the service's thread when each row's
   * text was parsed and added as a BigInt decimal, 18 ms with this (test/report-event-loop.test.ts).
   */
  tally(runId: string, withSeen: boolean, groups: number, group: (g: number, ageDays: number) => number): Tally[] {
    const out: Tally[] = Array.from({ length: groups }, () => ({ count: 0, open: 0, amount: ZERO }))
    const own = this.setOfRun(runId)
    if (own < 0) return out
    const units = new Float64Array(groups)
    let scale = 0
    const flush = (b: number) => {
      out[b].amount = addDecimal(out[b].amount, { units: BigInt(units[b]), scale }, 1n)
      units[b] = 0
    }
    const now = today()
    const add = (g: number) => {
      if (this.materialized[g] === 1) return
      const b = group(g, now - this.ageFrom[g])
      if (b < 0) return
      const into = out[b]
      into.count++
      if (this.closedBy[g] < 0) into.open++
      const seen = this.seen.get(g)?.atRisk
      if (seen != null) {
        into.amount = addDecimal(into.amount, exactDecimal(seen) ?? ZERO, 1n)
        return
      }
      const set = this.sets[this.setIndex[g]]
      const u = set.atRiskUnits[g - this.starts[this.setIndex[g]]]
      if (Number.isNaN(u)) return
      if (set.scale !== scale) {
        for (let c = 0; c < groups; c++) if (units[c] !== 0) flush(c)
        scale = set.scale
      }
      if (Math.abs(units[b]) + Math.abs(u) >= EXACT_UNITS) flush(b)
      units[b] += u
    }
    for (let g = this.starts[own], end = g + this.sets[own].info.count; g < end; g++) add(g)
    if (withSeen) for (let g = 0; g < this.length; g++) if (this.lastRun[g] === own && this.setIndex[g] !== own) add(g)
    for (let c = 0; c < groups; c++) if (units[c] !== 0) flush(c)
    return out
  }

  /** Open exceptions of a recipe still only in files whose record is one of these (an unmatch's records). */
  openWithKeys(recipeId: string | null, wanted: { side: string; key: string }[]): number[] {
    if (recipeId === null || !wanted.length) return []
    const want = new Set(wanted.map((w) => `${w.side}\u0000${w.key}`))
    const ids: number[] = []
    this.sets.forEach((s, k) => {
      if (s.info.recipe_id !== recipeId) return
      for (let i = 0; i < s.info.count; i++) {
        const g = this.starts[k] + i
        if (this.closedBy[g] >= 0 || this.materialized[g] === 1) continue
        if (want.has(`${SIDES[s.side[i]]}\u0000${stringAt(s.text.record_key, i)}`)) ids.push(s.info.first_id + i)
      }
    })
    return ids
  }

  isOpen(g: number): boolean {
    return this.closedBy[g] < 0
  }

  lastRunOf(g: number): string | null {
    return this.lastRun[g] < 0 ? null : this.sets[this.lastRun[g]].info.run_id
  }

  /** Its reason's place in REASONS. */
  reasonIndexOf(g: number): number {
    return this.reason[g]
  }

  /** The set file's row as the exceptions table would hold it. */
  view(g: number): ExceptionRowWithAge & { workspace_id: string } {
    const k = this.setOf(g)
    const set = this.sets[k]
    const i = g - this.starts[k]
    const seen = this.seen.get(g)
    const closer = this.closedBy[g] >= 0 ? this.sets[this.closedBy[g]].info : null
    const last = this.lastRun[g] >= 0 ? this.sets[this.lastRun[g]].info : null
    const keys = textAt(set.text.keys, i)
    const date = set.dateValid === null || set.dateValid[i] ? formatDate(set.date[i]) : null
    return {
      id: set.info.first_id + i,
      workspace_id: '',
      run_id: set.info.run_id,
      last_run_id: last?.run_id ?? null,
      recipe_id: set.info.recipe_id,
      recipe_version: set.info.recipe_version,
      side: SIDES[set.side[i]],
      record_key: stringAt(set.text.record_key, i),
      keys: keys === null ? null : (JSON.parse(keys) as { left: string[]; right: string[] }),
      match_id: textAt(set.text.match_id, i),
      candidate_key: seen ? seen.candidate : textAt(set.text.candidate_key, i),
      amount: Number.isNaN(set.amountUnits[i]) ? null : formatDecimal(set.amountUnits[i], set.amountScale[i]),
      amount_at_risk: seen?.atRisk ?? riskText(set, i),
      difference: seen
        ? seen.difference
        : Number.isNaN(set.differenceUnits[i])
          ? null
          : formatDecimal(set.differenceUnits[i], set.scale),
      record_date: date,
      age_from: formatDate(this.ageFrom[g]),
      reason: REASONS[this.reason[g]],
      carry: set.carry[i] === 1,
      status: closer ? 'resolved' : 'open',
      resolution: closer ? 'matched_by_later_run' : null,
      resolution_detail: closer ? { run_id: closer.run_id, match_id: this.closedMatch.get(g)! } : null,
      resolved_by: closer ? `system:run:${closer.run_id}` : null,
      resolved_at: closer ? closer.created_at : null,
      assignee: null,
      version: closer ? 2 : 1,
      created_at: set.info.created_at,
      updated_at: closer?.created_at ?? last?.created_at ?? set.info.created_at,
      age_days: today() - this.ageFrom[g],
    }
  }
}

/** An exception's amount at risk as the table would hold it (0 when nothing is known). */
function riskText(set: LoadedSet, i: number): string {
  const units = set.atRiskUnits[i]
  return Number.isNaN(units) ? '0' : formatDecimal(units, set.scale)
}

/** Exact amounts add as floats of scaled units while the sum stays an exact integer (below 2^53). */
const EXACT_UNITS = 2 ** 53

/** What `WorkspaceSets.tally` counts in one group. */
export interface Tally {
  count: number
  open: number
  amount: ExactDecimal
}

/** Row numbers sorted by key, ties by row number (the id's order). */
function loaded(info: SetInfo, table: Table, overlay: Overlay): LoadedSet {
  const col = (name: string) => table.data[table.columns.findIndex((c) => c.name === name)]
  const num = (name: string) => (col(name) as { values: Float64Array }).values
  const str = (name: string) => col(name) as StringColumn
  const date = col('record_date') as { values: Int32Array; valid: Uint8Array | null }
  return {
    info,
    createdDay: parseDate(info.created_on)!,
    side: num('side'),
    reason: num('reason'),
    carry: num('carry'),
    amountUnits: num('amount_units'),
    amountScale: num('amount_scale'),
    atRiskUnits: num('at_risk'),
    differenceUnits: num('difference'),
    scale: overlay.scale ?? 0,
    date: date.values,
    dateValid: date.valid,
    text: {
      record_key: str('record_key'),
      keys: str('keys'),
      match_id: str('match_id'),
      candidate_key: str('candidate_key'),
    },
    overlay,
  }
}

/** The set files of every workspace, read once each, their current state rebuilt when a set arrives. */
export class ExceptionSets {
  private readonly files = new Map<string, Promise<LoadedSet>>()
  private readonly workspaces = new Map<string, { ids: string; sets: WorkspaceSets; generation: number }>()
  /** Bumped by every change this process makes to sets or rows (see `sole`). */
  private generation = 0

  constructor(
    private readonly db: Kysely<Database>,
    private readonly resultsDir: (runId: string) => string,
    /**
     * This process is the database's only writer (the embedded one: a second process is refused
     * its files), so a copy is current until `invalidate()` says otherwise and a read skips the
     * query that asks. On PGlite that query ran on the event loop's thread for every page.
     */
    private readonly sole = false,
  ) {}

  /**
   * A set was recorded or deleted, or an exception materialized: the next read asks again. (On
   * the embedded database a read waits for the writing transaction to end, so it sees its result.)
   */
  invalidate(): void {
    this.generation++
  }

  /**
   * The workspace's file rows as of now (one query; new files read, the state rebuilt, when sets
   * changed). Inside a transaction, pass it (the embedded database has one connection): the file
   * rows' state is then current, but which of them are rows is left to the transaction to ask.
   */
  async of(ws: string, db: Kysely<Database> = this.db): Promise<WorkspaceSets> {
    const generation = this.generation
    const current = this.workspaces.get(ws)
    if (this.sole && db === this.db && current && current.generation === generation) return current.sets
    const infos = (await db
      .selectFrom('exception_sets')
      .select(['run_id', 'recipe_id', 'recipe_version', 'first_id', 'count', 'created_on', 'created_at', 'touched'])
      .where('workspace_id', '=', ws)
      .orderBy('first_id')
      .execute()) as SetInfo[]
    const ids = infos.map((s) => s.run_id).join(',')
    let sets = this.workspaces.get(ws)
    if (!sets || sets.ids !== ids) {
      const loadedSets = await Promise.all(
        infos.map((info) => {
          let file = this.files.get(info.run_id)
          if (!file) {
            const normal = { ...info, first_id: Number(info.first_id), count: Number(info.count) }
            file = readSet(this.resultsDir(info.run_id)).then(({ table, overlay }) => loaded(normal, table, overlay))
            // a file that could not be read is tried again next time
            file.catch(() => this.files.delete(info.run_id))
            this.files.set(info.run_id, file)
          }
          return file
        }),
      )
      // a deleted run's set is gone from the list: its file's copy goes too
      const now = new Set(infos.map((s) => s.run_id))
      for (const gone of sets?.ids.split(',') ?? []) if (gone && !now.has(gone)) this.files.delete(gone)
      sets = { ids, sets: new WorkspaceSets(loadedSets), generation: -1 }
      this.workspaces.set(ws, sets)
    }
    // which exceptions became rows since this copy last looked (any instance bumps `touched`); not
    // from inside a transaction, whose uncommitted rows (or a rollback) must not set the bitmap
    const built = sets.sets
    if (db !== this.db) return built
    const stale = infos.flatMap((info, k) => (Number(info.touched) !== built.touchedAt[k] ? [k] : []))
    if (stale.length) {
      const ranges = stale.flatMap((k) => built.ranges((s) => s.run_id === infos[k].run_id))
      const rows = await materializedIn(db, ranges)
      for (const k of stale) built.markMaterialized(k, rows, Number(infos[k].touched))
    }
    // current as of the generation this read started at (a change since bumps it past that)
    sets.generation = generation
    return built
  }
}
