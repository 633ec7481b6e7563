// A completed run judged against a dataset's truth links, read over REST as a client would: the
// result sets exported as Arrow (clean matches, ambiguous ones, unmatched left and right), record
// keys mapped back to file rows. Every clean match claims each of its links (a group one link per
// member pair); an ambiguous match claims nothing and is counted apart.

import { type Table as ArrowTable, tableFromIPC } from 'apache-arrow'
import type { FastifyInstance } from 'fastify'
import { recordKeyReader } from '../../src/engine/explain/evidence.js'
import type { Truth } from './truth.js'

export interface RunSummaryView {
  left: { rows: number; matched: number; ambiguous: number; unmatched: number }
  right: { rows: number; matched: number; ambiguous: number; unmatched: number }
  matches: number
  ambiguous: number
  passes: { name: string; matches: number; ambiguous: number; status: string }[]
  timings: { total_ms: number }
}

export interface RunScore {
  /** Clean matches, and ambiguous ones held for review (they claim nothing). */
  matches: number
  ambiguous: number
  claimed: number
  truePositives: number
  falsePositives: number
  truthLinks: number
  precision: number
  recall: number
  /** Records not in exactly one of matched, ambiguous, unmatched (empty when sound). */
  partition: string[]
}

/** A completed run's result sets, read over REST, keys mapped back to file rows and judged. */
export async function scoreRun(
  app: FastifyInstance,
  run: { id: string; summary: RunSummaryView },
  leftKey: string[],
  rightKey: string[],
  truth: Truth,
): Promise<RunScore> {
  const partition: string[] = []
  const rowOf = (table: Truth['left'], key: string[], side: string) => {
    const rows = keyRows(table, key, side, partition)
    return (k: string) => {
      const row = rows.get(k)
      if (row === undefined) throw new Error(`${side} record key ${k} is in no file row`)
      return row
    }
  }
  const [lRow, rRow] = [rowOf(truth.left, leftKey, 'left'), rowOf(truth.right, rightKey, 'right')]
  const seenLeft = new Uint32Array(truth.left.length)
  const seenRight = new Uint32Array(truth.right.length)
  const clean = await resultSet(app, run.id, 'matches')
  const held = await resultSet(app, run.id, 'ambiguous')
  const cleanRight = keyLists(clean, 'right_keys')
  let claimed = 0
  let truePositives = 0
  keyLists(clean, 'left_keys').forEach((leftKeys, m) => {
    const ls = leftKeys.map(lRow)
    const rs = cleanRight[m].map(rRow)
    for (const l of ls) seenLeft[l]++
    for (const r of rs) seenRight[r]++
    for (const l of ls)
      for (const r of rs) {
        claimed++
        if (truth.links.has(l, r)) truePositives++
      }
  })
  for (const k of keyLists(held, 'left_keys').flat()) seenLeft[lRow(k)]++
  for (const k of keyLists(held, 'right_keys').flat()) seenRight[rRow(k)]++
  for (const k of keyLists(await resultSet(app, run.id, 'unmatched-left'), 'record_key').flat()) seenLeft[lRow(k)]++
  for (const k of keyLists(await resultSet(app, run.id, 'unmatched-right'), 'record_key').flat()) seenRight[rRow(k)]++
  const once = (seen: Uint32Array, side: string) => {
    let wrong = 0
    for (let i = 0; i < seen.length; i++)
      if (seen[i] !== 1 && wrong++ < 5) partition.push(`${side} row ${i} is in ${seen[i]} result sets`)
    if (wrong > 5) partition.push(`… ${wrong} ${side} rows in all`)
  }
  once(seenLeft, 'left')
  once(seenRight, 'right')
  // and the summary counts the same records
  for (const [side, s, rows] of [
    ['left', run.summary.left, truth.left.length],
    ['right', run.summary.right, truth.right.length],
  ] as const)
    if (s.rows !== rows || s.matched + s.unmatched !== rows)
      partition.push(`${side} summary: ${s.rows} rows, ${s.matched} matched + ${s.unmatched} unmatched; file ${rows}`)
  return {
    matches: clean.numRows,
    ambiguous: held.numRows,
    claimed,
    truePositives,
    falsePositives: claimed - truePositives,
    truthLinks: truth.links.size,
    precision: claimed ? truePositives / claimed : 0,
    recall: truth.links.size ? truePositives / truth.links.size : 0,
    partition,
  }
}

/** What a run that did not complete scores. */
export const UNSCORED: RunScore = {
  matches: 0,
  ambiguous: 0,
  claimed: 0,
  truePositives: 0,
  falsePositives: 0,
  truthLinks: 0,
  precision: 0,
  recall: 0,
  partition: [],
}

async function resultSet(app: FastifyInstance, run: string, set: string): Promise<ArrowTable> {
  const res = await app.inject({ method: 'GET', url: `/api/runs/${run}/export?format=arrow&set=${set}` })
  if (res.statusCode !== 200) throw new Error(`export ${set} of run ${run}: ${res.statusCode} ${res.body}`)
  return tableFromIPC(res.rawPayload)
}

const keyLists = (table: ArrowTable, column: string): string[][] => {
  const col = table.getChild(column)
  if (!col) throw new Error(`result set has no ${column}`)
  return Array.from({ length: table.numRows }, (_, i) => {
    const v = col.get(i)
    return typeof v === 'string' ? [v] : [...(v as Iterable<string>)]
  })
}

/** Record key → file row, for the keys the recipe chose; a key naming two rows is reported. */
function keyRows(table: Truth['left'], key: string[], side: string, problems: string[]): Map<string, number> {
  const read = recordKeyReader(table, key)
  const rows = new Map<string, number>()
  for (let i = 0; i < table.length; i++) {
    const k = read(i)
    if (rows.has(k)) problems.push(`${side} key ${key.join('+')} = ${k} names rows ${rows.get(k)} and ${i}`)
    rows.set(k, i)
  }
  return rows
}
