// Recipes: saved, versioned, validated against the registered sources before they are stored.
// An update adds a version; every version stays readable, so a run can name the one it used.

import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import fp from 'fastify-plugin'
import type { Kysely } from 'kysely'
import { type Attribution, type AuditService, SYSTEM } from '../audit/service.js'
import type { Database, RecipeRow } from '../db/schema.js'
import { nearestNames } from '../language/similarity.js'
import { ConcordError, notFound } from '../errors.js'
import { FilterConditionSchema } from '../sources/schemas.js'
import type { SourcesService } from '../sources/service.js'
import { type RunOptions, type RunResult, reconcile } from '../engine/reconcile.js'
import type { Table } from '../engine/data/table.js'
import { EngineContext } from '../sources/connector.js'
import { type ExplainReply, explainRecipe } from './explain.js'
import { lookupSchemas } from './lookups.js'
import type { Recipe, RecipeModel } from './schema.js'
import type { Schemas } from '../language/types.js'
import { structuralIssues, type ValidationIssue, type ValidationReport, validateRecipe } from './validate.js'

export interface RecipeView {
  id: string
  name: string
  version: number
  latest_version: number
  recipe: Recipe
  created_at: string
  updated_at: string
}

export interface RecipeListItem {
  id: string
  name: string
  latest_version: number
  created_at: string
  updated_at: string
}

export class RecipesService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly sources: SourcesService,
    private readonly log: FastifyBaseLogger,
    /** Creations, new versions and deletions are appended to the audit trail with the change. */
    private readonly audit?: AuditService,
  ) {}

  /**
   * The column schemas of the recipe's two sources and of its lookups' sources, or issues naming
   * the sources that do not exist (the sides' schemas are missing when a side's source is).
   */
  async schemasOf(ws: string, recipe: Recipe): Promise<{ schemas?: Schemas; issues: ValidationIssue[] }> {
    const known = await this.sources.list(ws)
    const issues: ValidationIssue[] = []
    const unknown = (what: string, alias: string) => {
      const near = nearestNames(
        alias,
        known.map((s) => s.alias),
      )
      issues.push({
        pass: null,
        code: 'unknown_source',
        message: `${what} source "${alias}" is not registered`,
        suggestion: near.length
          ? `did you mean ${near.map((n) => `"${n}"`).join(', ')}?`
          : 'register it with POST /api/sources',
      })
    }
    const columns = (side: 'left' | 'right') => {
      const alias = recipe[side].source
      const source = known.find((s) => s.alias === alias)
      if (source) return source.columns
      unknown(side, alias)
      return undefined
    }
    const l = columns('left')
    const r = columns('right')
    const lookups = lookupSchemas(recipe, (alias) => known.find((s) => s.alias === alias)?.columns)
    for (const [name, def] of Object.entries(lookups)) if (!def.columns) unknown(`lookup "${name}"`, def.source)
    return l && r ? { schemas: { l, r, lookups }, issues } : { issues }
  }

  async validate(ws: string, input: unknown): Promise<ValidationReport> {
    const structural = structuralIssues(input, { FilterCondition: FilterConditionSchema })
    if (structural.length) return report(structural)
    const recipe = input as Recipe
    const { schemas, issues } = await this.schemasOf(ws, recipe)
    if (!schemas) return report(issues)
    const checked = validateRecipe(recipe, schemas)
    return issues.length ? { ...report([...issues, ...checked.issues]), warnings: checked.warnings } : checked
  }

  /** Validates, or throws `invalid_recipe` (400) carrying every issue. */
  async checked(ws: string, input: unknown): Promise<{ recipe: Recipe; schemas: Schemas }> {
    const result = await this.validate(ws, input)
    if (!result.valid) {
      const first = result.issues[0]
      throw new ConcordError(
        'invalid_recipe',
        `the recipe has ${result.issues.length} issue${result.issues.length === 1 ? '' : 's'}; first: ${first.pass ? `pass ${first.pass}: ` : ''}${first.message}`,
        400,
        first.suggestion ?? 'POST /api/recipes/validate lists every issue',
        { issues: result.issues },
      )
    }
    const recipe = input as Recipe
    const { schemas } = await this.schemasOf(ws, recipe)
    return { recipe, schemas: schemas! }
  }

  /**
   * The two tables a recipe runs on. `sample`: the scoped tables already loaded into the engine
   * (POST /api/sources/:alias/load-scoped); `full`: each side's source loaded with the recipe's
   * own scope, into a scratch context (the engine's scoped tables are left as they were).
   */
  async sides(
    ws: string,
    recipe: Recipe,
    mode: 'sample' | 'full',
    signal?: AbortSignal,
  ): Promise<{ left: Table; right: Table }> {
    const load = async (side: 'left' | 'right'): Promise<Table> => {
      const { source: alias, scope = [] } = recipe[side]
      if (mode === 'sample') {
        const scoped = this.sources.engine(ws).get(alias)
        if (!scoped)
          throw new ConcordError(
            'scope_not_loaded',
            `no scoped table is loaded for ${side} source "${alias}"`,
            409,
            `load one with POST /api/sources/${alias}/load-scoped, or run in full mode`,
          )
        return scoped.table
      }
      const source = await this.sources.source(ws, alias)
      const scoped = await this.sources
        .connector(source.type)
        .registerScoped(new EngineContext(), alias, source, scope, { signal })
      return scoped.table
    }
    return { left: await load('left'), right: await load('right') }
  }

  /** Validates a recipe, loads its sides and runs it in the engine: the entry point runs build on. */
  async execute(
    ws: string,
    input: unknown,
    mode: 'sample' | 'full',
    opts: RunOptions & { version?: number } = {},
  ): Promise<RunResult> {
    const { recipe } = await this.checked(ws, input)
    const { left, right } = await this.sides(ws, recipe, mode, opts.signal)
    return reconcile(recipe, left, right, { ...opts, lookups: await this.lookupTables(ws, recipe, opts.signal) })
  }

  /** The tables of the recipe's lookups: each source loaded whole, in either mode (a lookup has no scope). */
  async lookupTables(ws: string, recipe: Recipe, signal?: AbortSignal): Promise<Record<string, Table>> {
    const out: Record<string, Table> = {}
    for (const [name, def] of Object.entries(recipe.lookups ?? {})) {
      const source = await this.sources.source(ws, def.source)
      const loaded = await this.sources
        .connector(source.type)
        .registerScoped(new EngineContext(), def.source, source, [], { signal })
      out[name] = loaded.table
    }
    return out
  }

  /** `models`: weights an earlier run learned, by pass name, shown for passes that give no model. */
  async explain(ws: string, input: unknown, models: Record<string, RecipeModel> = {}): Promise<ExplainReply> {
    const { recipe, schemas } = await this.checked(ws, input)
    return explainRecipe(recipe, schemas, models)
  }

  async create(ws: string, input: unknown, by: Attribution = SYSTEM): Promise<RecipeView> {
    const { recipe } = await this.checked(ws, input)
    const id = randomUUID()
    await this.db.transaction().execute(async (tx) => {
      await tx.insertInto('recipes').values({ id, workspace_id: ws, name: recipe.name, latest_version: 1 }).execute()
      const body = { ...recipe, version: 1 }
      await tx
        .insertInto('recipe_versions')
        .values({ recipe_id: id, version: 1, body: JSON.stringify(body) })
        .execute()
      await this.audit?.record(tx, {
        workspace: ws,
        ...by,
        action: 'recipe.created',
        entity: { type: 'recipe', id },
        after: { id, name: recipe.name, version: 1, recipe: body },
      })
    })
    this.log.info({ recipe_id: id, name: recipe.name }, 'recipe created')
    return this.get(ws, id)
  }

  /** A new version of an existing recipe; the earlier versions stay as they were. */
  async update(ws: string, id: string, input: unknown, by: Attribution = SYSTEM): Promise<RecipeView> {
    await this.row(ws, id)
    const { recipe } = await this.checked(ws, input)
    const version = await this.db.transaction().execute(async (tx) => {
      // the row lock makes concurrent updates take consecutive versions
      const current = await tx
        .selectFrom('recipes')
        .select(['name', 'latest_version'])
        .where('id', '=', id)
        .forUpdate()
        .executeTakeFirstOrThrow()
      const next = current.latest_version + 1
      const body = { ...recipe, version: next }
      await tx
        .insertInto('recipe_versions')
        .values({ recipe_id: id, version: next, body: JSON.stringify(body) })
        .execute()
      await tx
        .updateTable('recipes')
        .set({ name: recipe.name, latest_version: next, updated_at: new Date() })
        .where('id', '=', id)
        .execute()
      const previous = await tx
        .selectFrom('recipe_versions')
        .select('body')
        .where('recipe_id', '=', id)
        .where('version', '=', current.latest_version)
        .executeTakeFirst()
      await this.audit?.record(tx, {
        workspace: ws,
        ...by,
        action: 'recipe.updated',
        entity: { type: 'recipe', id },
        before: { id, name: current.name, version: current.latest_version, recipe: previous?.body ?? null },
        after: { id, name: recipe.name, version: next, recipe: body },
      })
      return next
    })
    this.log.info({ recipe_id: id, version }, 'recipe updated')
    return this.get(ws, id, version)
  }

  async list(ws: string): Promise<RecipeListItem[]> {
    const rows = await this.db
      .selectFrom('recipes')
      .selectAll()
      .where('workspace_id', '=', ws)
      .orderBy('name')
      .orderBy('created_at')
      .execute()
    return rows.map((r) => ({
      id: r.id,
      name: r.name,
      latest_version: r.latest_version,
      created_at: iso(r.created_at),
      updated_at: iso(r.updated_at),
    }))
  }

  async get(ws: string, id: string, version?: number): Promise<RecipeView> {
    const row = await this.row(ws, id)
    const v = version ?? row.latest_version
    const body = await this.db
      .selectFrom('recipe_versions')
      .selectAll()
      .where('recipe_id', '=', id)
      .where('version', '=', v)
      .executeTakeFirst()
    if (!body) {
      throw new ConcordError(
        'recipe_version_not_found',
        `recipe "${id}" has no version ${v}`,
        404,
        `its versions are 1 to ${row.latest_version}`,
      )
    }
    return {
      id,
      name: body.body.name,
      version: v,
      latest_version: row.latest_version,
      recipe: body.body,
      created_at: iso(body.created_at),
      updated_at: iso(row.updated_at),
    }
  }

  async remove(ws: string, id: string, by: Attribution = SYSTEM): Promise<void> {
    const row = await this.row(ws, id)
    await this.db.transaction().execute(async (tx) => {
      // what was deleted: the name and how many versions (each version's body is in the trail already)
      const deleted = await tx.deleteFrom('recipes').where('id', '=', id).returningAll().executeTakeFirst()
      if (!deleted) return
      await this.audit?.record(tx, {
        workspace: ws,
        ...by,
        action: 'recipe.deleted',
        entity: { type: 'recipe', id },
        before: { id, name: row.name, version: deleted.latest_version },
      })
    })
    this.log.info({ recipe_id: id }, 'recipe deleted')
  }

  private async row(ws: string, id: string): Promise<RecipeRow> {
    const row = await this.db
      .selectFrom('recipes')
      .selectAll()
      .where('workspace_id', '=', ws)
      .where('id', '=', id)
      .executeTakeFirst()
    if (!row) throw notFound('recipe', id, 'GET /api/recipes lists the saved recipes')
    return row
  }
}

function report(issues: ValidationIssue[]): ValidationReport {
  const suggestions = [...new Set(issues.flatMap((i) => (i.suggestion ? [i.suggestion] : [])))]
  return { valid: issues.length === 0, issues, suggestions, warnings: [] }
}

const iso = (d: Date | string) => new Date(d).toISOString()

declare module 'fastify' {
  interface FastifyInstance {
    recipes: RecipesService
  }
}

export default fp(
  async (app) => {
    app.decorate('recipes', new RecipesService(app.db, app.sources, app.log, app.audit))
  },
  { name: 'recipes', dependencies: ['db', 'sources', 'audit'] },
)
