// The wizard path as an accuracy report (issue 16), over every choice of confirmed pairs: each
// dataset of test/helpers/wizard.ts (payouts in both orientations) through register → preview →
// detect_field_mappings → infer_rules → build_recipe → validate_recipe → full run, over REST in
// one in-process app with AI_MODE=deterministic, scored against the dataset's truth. Prints a
// markdown table: choice 0 (the first confirmable rows of the previews), the spread over all
// choices, and the recipe choice 0 got; then one line per choice.
//   npm run accuracy:wizard [-- --choices 5] [-- transfers payouts ...]   (dataset names, prefix match)

import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { freshDatabase, testEnv } from '../test/helpers/app.js'
import { datasetsDir, hasDatasets } from '../test/helpers/datasets.js'
import { orientedTruth, passLine, WIZARD_DATASETS, type WizardScore, wizardScore } from '../test/helpers/wizard.js'

const args = process.argv.slice(2)
const at = args.indexOf('--choices')
const choices = at >= 0 ? Number(args[at + 1]) : 5
const names = args.filter((a, i) => !a.startsWith('--') && args[i - 1] !== '--choices')
const datasets = WIZARD_DATASETS.filter((d) => !names.length || names.some((n) => d.name.startsWith(n)))
if (!hasDatasets) {
  console.error(`no datasets at ${datasetsDir}`)
  process.exit(1)
}

const runsDir = await mkdtemp(join(tmpdir(), 'concord-wizard-'))
const database = await freshDatabase()
const app = await buildApp({
  config: loadConfig({ ...testEnv, DATA_DIR: datasetsDir, RUNS_DIR: runsDir, AI_MODE: 'deterministic' }),
  database,
  logger: false,
})
await app.ready()

const f3 = (x: number) => x.toFixed(3)
/** A confirmation in a few characters: its first id per side and how many more. */
const ids = (xs: string[]) => (xs.length > 1 ? `${xs[0]}+${xs.length - 1}` : xs[0])
const confirmation = (c: { left: string[]; right: string[] }) => `${ids(c.left)}→${ids(c.right)}`
const range = (xs: number[]) => `${f3(Math.min(...xs))}–${f3(Math.max(...xs))}`
const table = [
  '| dataset | choice 0 precision / recall | precision min–max | recall min–max | matches | ambiguous | recipe (choice 0) |',
  '|---|---|---|---|---|---|---|',
]
const detail = [
  '| dataset | choice | confirmed (left→right id, +n more in a group) | precision | recall | claimed | wrong | matches | ambiguous | valid | run |',
  '|---|---|---|---|---|---|---|---|---|---|---|',
]
const started = performance.now()
try {
  for (const dataset of datasets) {
    const truth = await orientedTruth(dataset)
    const scores: WizardScore[] = []
    for (let k = 0; k < choices; k++) {
      const s = await wizardScore(app, dataset, k, truth)
      scores.push(s)
      const problems = [...s.partition, ...(s.run.status === 'completed' ? [] : [`run ${s.run.status}`])]
      detail.push(
        `| ${dataset.name} | ${k} | ${s.confirmed.map(confirmation).join(', ')} | ${f3(s.precision)} | ${f3(s.recall)} | ${s.claimed} | ${s.falsePositives} | ${s.matches} | ${s.ambiguous} | ${s.validation.valid}${s.validation.warnings ? ` (warnings: ${JSON.stringify(s.validation.warnings)})` : ''} | ${Math.round(s.ms.run)} ms${problems.length ? ` — ${problems.join('; ')}` : ''} |`,
      )
      console.error(`${dataset.name} choice ${k}: ${f3(s.precision)} / ${f3(s.recall)} (${Math.round(s.ms.total)} ms)`)
    }
    const [first] = scores
    const passes = first.recipe.passes.map(passLine).join(' → ').replaceAll('|', '\\|')
    table.push(
      `| ${dataset.name} | ${f3(first.precision)} / ${f3(first.recall)} | ${range(scores.map((s) => s.precision))} | ${range(scores.map((s) => s.recall))} | ${first.matches} | ${first.ambiguous} | ${passes} |`,
    )
  }
} finally {
  await app.close()
  await database.close()
  await rm(runsDir, { recursive: true, force: true })
}
console.log(table.join('\n'))
console.log()
console.log(detail.join('\n'))
console.log(`\n${choices} choices per dataset, ${Math.round((performance.now() - started) / 1000)} s`)
