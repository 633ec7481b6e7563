// engine "postgres": a run whose two sources are tables of one PostgreSQL database runs its joins
// there. Each side's scope becomes a temporary table numbered by record; every pass's predicate,
// compiled to SQL (sql.ts), selects the candidate pairs among the still-free records
// inside the database, and the nearest misses of unmatched records are found there too. What
// comes back is the candidate pairs, the few columns assignment needs (keys, amounts, dates) and,
// at the end, the unmatched records: the assignment itself (1:1 by score with ties, subset sums)
// runs on them with the very code of the in-process engine, so both engines give the same result.

import type pg from 'pg'
import {
  type CatalogColumn,
  condition,
  type PostgresSourceConfig,
  quoteIdent,
  readCatalog,
  selectExpr,
  sourceError,
  streamRows,
  unreachable,
  loadDriver,
} from '../postgres.js'
import { emptyUnmatched, MatchBuilder, type UnmatchedSet } from '../../src/engine/explain/evidence.js'
import { resolveConditions } from '../../src/engine/load/filter.js'
import { checkedConjuncts } from '../../src/engine/match/checks.js'
import { PairList } from '../../src/engine/match/join.js'
import { notePassedOver } from '../../src/engine/explain/nearmiss.js'
import {
  type PassEvidence,
  type PreparedPass,
  assignmentColumns,
  preparePass,
  runPass,
} from '../../src/engine/match/pass.js'
import { firstClosedBand, planPass } from '../../src/engine/plan/plan.js'
import { assembleResult, comparedColumns, ms, PassScheduler, type RunProgress } from '../../src/engine/reconcile.js'
import { ConcordError } from '../../src/errors.js'
import { parsePredicate } from '../../src/language/predicate.js'
import { conditionOf, isProbabilistic, type Recipe } from '../../src/recipes/schema.js'
import { pushdownObstacle, SqlCompiler } from './sql.js'
import type { PushdownOutcome, Source } from '../../src/sources/connector.js'

const RID = '__concord_rid'
const FREE = '__concord_free'
const TEMP = { l: 'concord_left', r: 'concord_right' } as const
const INT8_AS_NUMBER = { getTypeParser: (oid: number) => (oid === 20 ? (v: string) => Number(v) : (v: string) => v) }

/** Why a recipe cannot run in PostgreSQL, or null when it can. */
export function pushdownProblem(recipe: Recipe, sources: { left: Source; right: Source }): string | null {
  if (sources.left.type !== 'postgres' || sources.right.type !== 'postgres')
    return 'engine "postgres" needs both sources to be postgres sources (tables of one database)'
  const l = database((sources.left.config as PostgresSourceConfig).connection_string)
  const r = database((sources.right.config as PostgresSourceConfig).connection_string)
  if (l !== r) return 'engine "postgres" needs both tables in one database (same host, port, database and user)'
  const lookups = Object.keys(recipe.lookups ?? {})
  if (lookups.length)
    return `the recipe's lookup tables (${lookups.join(', ')}) are indexed by the in-process engine; engine "postgres" does not read them`
  for (const pass of recipe.passes) {
    if (isProbabilistic(pass))
      return `pass ${pass.name} is probabilistic: its blocking, comparisons and model run in the in-process engine`
    const obstacle = pushdownObstacle(parsePredicate(conditionOf(pass)))
    if (obstacle) return `pass ${pass.name}: ${obstacle}`
  }
  return null
}

function database(conn: string): string {
  const u = new URL(conn)
  return `${u.hostname}:${u.port || '5432'}/${u.pathname.replace(/^\//, '')}@${u.username}`
}

export async function runPushdown(
  recipe: Recipe,
  sources: { left: Source<PostgresSourceConfig>; right: Source<PostgresSourceConfig> },
  opts: {
    statementTimeoutMs: number
    version?: number
    onProgress?: (p: RunProgress & { loaded?: [number, number] }) => void
  },
): Promise<PushdownOutcome> {
  const problem = pushdownProblem(recipe, sources)
  if (problem) throw new ConcordError('pushdown_unavailable', problem, 400, 'run with engine "memory"')
  const conn = sources.left.config.connection_string
  const { pg } = await loadDriver()
  const client = new pg.Client({ connectionString: conn, connectionTimeoutMillis: 10_000, types: INT8_AS_NUMBER })
  try {
    await client.connect()
  } catch (err) {
    throw unreachable(err, conn)
  }
  try {
    await client.query(
      `SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET statement_timeout = ${Math.floor(opts.statementTimeoutMs)}`,
    )
    // one snapshot for the whole run; the temporary tables go with the transaction
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ')
    const outcome = await run(client, recipe, sources, opts)
    await client.query('COMMIT')
    return outcome
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {})
    throw sourceError(err, conn)
  } finally {
    await client.end().catch(() => {})
  }
}

async function run(
  client: pg.Client,
  recipe: Recipe,
  sources: { left: Source<PostgresSourceConfig>; right: Source<PostgresSourceConfig> },
  opts: { version?: number; onProgress?: (p: RunProgress & { loaded?: [number, number] }) => void },
): Promise<PushdownOutcome> {
  const t0 = performance.now()
  const catalogs = {
    l: await readCatalog(client, sources.left.config.schema ?? 'public', sources.left.config.table),
    r: await readCatalog(client, sources.right.config.schema ?? 'public', sources.right.config.table),
  }
  const schemas = { l: catalogs.l, r: catalogs.r }
  const count = {
    l: await scopeTable(client, 'l', recipe.left, sources.left.config, catalogs.l),
    r: await scopeTable(client, 'r', recipe.right, sources.right.config, catalogs.r),
  }
  opts.onProgress?.({ pass: '', phase: 0, phases: 0, percent: 0, loaded: [count.l, count.r] })
  const shapes = { l: { columns: catalogs.l, data: [], length: 0 }, r: { columns: catalogs.r, data: [], length: 0 } }
  const compared = comparedColumns(recipe, shapes)

  // the columns assignment reads, for every record: keys, amounts, dates, aggregate sums
  const need = { l: new Set(recipe.left.key), r: new Set(recipe.right.key) }
  if (compared.amount) {
    need.l.add(compared.amount.l)
    need.r.add(compared.amount.r)
  }
  for (const pass of recipe.passes) {
    const plan = planPass(
      parsePredicate(conditionOf(pass)),
      conditionOf(pass),
      (side, c) => schemas[side].find((x) => x.name === c)?.type,
    )
    const used = assignmentColumns(pass, plan, compared)
    for (const c of used.l) need.l.add(c)
    for (const c of used.r) need.r.add(c)
  }
  const narrow = {
    l: await fetchColumns(
      client,
      'l',
      catalogs.l.filter((c) => need.l.has(c.name)),
      false,
    ),
    r: await fetchColumns(
      client,
      'r',
      catalogs.r.filter((c) => need.r.has(c.name)),
      false,
    ),
  }
  const t1 = performance.now()

  const scheduler = new PassScheduler(recipe)
  const leftFree = new Uint8Array(count.l).fill(1)
  const rightFree = new Uint8Array(count.r).fill(1)
  const matches = new MatchBuilder()
  const prepared: PreparedPass[] = []
  const evidence: PassEvidence[] = []
  for (const step of scheduler.steps) {
    if (!scheduler.begin(step)) continue
    try {
      const p = preparePass(step.index, step.pass, narrow, compared, { schemas })
      prepared.push(p)
      const sql = new SqlCompiler(schemas, { l: 'l', r: 'r' })
      const on = sql.sql(parsePredicate(conditionOf(step.pass)))
      const pairs = await readPairs(
        client,
        `SELECT l.${RID}, r.${RID} FROM ${TEMP.l} l JOIN ${TEMP.r} r ON ${on} WHERE l.${FREE} AND r.${FREE} ORDER BY 1, 2`,
        sql.params,
      )
      const before = { l: leftFree.slice(), r: rightFree.slice() }
      const done = runPass(p, leftFree, rightFree, matches, pairs)
      scheduler.searched(step, done)
      evidence.push(done)
      await markTaken(client, 'l', before.l, leftFree)
      await markTaken(client, 'r', before.r, rightFree)
    } catch (err) {
      scheduler.fail(step, err)
    }
    scheduler.end(step, opts.onProgress)
  }
  const t2 = performance.now()
  const failed = scheduler.list().some((r) => r.status !== 'done')
  const unmatchedLeft = failed
    ? emptyUnmatched()
    : await nearMisses(client, 'l', prepared, schemas, leftFree, rightFree)
  const unmatchedRight = failed
    ? emptyUnmatched()
    : await nearMisses(client, 'r', prepared, schemas, rightFree, leftFree)
  notePassedOver(unmatchedLeft, 'l', evidence, rightFree)
  notePassedOver(unmatchedRight, 'r', evidence, leftFree)
  const records = {
    left: await fetchColumns(client, 'l', catalogs.l, true),
    right: await fetchColumns(client, 'r', catalogs.r, true),
  }
  const t3 = performance.now()
  const result = assembleResult({
    recipe,
    version: opts.version,
    scheduler,
    prepared,
    matches,
    left: narrow.l,
    right: narrow.r,
    unmatchedLeft,
    unmatchedRight,
    compared,
    timings: { plan_ms: ms(t1 - t0), match_ms: ms(t2 - t1), evidence_ms: ms(t3 - t2), total_ms: ms(t3 - t0) },
  })
  return { result, records }
}

/** The side's rows in scope as a temporary table, numbered 0..n-1 by key (a stable order). */
async function scopeTable(
  client: pg.Client,
  side: 'l' | 'r',
  def: Recipe['left'],
  config: PostgresSourceConfig,
  catalog: CatalogColumn[],
): Promise<number> {
  const params: unknown[] = []
  const where = resolveConditions(catalog, def.scope ?? []).map((c) => condition(c, catalog[c.index], params))
  const order = [...def.key.map((k) => `t.${quoteIdent(k)}`), 't.ctid'].join(', ')
  const from = `${quoteIdent(config.schema ?? 'public')}.${quoteIdent(config.table)}`
  await client.query(
    `CREATE TEMP TABLE ${TEMP[side]} ON COMMIT DROP AS
       SELECT (row_number() OVER (ORDER BY ${order}) - 1)::bigint AS ${RID}, TRUE AS ${FREE}, t.*
         FROM ${from} t${where.length ? ` WHERE ${where.join(' AND ')}` : ''}`,
    params,
  )
  await client.query(`CREATE UNIQUE INDEX ON ${TEMP[side]} (${RID})`)
  await client.query(`ANALYZE ${TEMP[side]}`)
  const res = await client.query<{ n: number }>(`SELECT count(*)::int8 AS n FROM ${TEMP[side]}`)
  return Number(res.rows[0].n)
}

/** Columns of a side in record order (all records, or only those left unmatched) as a typed table. */
function fetchColumns(client: pg.Client, side: 'l' | 'r', columns: CatalogColumn[], unmatchedOnly: boolean) {
  const select = columns.length ? columns.map(selectExpr).join(', ') : 'NULL'
  const sql = `SELECT ${select} FROM ${TEMP[side]}${unmatchedOnly ? ` WHERE ${FREE}` : ''} ORDER BY ${RID}`
  return streamRows(client, sql, [], columns, 20_000)
}

async function readPairs(client: pg.Client, sql: string, params: unknown[]): Promise<PairList> {
  const pairs = new PairList()
  const { Cursor } = await loadDriver()
  const cursor = client.query(new Cursor(sql, params, { rowMode: 'array', types: INT8_AS_NUMBER }))
  try {
    for (;;) {
      const rows = (await cursor.read(50_000)) as unknown as [number, number][]
      if (rows.length === 0) break
      for (const [l, r] of rows) pairs.push(l, r)
    }
  } finally {
    await cursor.close().catch(() => {})
  }
  return pairs
}

/** The records a pass took are no longer free in the database either. */
async function markTaken(client: pg.Client, side: 'l' | 'r', before: Uint8Array, after: Uint8Array): Promise<void> {
  const taken: number[] = []
  for (let i = 0; i < after.length; i++) if (before[i] === 1 && after[i] === 0) taken.push(i)
  for (let k = 0; k < taken.length; k += 50_000) {
    await client.query(`UPDATE ${TEMP[side]} SET ${FREE} = FALSE WHERE ${RID} = ANY($1::int8[])`, [
      taken.slice(k, k + 50_000),
    ])
  }
}

/**
 * For each unmatched record, the nearest miss over the passes, exactly as the in-process engine
 * finds it (engine/match/hashpass.ts `rank`, engine/explain/nearmiss.ts): among the other side's
 * records sharing a pass's keys (or within its first band written with both bounds), the one of
 * lowest rank — fewest failed conjuncts, a pair failing a cheap one counting every costly one as
 * failed — the lowest record number on a tie, and the first conjunct that counts as failed.
 */
async function nearMisses(
  client: pg.Client,
  side: 'l' | 'r',
  passes: PreparedPass[],
  schemas: { l: CatalogColumn[]; r: CatalogColumn[] },
  ownFree: Uint8Array,
  otherFree: Uint8Array,
): Promise<UnmatchedSet> {
  const rows: number[] = []
  for (let i = 0; i < ownFree.length; i++) if (ownFree[i]) rows.push(i)
  const n = rows.length
  const set: UnmatchedSet = {
    rows: Int32Array.from(rows),
    candidate: new Int32Array(n).fill(-1),
    pass: new Int32Array(n).fill(-1),
    conjunct: new Int32Array(n).fill(-1),
    candidateTaken: new Uint8Array(n),
    tiedWith: new Int32Array(n).fill(-1),
  }
  if (n === 0) return set
  const slot = new Map<number, number>()
  rows.forEach((row, k) => slot.set(row, k))
  const best = new Float64Array(n).fill(-1)
  const other = side === 'l' ? 'r' : 'l'
  for (const p of passes) {
    const sql = new SqlCompiler(schemas, side === 'l' ? { l: 'o', r: 'x' } : { l: 'x', r: 'o' })
    const conjuncts = p.plan.conjuncts
    const texts = conjuncts.map((c) => sql.sql(c.expr))
    const tests = texts.map((text) => `((${text}) IS TRUE)`)
    // the join condition as plain expressions: wrapped in IS TRUE, an equality is no longer a hash-join key
    const joinOn = p.plan.keys.length
      ? p.plan.keys.map((k) => `(${texts[k.conjunct]})`)
      : conjuncts.filter((c) => firstClosedBand(p.plan)!.texts.includes(c.text)).map((c) => `(${texts[c.index]})`)
    // the key equalities hold for every pair the join gives: only the other conjuncts count
    const { checked, cheap, costly } = checkedConjuncts(p.plan)
    const failures = (list: typeof conjuncts) =>
      list.length ? list.map((c) => `(CASE WHEN ${tests[c.index]} THEN 0 ELSE 1 END)`).join(' + ') : '0'
    const rank = `CASE WHEN ${failures(cheap)} > 0 THEN ${failures(cheap)} + ${costly.length} ELSE ${failures(costly)} END`
    const firstFailed = checked.length
      ? `CASE ${[...cheap, ...costly].map((c) => `WHEN NOT ${tests[c.index]} THEN ${c.index}`).join(' ')} ELSE -1 END`
      : '-1'
    const res = await client.query<{ own: number; cand: number; rank: number; failed: number }>(
      `SELECT DISTINCT ON (o.${RID}) o.${RID} AS own, x.${RID} AS cand, ${rank} AS rank, ${firstFailed} AS failed
         FROM ${TEMP[side]} o JOIN ${TEMP[other]} x ON ${joinOn.join(' AND ')}
        WHERE o.${FREE}
        ORDER BY o.${RID}, rank, x.${RID}`,
      sql.params,
    )
    for (const r of res.rows) {
      const k = slot.get(Number(r.own))
      if (k === undefined) continue
      const share = (conjuncts.length - Number(r.rank)) / conjuncts.length
      if (share <= best[k]) continue
      best[k] = share
      set.candidate[k] = Number(r.cand)
      set.pass[k] = p.index
      set.conjunct[k] = Number(r.failed)
      set.candidateTaken[k] = otherFree[Number(r.cand)] ? 0 : 1
    }
  }
  return set
}
