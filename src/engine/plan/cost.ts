// What a conjunct costs to check on one pair, roughly, so candidate checks run cheap conjuncts
// first and stop at the first that fails: a band pass of amount ±10%, a 21-day window and
// `similarity(l.memo, r.memo) >= 0.3` then computes trigrams only for pairs within both ranges.
// The units are "a comparison of two numbers"; only the order they give matters.

import type { Expr } from '../../language/predicate.js'

/** At or above this, a conjunct is costly: checked only when its verdict can change an outcome. */
export const COSTLY = 40

/** Functions by what one call costs: trigram and edit-distance comparisons, regular expressions, text. */
const CALL_COST: Record<string, number> = {
  similarity: 200,
  levenshtein: 200,
  regexp_replace: 60,
  upper: 4,
  lower: 4,
  trim: 3,
  ltrim: 3,
  rtrim: 3,
  substring: 6,
  replace: 6,
  length: 4,
  date_trunc: 5,
}

export function conjunctCost(e: Expr): number {
  switch (e.kind) {
    case 'column':
      return 1
    case 'number':
    case 'string':
    case 'boolean':
    case 'null':
    case 'interval':
      return 0
    case 'not':
    case 'neg':
    case 'is_null':
      return 1 + conjunctCost(e.arg)
    // a cast may parse or format text (its argument's type is not known here)
    case 'cast':
      return 3 + conjunctCost(e.arg)
    case 'and':
    case 'or':
      return 1 + e.args.reduce((sum, a) => sum + conjunctCost(a), 0)
    case 'compare':
    case 'arith':
      return 1 + conjunctCost(e.left) + conjunctCost(e.right)
    case 'concat':
      return 4 + conjunctCost(e.left) + conjunctCost(e.right)
    case 'between':
      return 2 + conjunctCost(e.value) + conjunctCost(e.lo) + conjunctCost(e.hi)
    case 'in':
      return e.list.length + conjunctCost(e.value) + e.list.reduce((sum, a) => sum + conjunctCost(a), 0)
    case 'like':
      // a literal pattern is one compiled regular expression; a pattern built from the row is
      // looked up (or compiled) per pair
      return (e.pattern.kind === 'string' ? 8 : 60) + conjunctCost(e.value) + conjunctCost(e.pattern)
    case 'call':
      return (CALL_COST[e.name] ?? 2) + e.args.reduce((sum, a) => sum + conjunctCost(a), 0)
  }
}
