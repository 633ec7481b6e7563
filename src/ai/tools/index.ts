// The seven reasoning tools, one module each.

import type { AiTool } from '../types.js'
import { buildRecipe } from './build_recipe.js'
import { detectFieldMappings } from './detect_field_mappings.js'
import { inferRules } from './infer_rules.js'
import { nlToSql } from './nl_to_sql.js'
import { parseNlFilter } from './parse_nl_filter.js'
import { proposeMatch } from './propose_match.js'
import { validateRecipe } from './validate_recipe.js'

export const TOOLS: AiTool[] = [
  detectFieldMappings,
  parseNlFilter,
  proposeMatch,
  inferRules,
  buildRecipe,
  validateRecipe,
  nlToSql,
] as unknown as AiTool[]
