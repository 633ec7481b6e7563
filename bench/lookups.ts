// Lookup tables: what lookup() costs inside a pass. Sales and payouts are generated (every payout
// the net of its sale after its brand's fee); a 1:1 pass keys on the net computed with the fee
// read from a fee schedule (`lookup('fees', 'rate', l.brand)`, through the index once per row),
// next to the same pass with the fee written as constants, on sales of one brand, and the lookup
// pass again on sales of three brands.
//   npm run bench:lookups [-- --rows 1000000]

import { lookupBuilds } from '../src/engine/data/lookup.js'
import { loadCsv } from '../src/engine/load/csv/index.js'
import { reconcile } from '../src/engine/reconcile.js'
import type { Recipe } from '../src/recipes/schema.js'
import type { Table } from '../src/engine/data/table.js'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const arg = process.argv.indexOf('--rows')
const rows = arg >= 0 ? Number(process.argv[arg + 1]) : 1_000_000

const brands = [
  { brand: 'VISA', rate: 29, fixed: 30 }, // rate in thousandths, fixed in cents
  { brand: 'AMEX', rate: 35, fixed: 25 },
  { brand: 'MC', rate: 14, fixed: 10 },
]
const dir = await mkdtemp(join(tmpdir(), 'bench-lookups-'))
/** Sales of the given brands in turn, each with its payout; amounts distinct, every fee whole cents. */
async function workload(name: string, of: typeof brands) {
  const sales = ['sale_id,brand,amount']
  const payouts = ['payout_id,net']
  for (let k = 0; k < rows; k++) {
    const b = of[k % of.length]
    const cents = 1000 * (1 + k)
    const net = cents - (cents * b.rate) / 1000 - b.fixed
    sales.push(`S${k},${b.brand},${(cents / 100).toFixed(2)}`)
    payouts.push(`P${k},${(net / 100).toFixed(2)}`)
  }
  await writeFile(join(dir, `${name}-sales.csv`), `${sales.join('\n')}\n`)
  await writeFile(join(dir, `${name}-payouts.csv`), `${payouts.join('\n')}\n`)
  const [l, r] = await Promise.all([loadCsv(join(dir, `${name}-sales.csv`)), loadCsv(join(dir, `${name}-payouts.csv`))])
  return { l: l.table, r: r.table }
}
const mixed = await workload('mixed', brands)
const visa = await workload('visa', [brands[0]])
await writeFile(
  join(dir, 'fees.csv'),
  `brand,rate,fixed\n${brands.map((b) => `${b.brand},${(b.rate / 1000).toFixed(3)},${(b.fixed / 100).toFixed(2)}`).join('\n')}\n`,
)
const fees = await loadCsv(join(dir, 'fees.csv'))
await rm(dir, { recursive: true, force: true })

const recipeOf = (when: string, lookups?: Recipe['lookups']): Recipe => ({
  name: 'bench-lookups',
  left: { source: 'sales', key: ['sale_id'] },
  right: { source: 'payouts', key: ['payout_id'] },
  ...(lookups ? { lookups } : {}),
  passes: [{ name: 'net', pattern: '1:1', when }],
})
const byLookup = recipeOf(
  "r.net = l.amount - l.amount * lookup('fees', 'rate', l.brand) - lookup('fees', 'fixed', l.brand)",
  { fees: { source: 'fees', key: ['brand'] } },
)
const byConstants = recipeOf('r.net = l.amount - l.amount * 0.029 - 0.30')
const cases: [string, Recipe, { l: Table; r: Table }][] = [
  ['VISA only, fee as constants', byConstants, visa],
  ['VISA only, fee from the schedule (lookup)', byLookup, visa],
  ['three brands, fee from the schedule (lookup)', byLookup, mixed],
]

console.log(`${rows} sales × ${rows} payouts`)
for (let round = 0; round < 2; round++) {
  for (const [what, recipe, data] of cases) {
    const builds = lookupBuilds.count
    const result = reconcile(recipe, data.l, data.r, { lookups: { fees: fees.table } })
    const t = result.summary.timings
    console.log(
      `${what}: ${result.summary.matches} matches, match ${t.match_ms} ms, total ${t.total_ms} ms, indexes built ${lookupBuilds.count - builds}`,
    )
  }
}
