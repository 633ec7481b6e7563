// Precision and recall of a run on bench/gen-unkeyed.ts's files, against their truth.csv:
//   node --import tsx bench/score-unkeyed.ts --truth DIR/truth.csv --matches OUT/matches.csv
// `matches.csv` is what `concord reconcile --out OUT` writes (left_keys and right_keys are lists
// joined with ";"). A clean match of one sent and one received transfer is a predicted pair; an
// ambiguous match (a tie held for review) predicts nothing and is counted on its own line.

import { readFileSync } from 'node:fs'

export interface UnkeyedScore {
  truePairs: number
  predicted: number
  correct: number
  precision: number
  recall: number
  /** Ambiguous matches, and the true pairs inside them (neither predicted nor lost). */
  ambiguous: number
  ambiguousHoldingTruth: number
}

/** Rows of a CSV without quoted commas in the columns read here (ids and flags). */
function rows(text: string): Record<string, string>[] {
  const lines = text.trimEnd().split('\n')
  const header = lines[0].split(',')
  return lines.slice(1).map((line) => {
    const cells = line.split(',')
    return Object.fromEntries(header.map((h, k) => [h, cells[k] ?? '']))
  })
}

export function scoreUnkeyed(truthCsv: string, matchesCsv: string): UnkeyedScore {
  const truth = new Map<string, string>()
  for (const r of rows(truthCsv)) truth.set(r.sent_id, r.received_id)
  let predicted = 0
  let correct = 0
  let ambiguous = 0
  let ambiguousHoldingTruth = 0
  for (const m of rows(matchesCsv)) {
    const left = m.left_keys.split(';')
    const right = m.right_keys.split(';')
    if (m.ambiguous === 'true') {
      ambiguous++
      ambiguousHoldingTruth += left.filter((l) => right.includes(truth.get(l) ?? '')).length
      continue
    }
    if (left.length !== 1 || right.length !== 1) continue
    predicted++
    if (truth.get(left[0]) === right[0]) correct++
  }
  const round = (x: number) => Math.round(x * 10_000) / 10_000
  return {
    truePairs: truth.size,
    predicted,
    correct,
    precision: predicted ? round(correct / predicted) : 0,
    recall: truth.size ? round(correct / truth.size) : 0,
    ambiguous,
    ambiguousHoldingTruth,
  }
}

function arg(name: string): string {
  const i = process.argv.indexOf(`--${name}`)
  if (i < 0 || !process.argv[i + 1]) throw new Error(`--${name} is required`)
  return process.argv[i + 1]
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const s = scoreUnkeyed(readFileSync(arg('truth'), 'utf8'), readFileSync(arg('matches'), 'utf8'))
  console.log(
    `precision ${s.precision} (${s.correct} of ${s.predicted} predicted pairs), recall ${s.recall} (of ${s.truePairs} true pairs); ` +
      `${s.ambiguous} ambiguous matches holding ${s.ambiguousHoldingTruth} true pairs`,
  )
}
