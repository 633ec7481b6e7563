// Runs the engine on literal rows and turns its columnar evidence into JSON records, for tests.

import {
  type MatchRecord,
  matchRecord,
  recordKeyReader,
  type UnmatchedRecord,
  unmatchedRecord,
} from '../../src/engine/explain/evidence.js'
import { tableFromRows } from '../../src/engine/load/json.js'
import { type RunOptions, type RunResult, reconcile } from '../../src/engine/reconcile.js'
import type { Table } from '../../src/engine/data/table.js'
import type { Recipe, RecipePass } from '../../src/recipes/schema.js'

export type Row = Record<string, string | number | boolean | null>

export interface Evidence {
  result: RunResult
  matches: MatchRecord[]
  unmatchedLeft: UnmatchedRecord[]
  unmatchedRight: UnmatchedRecord[]
}

export function evidence(recipe: Recipe, left: Table, right: Table, opts?: RunOptions): Evidence {
  const result = reconcile(recipe, left, right, opts)
  const lk = recordKeyReader(left, recipe.left.key)
  const rk = recordKeyReader(right, recipe.right.key)
  const matches: MatchRecord[] = []
  for (let k = 0; k < result.matches.count; k++) matches.push(matchRecord(result.matches, k, result.passes, lk, rk))
  const unmatchedLeft: UnmatchedRecord[] = []
  for (let k = 0; k < result.unmatchedLeft.rows.length; k++)
    unmatchedLeft.push(unmatchedRecord(result.unmatchedLeft, k, 'left', result.passes, lk, rk))
  const unmatchedRight: UnmatchedRecord[] = []
  for (let k = 0; k < result.unmatchedRight.rows.length; k++)
    unmatchedRight.push(unmatchedRecord(result.unmatchedRight, k, 'right', result.passes, rk, lk))
  return { result, matches, unmatchedLeft, unmatchedRight }
}

export function recipeOf(passes: RecipePass[], key: { left?: string[]; right?: string[] } = {}): Recipe {
  return {
    name: 'test',
    left: { source: 'left', key: key.left ?? ['id'] },
    right: { source: 'right', key: key.right ?? ['id'] },
    passes,
  }
}

export function runRows(passes: RecipePass[], left: Row[], right: Row[]): Evidence {
  return evidence(recipeOf(passes), tableFromRows(left), tableFromRows(right))
}

/** The pairs of a run as "L|R" strings (groups joined with +), sorted, for compact assertions. */
export function pairs(e: Evidence): string[] {
  return e.matches.map((m) => `${m.left_keys.join('+')}|${m.right_keys.join('+')}`).sort()
}

/** Every record is in exactly one of matched, unmatched-left, unmatched-right. */
export function partitionProblems(e: Evidence, leftLength: number, rightLength: number): string[] {
  const problems: string[] = []
  const check = (rows: number[][], n: number, side: string) => {
    const seen = new Uint8Array(n)
    for (const list of rows) for (const r of list) seen[r]++
    for (let r = 0; r < n; r++) if (seen[r] !== 1) problems.push(`${side} row ${r} appears ${seen[r]} times`)
  }
  const m = e.result.matches
  const leftLists: number[][] = [[...e.result.unmatchedLeft.rows]]
  const rightLists: number[][] = [[...e.result.unmatchedRight.rows]]
  for (let k = 0; k < m.count; k++) {
    leftLists.push([...m.leftRows.subarray(m.leftStart[k], m.leftStart[k + 1])])
    rightLists.push([...m.rightRows.subarray(m.rightStart[k], m.rightStart[k + 1])])
  }
  check(leftLists, leftLength, 'left')
  check(rightLists, rightLength, 'right')
  return problems
}
