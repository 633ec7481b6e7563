// Warnings about rules that cannot be right given sample rows and the pairs a person confirmed,
// and about what the samples cannot show. Validity stays the parser's and type checker's: a
// warning never makes a recipe invalid, it says where a valid recipe will match the wrong things
// or miss the right ones. Every check runs the engine's own compiled predicates on the samples
// (pass-on-samples.ts), so what is said here is what a run over those rows would see.

import type { Table } from '../engine/data/table.js'
import { CompileError } from '../engine/plan/compile.js'
import { planPass } from '../engine/plan/plan.js'
import { parsePredicate, PredicateError } from '../language/predicate.js'
import type { Recipe, RecipePass } from '../recipes/schema.js'
import { type ConfirmedGroup, confirmedGroups, type PairPosition, pairText } from './confirmed-groups.js'
import { admits, type PassOnSamples, passOnSamples } from './pass-on-samples.js'
import { plural } from './observations.js'
import { exclusions, MIN_EVIDENCE, shapeWarnings, thinEvidence, tooManyPairs } from './pass-warnings.js'
import { absentColumns, sampleTable, type UnreadableValue } from './sample-tables.js'
import type { ColumnT, RowT } from './schemas.js'
import { wideTolerances } from './tolerances.js'

export const RECIPE_WARNING_CODES = [
  'tolerance_too_wide',
  'shape_not_1_1',
  'excludes_confirmed_pair',
  'too_many_pairs',
  'unsupported_pass',
  'thin_evidence',
  'no_amount_check',
  'not_judged',
  'invalid_pair',
  'invalid_sample',
] as const
export type WarningCode = (typeof RECIPE_WARNING_CODES)[number]

export interface RecipeWarning {
  pass: string | null
  code: WarningCode
  message: string
  pairs?: PairPosition[]
}

export interface WarningInput {
  recipe: Recipe
  schemas: { left: ColumnT[]; right: ColumnT[] }
  samples?: { left: RowT[]; right: RowT[] }
  confirmed_pairs?: PairPosition[]
  /** Passes the validator found issues in: already reported, not judged again. */
  invalidPasses: Set<string>
}

type Samples = NonNullable<WarningInput['samples']>

/** Warnings in a fixed order: the input's own problems, then pass by pass, then the recipe's. */
export function recipeWarnings(input: WarningInput): RecipeWarning[] {
  const { recipe, samples } = input
  if (!samples)
    return input.confirmed_pairs?.length
      ? [
          {
            pass: null,
            code: 'invalid_pair',
            message:
              'confirmed_pairs are row positions in samples.left and samples.right; without samples they were not read',
          },
        ]
      : []
  const out: RecipeWarning[] = []
  const left = sampleTable(input.schemas.left, samples.left, 'left')
  const right = sampleTable(input.schemas.right, samples.right, 'right')
  const unreadable = [...left.unreadable, ...right.unreadable]
  if (unreadable.length) out.push(unreadableWarning(unreadable))
  const lengths = { l: samples.left.length, r: samples.right.length }
  const confirmed = confirmedPairs(input.confirmed_pairs ?? [], lengths, out)
  const groups = confirmedGroups(confirmed)
  const judged = judgePasses(input, samples, { l: left.table, r: right.table }, out)

  // which confirmed pairs each pass would take: every conjunct (and a blocking rule) holds, and
  // for a group sum the pair's whole confirmed group fits the equation
  const groupOf = new Map<PairPosition, ConfirmedGroup>()
  for (const g of groups) for (const p of g.pairs) groupOf.set(p, g)
  const takes = (p: PassOnSamples, pair: PairPosition): boolean => {
    if (!admits(p, pair.left, pair.right)) return false
    if (!p.aggregate) return true
    const g = groupOf.get(pair)!
    return g.pairs.every((q) => admits(p, q.left, q.right)) && p.aggregate.fit(g.lefts, g.rights)?.fits === true
  }
  const untaken = confirmed.filter((pair) => ![...judged.values()].some((p) => takes(p, pair)))

  for (const pass of recipe.passes) {
    const p = judged.get(pass.name)
    if (!p) continue
    for (const message of wideTolerances(p, lengths, confirmed))
      out.push({ pass: pass.name, code: 'tolerance_too_wide', message })
    if (pass.pattern === '1:1') out.push(...shapeWarnings(p, groups, recipe.passes))
    out.push(...exclusions(p, untaken, groupOf, samples))
    const many = tooManyPairs(p, lengths)
    if (many) out.push(many)
    const support = confirmed.filter((pair) => takes(p, pair))
    if (confirmed.length && support.length === 0)
      out.push({
        pass: pass.name,
        code: 'unsupported_pass',
        message: `no confirmed pair is one pass "${pass.name}" would match: its conditions rest on no confirmed example; confirm a pair it should match, or drop it`,
      })
    const thin = thinEvidence(p, support, groupOf)
    if (thin) out.push(thin)
  }
  if (confirmed.length === 0)
    out.push({
      pass: null,
      code: 'thin_evidence',
      message: `no confirmed pairs: no condition was checked against a known match; confirm at least ${MIN_EVIDENCE} pairs`,
    })
  const amounts = noAmountCheck(recipe, input.schemas)
  if (amounts) out.push(amounts)
  return out
}

const isRow = (k: number, length: number) => Number.isInteger(k) && k >= 0 && k < length

/** The confirmed pairs that name sample rows, each once; the others are reported and left out. */
function confirmedPairs(given: PairPosition[], lengths: { l: number; r: number }, out: RecipeWarning[]) {
  const outside = given.filter((p) => !isRow(p.left, lengths.l) || !isRow(p.right, lengths.r))
  if (outside.length)
    out.push({
      pass: null,
      code: 'invalid_pair',
      message: `${plural(outside.length, 'confirmed pair')} name${outside.length === 1 ? 's' : ''} a row the samples do not have (${lengths.l} left rows, ${lengths.r} right rows): ${outside.slice(0, 5).map(pairText).join(', ')}; left out`,
      pairs: outside,
    })
  const seen = new Set<string>()
  return given.filter((p) => {
    const key = `${p.left}:${p.right}`
    if (!isRow(p.left, lengths.l) || !isRow(p.right, lengths.r) || seen.has(key)) return false
    seen.add(key)
    return true
  })
}

/**
 * The passes compiled over the samples. A pass the validator rejected is skipped (its issues say
 * why); one that cannot be evaluated here (a lookup() without its table, a column no sample row
 * has) is named as not judged rather than judged on NULLs.
 */
function judgePasses(input: WarningInput, samples: Samples, tables: { l: Table; r: Table }, out: RecipeWarning[]) {
  const absent = {
    l: absentColumns(input.schemas.left, samples.left),
    r: absentColumns(input.schemas.right, samples.right),
  }
  const judged = new Map<string, PassOnSamples>()
  for (const pass of input.recipe.passes) {
    if (input.invalidPasses.has(pass.name)) continue
    let p: PassOnSamples
    try {
      p = passOnSamples(pass, tables)
    } catch (err) {
      if (!(err instanceof CompileError || err instanceof PredicateError)) throw err
      out.push({
        pass: pass.name,
        code: 'not_judged',
        message: `pass "${pass.name}" cannot be evaluated on the samples alone (${err.message}): it was not judged`,
      })
      continue
    }
    const missing = [
      ...[...p.reads.l].filter((c) => absent.l.has(c)).map((c) => `l.${c}`),
      ...[...p.reads.r].filter((c) => absent.r.has(c)).map((c) => `r.${c}`),
    ]
    if (missing.length)
      out.push({
        pass: pass.name,
        code: 'not_judged',
        message: `the samples have no ${missing.join(', ')}: pass "${pass.name}" was not judged on them`,
      })
    else judged.set(pass.name, p)
  }
  return judged
}

function unreadableWarning(values: UnreadableValue[]): RecipeWarning {
  const shown = values
    .slice(0, 3)
    .map((v) => `${v.side} row ${v.row} ${v.column} ${JSON.stringify(v.value)} is not a ${v.type}`)
  return {
    pass: null,
    code: 'invalid_sample',
    message: `${plural(values.length, 'sample value')} do${values.length === 1 ? 'es' : ''} not fit the schema and ${values.length === 1 ? 'was' : 'were'} read as NULL: ${shown.join('; ')}${values.length > 3 ? '; …' : ''}`,
  }
}

/** Both sources have amounts, and no pass compares them: pairs of any amounts would match. */
function noAmountCheck(recipe: Recipe, schemas: WarningInput['schemas']): RecipeWarning | undefined {
  const amount = (cols: ColumnT[]) => cols.some((c) => c.type === 'decimal')
  if (!amount(schemas.left) || !amount(schemas.right)) return undefined
  const types = (side: 'l' | 'r', c: string) =>
    (side === 'l' ? schemas.left : schemas.right).find((x) => x.name === c)?.type
  const comparesAmounts = (pass: RecipePass) => {
    if (pass.aggregate) return true
    if (pass.compare?.some((c) => c.relative || c.absolute)) return true
    return [pass.when, ...(pass.block ?? [])].some((text) => {
      if (text === undefined) return false
      try {
        return planPass(parsePredicate(text), text, types).amount !== undefined
      } catch {
        return false
      }
    })
  }
  if (recipe.passes.some(comparesAmounts)) return undefined
  return {
    pass: null,
    code: 'no_amount_check',
    message:
      'both sources have amounts, but no pass compares them: records with different amounts would match; add an amount condition (ABS(l.amount - r.amount) <= 0.01) or a group sum',
  }
}
