// The connector contract (DESIGN §2). A source type is one file in connectors/ that builds a
// SourceConnector and registers it; nothing else in the service knows about source types.

import type { TSchema } from 'typebox'
import type { Table } from '../engine/data/table.js'
import type { ColumnInfo, FilterCondition, NativeQuery } from '../engine/data/types.js'
import type { RunProgress, RunResult } from '../engine/reconcile.js'
import type { Recipe } from '../recipes/schema.js'

/** A registered source as stored: `config` is the connector's own (validated) settings. */
export interface Source<Config = Record<string, unknown>> {
  alias: string
  type: string
  config: Config
}

export interface ScopedTable {
  alias: string
  conditions: FilterCondition[]
  table: Table
  /** Every row in scope, which may be more than `table` holds when a limit applied. */
  totalRows: number
  nativeQuery: NativeQuery
  loadedAt: Date
}

/** Scoped tables held in memory for later runs, by source alias. */
export class EngineContext {
  private readonly scoped = new Map<string, ScopedTable>()

  register(table: ScopedTable): void {
    this.scoped.set(table.alias, table)
  }

  get(alias: string): ScopedTable | undefined {
    return this.scoped.get(alias)
  }

  drop(alias: string): void {
    this.scoped.delete(alias)
  }

  aliases(): string[] {
    return [...this.scoped.keys()]
  }
}

export interface LoadOptions {
  /** At most this many rows are loaded into the scoped table (all rows in scope are still counted). */
  limit?: number
  signal?: AbortSignal
}

export interface SourceConnector<Config = Record<string, unknown>> {
  readonly type: string
  /** TypeBox schema of `config` in a registration request (also documents it in OpenAPI). */
  readonly configSchema: TSchema
  /** File extensions (lower case, no dot) an upload of this type may have, when the type takes files. */
  readonly extensions?: readonly string[]
  /** Checks and normalizes a registration's config (resolve paths, test the connection). */
  prepare(config: Config): Promise<Config>
  /** What a client may see of the config: never a password. */
  redact(config: Config): Record<string, unknown>
  describe(source: Source<Config>): Promise<ColumnInfo[]>
  /** Loads the rows of `source` that satisfy `conditions` and registers them in `ctx` as `alias`. */
  registerScoped(
    ctx: EngineContext,
    alias: string,
    source: Source<Config>,
    conditions: FilterCondition[],
    opts?: LoadOptions,
  ): Promise<ScopedTable>
  /** The native query the source will run for `conditions`. */
  translate?(source: Source<Config>, columns: ColumnInfo[], conditions: FilterCondition[]): NativeQuery
  /**
   * A connector whose sources can run a whole recipe themselves (the joins inside the source's
   * database) offers it as an engine a run may ask for (`engine` in POST /api/runs). The core only
   * asks the left source's connector; whether the right source and the recipe fit is the
   * connector's to say.
   */
  pushdown?: PushdownEngine
  /** Releases pools and caches on shutdown. */
  close?(): Promise<void>
}

export interface PushdownEngine {
  /** The engine's name in a run request. */
  readonly engine: string
  /** Why `recipe` over these two sources cannot run there, or null when it can. */
  problem(recipe: Recipe, sources: { left: Source; right: Source }): string | null
  run(
    recipe: Recipe,
    sources: { left: Source; right: Source },
    opts: {
      version?: number
      onProgress?: (p: RunProgress & { loaded?: [number, number] }) => void
    },
  ): Promise<PushdownOutcome>
}

export interface PushdownOutcome {
  result: RunResult
  /** The unmatched records with all their columns, in the order of the result's unmatched sets. */
  records: { left: Table; right: Table }
}
