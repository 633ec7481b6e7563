// `concord reconcile`: one run from the command line, without a server. Each side is a file (CSV
// or JSON) or the alias of a source registered in the service's database (embedded in DATA_DIR,
// or DATABASE_URL) in one workspace. The run is the same job the service runs in its workers,
// here in process.

import { readFile, stat } from 'node:fs/promises'
import { extname, resolve } from 'node:path'
import type { Config } from '../config.js'
import type { ServiceDatabase } from '../db/connect.js'
import type { ColumnInfo } from '../engine/data/types.js'
import type { RunSummary } from '../engine/reconcile.js'
import { ConcordError } from '../errors.js'
import { nearestNames } from '../language/similarity.js'
import { applyParams } from '../recipes/params.js'
import type { Recipe } from '../recipes/schema.js'
import { structuralIssues, validateRecipe } from '../recipes/validate.js'
import type { Source } from '../sources/connector.js'
import { confinedPath } from '../sources/files.js'
import { openConfig } from '../sources/secrets.js'
import { type ConnectorContext, type ConnectorRegistry, loadConnectors } from '../sources/registry.js'
import { FilterConditionSchema } from '../sources/schemas.js'
import { type JobProgress, runJob } from './job.js'
import { setsWriter, warmHelper } from './write-sets.js'
import { type Args, parseArgs } from './cli-args.js'
import { collectGarbage } from './collect.js'
import { endPartHelper } from '../engine/load/csv/parallel.js'
import { endPartitionHelper } from '../engine/match/partition-helper.js'
import { RECONCILE_USAGE } from './usage.js'

export { RECONCILE_USAGE }

/**
 * Binds the command's --left and --right: a file becomes a source of its type; anything else must
 * be an alias registered in the workspace, read from the service's database (opened once, only
 * when an alias is given). A registered file source stays confined to DATA_DIR, as in the service.
 */
class SourceBinder {
  private database?: Promise<ServiceDatabase>

  constructor(
    private readonly config: Config,
    private readonly workspace: string,
    private readonly connectors: ConnectorRegistry,
  ) {}

  async bind(value: string, alias: string): Promise<Source> {
    // a file's type is the connector that takes its extension
    const ext = extname(value).toLowerCase().replace('.', '')
    const type = ext ? this.connectors.typeForExtension(ext) : undefined
    const isFile = await stat(value).then(
      (s) => s.isFile(),
      () => false,
    )
    if (type && isFile) return { alias, type, config: { path: resolve(value) } }
    if (isFile)
      throw new ConcordError(
        'unknown_file_type',
        `cannot tell the type of "${value}"`,
        2,
        `name it ${this.connectors
          .extensions()
          .map((e) => `.${e}`)
          .join(', ')}`,
      )
    if (type || value.includes('/')) throw new ConcordError('file_not_found', `no file "${value}"`, 2)
    return this.registered(value, alias)
  }

  private async registered(value: string, alias: string): Promise<Source> {
    this.database ??= this.open()
    const { db } = await this.database
    const row = await db
      .selectFrom('sources')
      .selectAll()
      .where('workspace_id', '=', this.workspace)
      .where('alias', '=', value)
      .executeTakeFirst()
    if (!row) {
      const elsewhere = await db.selectFrom('sources').select('workspace_id').where('alias', '=', value).execute()
      throw new ConcordError(
        'source_not_found',
        `"${value}" is neither a file nor a source registered in workspace "${this.workspace}"`,
        2,
        elsewhere.length
          ? `it is registered in workspace ${elsewhere.map((r) => `"${r.workspace_id}"`).join(', ')}: add --workspace`
          : 'give a path to a CSV or JSON file, or register the source first',
      )
    }
    const config = openConfig(row.config, this.config.secretKey)
    // the CLI reads files anywhere, but a registered path means what it means to the service
    if (typeof config.path === 'string')
      return {
        alias,
        type: row.type,
        config: { ...config, path: await confinedPath(this.config.dataDir, config.path) },
      }
    return { alias, type: row.type, config }
  }

  private async open(): Promise<ServiceDatabase> {
    // imported here: a run on files never loads PGlite, pg or the migrations
    const { embeddedDir, migrateToLatest, openDatabase } = await import('../db/connect.js')
    const database = await openDatabase({ url: this.config.databaseUrl, pgliteDir: embeddedDir(this.config.dataDir) })
    try {
      await migrateToLatest(database.db)
    } catch (err) {
      // close() sees only a failed open: the database is closed here, or the process would wait on it
      await database.close()
      throw err
    }
    const ws = await database.db
      .selectFrom('workspaces')
      .select('id')
      .where('id', '=', this.workspace)
      .executeTakeFirst()
    if (!ws) {
      const all = await database.db.selectFrom('workspaces').select('id').orderBy('id').execute()
      await database.close()
      this.database = undefined
      throw new ConcordError(
        'workspace_not_found',
        `no workspace "${this.workspace}"`,
        2,
        `the workspaces: ${all.map((w) => w.id).join(', ')}`,
      )
    }
    return database
  }

  async close(): Promise<void> {
    const database = await this.database?.catch(() => undefined)
    await database?.close()
  }
}

export function progressBar(p: JobProgress): string {
  const width = 30
  const done = Math.round((p.percent / 100) * width)
  const what = p.phase === 'matching' && p.pass ? `matching (pass ${p.pass})` : p.phase
  const rows = p.rows_loaded.left !== null ? `  ${p.rows_loaded.left} × ${p.rows_loaded.right ?? '…'} rows` : ''
  return `\r[${'#'.repeat(done)}${'.'.repeat(width - done)}] ${String(p.percent).padStart(3)}% ${what}${rows}\x1b[K`
}

export function summaryTable(s: RunSummary): string {
  const pad = (cells: string[], widths: number[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]))
      .join('  ')
      .trimEnd()
  const lines: string[] = []
  lines.push(
    `recipe ${s.recipe}${s.recipe_version ? ` v${s.recipe_version}` : ''}: ${s.status}, ${s.matches} matches (${s.ambiguous} ambiguous), match rate ${(s.match_rate * 100).toFixed(1)}%`,
  )
  lines.push('')
  const sides = [
    ['', 'rows', 'matched', 'unmatched', 'amount', 'matched amount', 'unmatched amount'],
    ...(['left', 'right'] as const).map((k) => {
      const v = s[k]
      return [
        k,
        String(v.rows),
        String(v.matched),
        String(v.unmatched),
        v.amount ?? '-',
        v.matched_amount ?? '-',
        v.unmatched_amount ?? '-',
      ]
    }),
  ]
  const passes = [
    ['pass', 'pattern', 'status', 'matches', 'ambiguous', 'left', 'right', 'ms'],
    ...s.passes.map((p) => [
      p.name,
      p.pattern,
      p.status,
      String(p.matches),
      String(p.ambiguous),
      String(p.left_matched),
      String(p.right_matched),
      String(p.ms),
    ]),
  ]
  for (const table of [sides, passes]) {
    const widths = table[0].map((_, c) => Math.max(...table.map((r) => r[c].length)))
    for (const row of table) lines.push(pad(row, widths))
    lines.push('')
  }
  for (const k of ['left', 'right'] as const)
    if (s[k].ambiguous) lines.push(`${k}: ${s[k].ambiguous} of the matched records are held in ambiguous matches`)
  for (const p of s.passes) {
    if (p.error) lines.push(`pass ${p.name}: ${p.error}`)
    if (p.assignment?.greedy_fallback)
      lines.push(
        `pass ${p.name}: ${p.assignment.greedy_fallback} of ${p.assignment.components} contested components were too large to assign exactly (largest ${p.assignment.largest_component} pairs) and were assigned best-first`,
      )
  }
  return lines.join('\n').trimEnd()
}

/** Where the command writes: the process's streams, or a test's. A progress bar needs a TTY. */
export interface CommandIO {
  stdout: Pick<NodeJS.WriteStream, 'write'>
  stderr: Pick<NodeJS.WriteStream, 'write' | 'isTTY'>
}

/** Runs `concord reconcile`; returns the exit code (0 done, 1 the run failed, 2 bad usage or input). */
export async function reconcileCommand(
  argv: string[],
  config: Config,
  io: CommandIO = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  const fail = (err: unknown) => failure(err, io)
  let args: Args
  try {
    args = parseArgs(argv)
  } catch (err) {
    return fail(err)
  }
  try {
    const raw = JSON.parse(
      await readFile(args.recipe, 'utf8').catch((e: Error) => {
        throw new ConcordError('unreadable_file', `cannot read the recipe: ${e.message}`, 2)
      }),
    ) as unknown
    const structural = structuralIssues(raw, { FilterCondition: FilterConditionSchema })
    if (structural.length) throw new ConcordError('invalid_recipe', structural.map((i) => i.message).join('; '), 2)
    const { recipe, used } = applyParams(raw as Recipe, args.params)
    // files anywhere the user can read: the data-folder confinement guards the service, not the CLI
    const connectors: Omit<ConnectorContext, 'log'> = {
      dataDir: '/',
      statementTimeoutMs: config.sourceStatementTimeoutMs,
      poolMax: config.sourcePoolMax,
      modules: config.connectorModules,
    }
    // one registry for binding, the check and the run: a file the check parsed is not parsed again
    const registry = await loadConnectors(connectors)
    try {
      const binder = new SourceBinder(config, args.workspace, registry)
      let sources: { left: Source; right: Source }
      let lookups: Record<string, Source>
      try {
        sources = {
          left: await binder.bind(args.left, recipe.left.source),
          right: await binder.bind(args.right, recipe.right.source),
        }
        lookups = await bindLookups(recipe, args.lookups, binder)
      } finally {
        await binder.close()
      }
      await checkRecipe(recipe, sources, lookups, registry)
      return await run(args, recipe, used, { sources, lookups, connectors, registry }, io)
    } finally {
      await registry.close()
    }
  } catch (err) {
    return fail(err)
  }
}

interface Bound {
  sources: { left: Source; right: Source }
  lookups: Record<string, Source>
  connectors: Omit<ConnectorContext, 'log'>
  registry: ConnectorRegistry
}

/** Runs from this many rows a side collect their garbage before writing (collect.ts): below, it is little. */
const COLLECT_MIN_ROWS = 100_000

async function run(
  args: Args,
  recipe: Recipe,
  used: Record<string, unknown>,
  { sources, lookups, connectors, registry }: Bound,
  io: CommandIO,
): Promise<number> {
  const tty = io.stderr.isTTY === true && !args.json
  const outDir = args.out ? resolve(args.out) : undefined
  const spec = {
    runId: 'cli',
    recipe,
    version: typeof recipe.version === 'number' ? recipe.version : null,
    mode: 'full' as const,
    dryRun: !outDir,
    sources,
    lookups,
    connectors,
    outDir: null,
  }
  let writing = false
  const onProgress = (p: JobProgress) => {
    const rows = Math.max(p.rows_loaded.left ?? 0, p.rows_loaded.right ?? 0)
    if (p.phase === 'matching') {
      // the sides are loaded: the CSV part worker is not needed again
      endPartHelper()
      // the set writer's helper boots while the sides are matched (one core is mostly idle then)
      if (outDir) warmHelper(rows)
    }
    if (p.phase === 'writing' && !writing) {
      // the match is done and most of its memory dead, some of it held by the partitioning
      // helper's heap: ended, and collected before the sets are written, it is not there beside
      // the writing's own at the command's peak (collect.ts)
      endPartitionHelper()
      if (outDir && rows >= COLLECT_MIN_ROWS) collectGarbage()
    }
    writing ||= p.phase === 'writing'
    if (tty) io.stderr.write(progressBar(p))
  }
  const summary = await runJob(spec, onProgress, {
    connectors: registry,
    write: outDir ? setsWriter(outDir, args.format) : undefined,
  })
  if (tty) io.stderr.write('\n')
  io.stdout.write(
    args.json ? `${JSON.stringify({ ...summary, params: used }, null, 2)}\n` : `${summaryTable(summary)}\n`,
  )
  if (outDir && summary.status === 'completed' && !args.json) io.stdout.write(`\nresults in ${outDir}\n`)
  return summary.status === 'completed' ? 0 : 1
}

/**
 * The source of each lookup the recipe declares: --lookup name=FILE_OR_ALIAS, else the registered
 * source its declaration names. A --lookup the recipe does not declare is a usage error.
 */
async function bindLookups(
  recipe: Recipe,
  given: Record<string, string>,
  binder: SourceBinder,
): Promise<Record<string, Source>> {
  const declared = recipe.lookups ?? {}
  for (const name of Object.keys(given)) {
    if (declared[name]) continue
    const names = Object.keys(declared)
    const near = nearestNames(name, names)
    throw new ConcordError(
      'unknown_lookup',
      `--lookup ${name}: the recipe has no lookup "${name}"`,
      2,
      near.length ? `did you mean ${near.join(', ')}?` : names.length ? `its lookups: ${names.join(', ')}` : undefined,
    )
  }
  const out: Record<string, Source> = {}
  for (const [name, def] of Object.entries(declared)) {
    try {
      out[name] = await binder.bind(given[name] ?? def.source, def.source)
    } catch (err) {
      if (!(err instanceof ConcordError)) throw err
      throw new ConcordError(
        err.code,
        `lookup "${name}": ${err.message}`,
        err.status,
        given[name] ? err.suggestion : `give it with --lookup ${name}=FILE, or register "${def.source}" first`,
      )
    }
  }
  return out
}

async function checkRecipe(
  recipe: Recipe,
  sources: { left: Source; right: Source },
  lookups: Record<string, Source>,
  registry: ConnectorRegistry,
) {
  const describe = async (s: Source) => {
    const connector = registry.get(s.type)
    return connector.describe({ ...s, config: await connector.prepare(s.config) })
  }
  const lookupColumns: Record<string, ColumnInfo[]> = {}
  for (const [name, source] of Object.entries(lookups)) lookupColumns[name] = await describe(source)
  // each lookup's columns are those of the source bound to it, whatever its declared alias
  const schemas = {
    l: await describe(sources.left),
    r: await describe(sources.right),
    lookups: Object.fromEntries(
      Object.entries(recipe.lookups ?? {}).map(([name, def]) => [name, { ...def, columns: lookupColumns[name] }]),
    ),
  }
  const report = validateRecipe(recipe, schemas)
  if (!report.valid) {
    const lines = report.issues.map(
      (i) => `${i.pass ? `pass ${i.pass}: ` : ''}${i.message}${i.suggestion ? ` (${i.suggestion})` : ''}`,
    )
    throw new ConcordError('invalid_recipe', `the recipe has issues:\n  ${lines.join('\n  ')}`, 2)
  }
}

function failure(err: unknown, io: CommandIO): number {
  if (err instanceof ConcordError) {
    io.stderr.write(`concord reconcile: ${err.message}\n${err.suggestion ? `${err.suggestion}\n` : ''}`)
    return err.status === 2 ? 2 : err.status >= 500 ? 1 : 2
  }
  io.stderr.write(`concord reconcile: ${(err as Error).message}\n`)
  return 1
}
