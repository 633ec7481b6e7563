// One measured reconciliation in a fresh process (see recon.ts): load both CSV files, run the
// recipe, hold the three result sets in memory. Prints { ms, rss (KiB), counts, digests }; the
// digests (md5 of the sorted matched pairs and unmatched keys) are computed after the clock stops.

import { createHash } from 'node:crypto'
import { loadCsv } from '../src/engine/load/csv/index.js'
import { recordKeyReader } from '../src/engine/explain/evidence.js'
import { reconcile } from '../src/engine/reconcile.js'
import type { Recipe } from '../src/recipes/schema.js'

const [engine, left, right, withSplit] = process.argv.slice(2)
const WHEN =
  "l.reference = r.ref AND ABS(l.amount - r.total_amount) <= 0.01 AND r.invoice_date BETWEEN l.txn_date - INTERVAL '3 days' AND l.txn_date"

const md5 = (lines: string[]) => createHash('md5').update(lines.sort().join('\n')).digest('hex')

interface Out {
  ms: number
  rss: number
  matched: number
  unmatchedLeft: number
  unmatchedRight: number
  digests: { matched: string; left: string; right: string }
  split?: { matches: number; ms: number }
  phases?: Record<string, number>
}

async function concord(): Promise<Out> {
  const recipe: Recipe = {
    name: 'bench',
    left: { source: 'bank', key: ['txn_id'] },
    right: { source: 'invoices', key: ['invoice_id'] },
    passes: [{ name: 'match', pattern: '1:1', when: WHEN }],
  }
  if (withSplit === 'split')
    recipe.passes.push({
      name: 'split',
      pattern: '1:N',
      when: "l.reference = r.ref AND r.invoice_date BETWEEN l.txn_date - INTERVAL '10 days' AND l.txn_date",
      aggregate: { sum: 'r.total_amount', equals: 'l.amount', tolerance: 0.01, max_group: 3 },
    })
  const t0 = performance.now()
  const [l, r] = await Promise.all([loadCsv(left), loadCsv(right)])
  const t1 = performance.now()
  const result = reconcile(recipe, l.table, r.table)
  const ms = performance.now() - t0
  const rss = process.resourceUsage().maxRSS
  const lk = recordKeyReader(l.table, ['txn_id'])
  const rk = recordKeyReader(r.table, ['invoice_id'])
  const m = result.matches
  const pairs: string[] = []
  for (let k = 0; k < m.count; k++) {
    if (m.pass[k] !== 0) continue
    pairs.push(`${lk(m.leftRows[m.leftStart[k]])}|${rk(m.rightRows[m.rightStart[k]])}`)
  }
  const splitReport = result.summary.passes[1]
  // the 1:1 pass's unmatched sets are what DuckDB computes: add back what the split pass took
  const leftKeys = [...result.unmatchedLeft.rows].map(lk)
  const rightKeys = [...result.unmatchedRight.rows].map(rk)
  for (let k = 0; k < m.count; k++) {
    if (m.pass[k] !== 1) continue
    for (let n = m.leftStart[k]; n < m.leftStart[k + 1]; n++) leftKeys.push(lk(m.leftRows[n]))
    for (let n = m.rightStart[k]; n < m.rightStart[k + 1]; n++) rightKeys.push(rk(m.rightRows[n]))
  }
  return {
    ms,
    rss,
    matched: pairs.length,
    unmatchedLeft: leftKeys.length,
    unmatchedRight: rightKeys.length,
    digests: { matched: md5(pairs), left: md5(leftKeys), right: md5(rightKeys) },
    split: splitReport ? { matches: splitReport.matches, ms: splitReport.ms } : undefined,
    phases: {
      load: t1 - t0,
      ...result.summary.timings,
      // matches put in order and the summary's sums, after the timings the summary can report
      assemble: ms - (t1 - t0) - result.summary.timings.total_ms,
      passes: result.summary.passes[0].ms,
    },
  }
}

async function duckdb(): Promise<Out> {
  const { DuckDBInstance } = await import('@duckdb/node-api')
  const t0 = performance.now()
  const db = await DuckDBInstance.create(':memory:', { threads: '2' })
  const conn = await db.connect()
  const q = (s: string) => `'${s.replace(/'/g, "''")}'`
  await conn.run(`CREATE TABLE l AS SELECT * FROM read_csv(${q(left)}, types={'amount': 'DECIMAL(18,2)'})`)
  await conn.run(`CREATE TABLE r AS SELECT * FROM read_csv(${q(right)}, types={'total_amount': 'DECIMAL(18,2)'})`)
  await conn.run(`CREATE TABLE matched AS SELECT l.txn_id, r.invoice_id FROM l JOIN r ON l.reference = r.ref
      AND r.total_amount BETWEEN l.amount - 0.01 AND l.amount + 0.01
      AND r.invoice_date BETWEEN l.txn_date - INTERVAL 3 DAY AND l.txn_date`)
  await conn.run('CREATE TABLE unmatched_l AS SELECT * FROM l ANTI JOIN matched m USING (txn_id)')
  await conn.run('CREATE TABLE unmatched_r AS SELECT * FROM r ANTI JOIN matched m USING (invoice_id)')
  const ms = performance.now() - t0
  const rss = process.resourceUsage().maxRSS
  const rows = async (sql: string) => (await conn.runAndReadAll(sql)).getRows().map((r: unknown[]) => String(r[0]))
  const pairs = await rows("SELECT txn_id || '|' || invoice_id FROM matched")
  const leftKeys = await rows('SELECT txn_id FROM unmatched_l')
  const rightKeys = await rows('SELECT invoice_id FROM unmatched_r')
  return {
    ms,
    rss,
    matched: pairs.length,
    unmatchedLeft: leftKeys.length,
    unmatchedRight: rightKeys.length,
    digests: { matched: md5(pairs), left: md5(leftKeys), right: md5(rightKeys) },
  }
}

const out = engine === 'duckdb' ? await duckdb() : await concord()
console.log(JSON.stringify(out))
