// The service's own tables, one interface each (Kysely style). Migrations in ./migrations create them.

import type { ColumnType, Generated, Insertable, JSONColumnType, Selectable } from 'kysely'
import type { ColumnInfo } from '../engine/types.js'
import type { Recipe } from '../recipes/schema.js'

export interface SourcesTable {
  alias: string
  type: string
  /** The connector's config, as prepared. Redacted before it leaves the service. */
  config: JSONColumnType<Record<string, unknown>, string, string>
  columns: JSONColumnType<ColumnInfo[], string, string>
  created_at: ColumnType<Date, never, never>
}

export interface RecipesTable {
  id: string
  name: string
  latest_version: number
  created_at: ColumnType<Date, never, never>
  updated_at: ColumnType<Date, never, Date>
}

export interface RecipeVersionsTable {
  recipe_id: string
  version: number
  /** The recipe document, with `version` set to this row's version. */
  body: JSONColumnType<Recipe, string, never>
  created_at: ColumnType<Date, never, never>
}

export interface Database {
  sources: SourcesTable
  recipes: RecipesTable
  recipe_versions: RecipeVersionsTable
}

export type SourceRow = Selectable<SourcesTable>
export type NewSourceRow = Insertable<SourcesTable>
export type RecipeRow = Selectable<RecipesTable>
export type { Generated }
