// The engine's vocabulary, shared by connectors, the planner and the REST layer (DESIGN §2).

export const COLUMN_TYPES = ['string', 'integer', 'decimal', 'float', 'boolean', 'date', 'timestamp'] as const
export type ColumnType = (typeof COLUMN_TYPES)[number]

export interface ColumnInfo {
  name: string
  type: ColumnType
  nullable: boolean
  /** Digits after the decimal point, for `decimal` columns. */
  scale?: number
}

export const FILTER_OPS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'between', 'in', 'like'] as const
export type FilterOp = (typeof FILTER_OPS)[number]
export type FilterScalar = string | number | boolean
export interface FilterCondition {
  column: string
  op: FilterOp
  /** `between`: [from, to] (inclusive); `in`: a non-empty list. */
  value: FilterScalar | FilterScalar[]
}

/** What a connector will run for a set of conditions: SQL and its bound parameters for SQL sources. */
export interface NativeQuery {
  language: string
  sql?: string
  params?: unknown[]
  /** For sources filtered in the engine: a readable rendering of the predicate. */
  description?: string
}
