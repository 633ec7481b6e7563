// The wizard path as an accuracy instrument (issue 16): what a person does in a step-by-step
// client, over REST, on one shared dataset, then the full run scored link by link against the
// dataset's truth (test/helpers/truth.ts).
//
//   register both files → preview 100 rows of each → detect_field_mappings → confirm a few true
//   pairs → infer_rules → build_recipe → validate_recipe → full run → read the result sets
//
// Confirmed pairs are chosen as a user would, not hand-picked: walk the left preview in order and
// take the rows that have a partner in truth. Each such row is one confirmation, with everything
// truth links it to (its connected component of links: a pair, an invoice and its two parts, a
// payout and all its captures); a row already inside an earlier confirmation is skipped. The user
// looks the partners up (a load-scoped call with `in` on the id column), so a partner missing from
// the other preview is appended to that sample, as is a group member missing from its own side's
// preview. Choice k takes the k-th window of `perChoice` confirmations, [k·n, k·n + n): choice 0 is
// the first ones. A dataset with too few confirmable rows for that window wraps around, so its
// later choices overlap (kalla's 15 invoices hold 9 confirmations).
//
// Scoring (test/helpers/run-score.ts): every clean match claims each of its links (a group one
// link per member pair); an ambiguous match claims nothing and is counted apart. precision = true
// claimed / claimed, recall = true claimed / truth links.

import type { FastifyInstance } from 'fastify'
import { recordKeyReader } from '../../src/engine/explain/evidence.js'
import type { Recipe, RecipePass } from '../../src/recipes/schema.js'
import { type RunScore, type RunSummaryView, scoreRun, UNSCORED } from './run-score.js'
import { waitForRun } from './runs.js'
import {
  acquirerJudge,
  type DatasetFile,
  type Judge,
  kallaJudge,
  type Links,
  payoutsJudge,
  transfersJudge,
  type Truth,
} from './truth.js'

type Row = Record<string, unknown>
interface Column {
  name: string
  type: string
}

export interface WizardDataset {
  /** Names the dataset and orientation in reports; also the source aliases' stem. */
  name: string
  judge: Judge
  /** The judge's right file as the left source (payouts: payouts left, captures right). */
  flipped?: boolean
  /** Confirmations per choice: 5 pairs, or 3 groups where truth links groups (N:1). */
  perChoice: number
}

export interface Confirmation {
  /** Ids of the confirmed rows, left and right (one each for a pair, more for a group). */
  left: string[]
  right: string[]
}

export interface WizardScore extends RunScore {
  dataset: string
  choice: number
  confirmed: Confirmation[]
  /** Row positions in the samples infer_rules got: what the tool saw. */
  confirmedPairs: { left: number; right: number }[]
  mappings: unknown[]
  inferred: { rules: unknown[]; primary_keys: unknown; pattern: string } & Record<string, unknown>
  recipe: Recipe
  /** validate_recipe's reply as given, `warnings` included when the tool gives them. */
  validation: { valid: boolean; issues: unknown[]; suggestions: unknown[]; warnings?: unknown } & Record<
    string,
    unknown
  >
  run: { id: string; status: string; error: unknown }
  summary: RunSummaryView | null
  ms: { infer: number; run: number; total: number }
}

async function call(app: FastifyInstance, method: 'GET' | 'POST', url: string, payload?: unknown) {
  const res = await app.inject({ method, url, payload: payload as never })
  if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`)
  return res
}

async function json(app: FastifyInstance, method: 'GET' | 'POST', url: string, payload?: unknown) {
  return (await call(app, method, url, payload)).json()
}

/** POST /api/ai, insisting on the deterministic engine: the instrument measures that, not a model. */
async function tool(app: FastifyInstance, name: string, input: unknown) {
  const body = await json(app, 'POST', '/api/ai', { tool: name, input })
  if (body.engine !== 'deterministic' || body.fallback)
    throw new Error(`${name}: answered by ${body.engine}${body.fallback ? ` (fallback ${body.fallback.error})` : ''}`)
  return body.result
}

const alias = (dataset: WizardDataset, side: 'left' | 'right') =>
  `${dataset.name.replace(/[^A-Za-z0-9]+/g, '_')}_${side}`.replace(/^[^A-Za-z]+/, '')

/** Registers a source unless this app has it already (the bench runs several choices per app). */
async function ensureSource(app: FastifyInstance, name: string, file: DatasetFile) {
  const seen = await app.inject({ method: 'GET', url: `/api/sources/${name}` })
  if (seen.statusCode === 200) return
  await json(app, 'POST', '/api/sources', { alias: name, type: file.type, path: file.path })
}

/** The truth as the wizard sees it: the dataset's left and right in its orientation. */
export async function orientedTruth(dataset: WizardDataset): Promise<Truth & { files: [DatasetFile, DatasetFile] }> {
  const truth = await dataset.judge.load()
  const { left, right } = dataset.judge
  return dataset.flipped
    ? { left: truth.right, right: truth.left, links: truth.links.flipped(), files: [right, left] }
    : { ...truth, files: [left, right] }
}

/** Every truth row linked to a row, through links on both sides (a pair, a split, a payout's captures). */
function component(links: Links, start: number): { left: number[]; right: number[] } {
  const left = new Set([start])
  const right = new Set<number>()
  const queue: ['l' | 'r', number][] = [['l', start]]
  while (queue.length) {
    const [side, row] = queue.pop()!
    const [others, seen, next] =
      side === 'l' ? [links.partnersOfLeft(row), right, 'r' as const] : [links.partnersOfRight(row), left, 'l' as const]
    for (const x of others) {
      if (seen.has(x)) continue
      seen.add(x)
      queue.push([next, x])
    }
  }
  return { left: [...left].sort((a, b) => a - b), right: [...right].sort((a, b) => a - b) }
}

/**
 * The confirmations of choice `choice`, as file rows: left preview rows in order, those with a
 * partner, each with its component of truth links; the k-th window of `perChoice`, wrapping.
 */
export function chooseConfirmations(
  links: Links,
  previewRows: number,
  perChoice: number,
  choice: number,
): { left: number[]; right: number[] }[] {
  const all: { left: number[]; right: number[] }[] = []
  const covered = new Set<number>()
  for (let l = 0; l < previewRows; l++) {
    if (covered.has(l) || !links.partnersOfLeft(l).length) continue
    const c = component(links, l)
    for (const x of c.left) covered.add(x)
    all.push(c)
  }
  if (!all.length) return []
  const n = Math.min(perChoice, all.length)
  return Array.from({ length: n }, (_, j) => all[(choice * perChoice + j) % all.length])
}

/** The rows of a source with these ids, looked up as a client would: load-scoped, `id IN (…)`. */
async function lookUp(app: FastifyInstance, source: string, idColumn: string, ids: string[]): Promise<Row[]> {
  if (!ids.length) return []
  const reply = await json(app, 'POST', `/api/sources/${source}/load-scoped`, {
    conditions: [{ column: idColumn, op: 'in', value: ids }],
    preview: ids.length,
  })
  const byId = new Map((reply.rows as Row[]).map((r) => [String(r[idColumn]), r]))
  return ids.map((id) => {
    const row = byId.get(id)
    if (!row) throw new Error(`${source}: no row ${idColumn} = ${id}`)
    return row
  })
}

type OrientedTruth = Awaited<ReturnType<typeof orientedTruth>>

/**
 * The samples infer_rules gets: the previews, plus the confirmed rows they lack, looked up; and
 * the confirmed pairs as positions in them (every truth link inside each confirmation).
 */
async function confirmedSamples(
  app: FastifyInstance,
  sources: { left: string; right: string },
  previews: { left: Row[]; right: Row[] },
  chosen: { left: number[]; right: number[] }[],
  truth: OrientedTruth,
) {
  const side = (preview: Row[], source: string, file: DatasetFile, table: Truth['left']) => {
    const sample = [...preview]
    const rowId = recordKeyReader(table, [file.id])
    // the previews are the files' first rows: truth's row numbers are the previews' positions
    preview.forEach((r, i) => {
      if (String(r[file.id]) !== rowId(i)) throw new Error(`${source}: preview row ${i} is not file row ${i}`)
    })
    const at = new Map(sample.map((r, i) => [String(r[file.id]), i]))
    return {
      sample,
      rowId,
      async lookUpMissing(rows: number[]) {
        const ids = [...new Set(rows.map(rowId).filter((id) => !at.has(id)))]
        for (const r of await lookUp(app, source, file.id, ids)) at.set(String(r[file.id]), sample.push(r) - 1)
      },
      at: (row: number) => at.get(rowId(row))!,
    }
  }
  const a = side(previews.left, sources.left, truth.files[0], truth.left)
  const b = side(previews.right, sources.right, truth.files[1], truth.right)
  await a.lookUpMissing(chosen.flatMap((c) => c.left))
  await b.lookUpMissing(chosen.flatMap((c) => c.right))
  return {
    sample_a: a.sample,
    sample_b: b.sample,
    confirmed_pairs: chosen.flatMap((c) =>
      c.left.flatMap((l) => truth.links.partnersOfLeft(l).map((r) => ({ left: a.at(l), right: b.at(r) }))),
    ),
    confirmed: chosen.map((c) => ({ left: c.left.map(a.rowId), right: c.right.map(b.rowId) })),
  }
}

/** The whole wizard path for one dataset and one choice of confirmations; see the file comment. */
export async function wizardScore(
  app: FastifyInstance,
  dataset: WizardDataset,
  choice: number,
  loaded?: OrientedTruth,
): Promise<WizardScore> {
  const started = performance.now()
  const truth = loaded ?? (await orientedTruth(dataset))
  const sources = { left: alias(dataset, 'left'), right: alias(dataset, 'right') }
  await ensureSource(app, sources.left, truth.files[0])
  await ensureSource(app, sources.right, truth.files[1])

  const PREVIEW = 100
  const leftPreview = await json(app, 'GET', `/api/sources/${sources.left}/preview?limit=${PREVIEW}`)
  const rightPreview = await json(app, 'GET', `/api/sources/${sources.right}/preview?limit=${PREVIEW}`)
  const schema_a = leftPreview.columns as Column[]
  const schema_b = rightPreview.columns as Column[]
  const detected = await tool(app, 'detect_field_mappings', {
    schema_a,
    schema_b,
    sample_a: leftPreview.rows,
    sample_b: rightPreview.rows,
  })
  const mappings = detected.mappings as unknown[]

  const chosen = chooseConfirmations(truth.links, leftPreview.rows.length, dataset.perChoice, choice)
  const { sample_a, sample_b, confirmed_pairs, confirmed } = await confirmedSamples(
    app,
    sources,
    { left: leftPreview.rows, right: rightPreview.rows },
    chosen,
    truth,
  )
  const inferStarted = performance.now()
  const inferred = await tool(app, 'infer_rules', { schema_a, schema_b, sample_a, sample_b, mappings, confirmed_pairs })
  const inferMs = performance.now() - inferStarted
  const built = await tool(app, 'build_recipe', {
    rules: inferred.rules,
    sources,
    primary_keys: inferred.primary_keys,
    pattern: inferred.pattern,
    name: `${sources.left}-vs-${sources.right}`,
  })
  const recipe = built.recipe as Recipe
  // the same samples and confirmed pairs infer_rules saw: the warnings say what cannot be right
  const validation = await tool(app, 'validate_recipe', {
    recipe,
    schemas: { left: schema_a, right: schema_b },
    samples: { left: sample_a, right: sample_b },
    confirmed_pairs,
  })

  const runStarted = performance.now()
  const run = await waitForRun(app, (await json(app, 'POST', '/api/runs', { recipe, mode: 'full' })).id)
  const runMs = performance.now() - runStarted
  const score =
    run.status === 'completed' ? await scoreRun(app, run, recipe.left.key, recipe.right.key, truth) : UNSCORED
  return {
    dataset: dataset.name,
    choice,
    confirmed,
    confirmedPairs: confirmed_pairs,
    mappings,
    inferred,
    recipe,
    validation,
    run: { id: run.id, status: run.status, error: run.error ?? null },
    summary: run.summary ?? null,
    ...score,
    truthLinks: truth.links.size,
    ms: { infer: inferMs, run: runMs, total: performance.now() - started },
  }
}

/** A recipe pass in one line: its name, pattern and condition (or blocking and comparisons). */
export function passLine(p: RecipePass): string {
  const parts = [`${p.name} (${p.pattern})`]
  if (p.when) parts.push(p.when)
  if (p.block) parts.push(`block ${p.block.join(' | ')}`)
  if (p.compare)
    parts.push(`compare ${p.compare.map((c) => c.name).join(', ')}, threshold ${p.threshold ?? '0.5 (default)'}`)
  if (p.aggregate)
    parts.push(`${p.aggregate.sum} = ${p.aggregate.equals} ± ${JSON.stringify(p.aggregate.tolerance ?? 0)}`)
  return parts.join(': ')
}

/**
 * The datasets issue 16 is judged on, each with how many confirmations a choice holds: 5 pairs,
 * or 3 groups for payouts (N:1), in both orientations. febrl is not part of it.
 */
export const WIZARD_DATASETS: WizardDataset[] = [
  { name: 'transfers', judge: transfersJudge, perChoice: 5 },
  { name: 'payouts', judge: payoutsJudge, perChoice: 3 },
  { name: 'payouts flipped', judge: payoutsJudge, flipped: true, perChoice: 3 },
  { name: 'acquirer-settlement', judge: acquirerJudge, perChoice: 5 },
  { name: 'kalla/generated', judge: kallaJudge('kalla/generated'), perChoice: 5 },
  { name: 'kalla', judge: kallaJudge('kalla'), perChoice: 5 },
]
