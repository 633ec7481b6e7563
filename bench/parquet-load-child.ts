// One measured Parquet load in a fresh process (see parquet-load.ts). Prints { ms, rss (KiB), rows }.
//   engine: concord | duckdb; scope: all | month (txn_date in one month of the year)

import { parquetConnector } from '../connectors/parquet.js'
import type { FilterCondition } from '../src/engine/data/types.js'
import { EngineContext } from '../src/sources/connector.js'

const [engine, file, scope] = process.argv.slice(2) as [string, string, string]
const month: FilterCondition[] = [{ column: 'txn_date', op: 'between', value: ['2024-06-01', '2024-06-30'] }]
const t0 = performance.now()
let rows = 0
let groups = ''
if (engine === 'concord') {
  const connector = parquetConnector('/')
  const source = { alias: 'bank', type: 'parquet', config: { path: file } }
  const scoped = await connector.registerScoped(new EngineContext(), 'bank', source, scope === 'month' ? month : [])
  rows = scoped.table.length
  groups = /row groups read: [^)]*/.exec(scoped.nativeQuery.description ?? '')?.[0] ?? ''
} else {
  const { DuckDBInstance } = await import('@duckdb/node-api')
  const db = await DuckDBInstance.create(':memory:', { threads: '2' })
  const conn = await db.connect()
  const where = scope === 'month' ? "WHERE txn_date BETWEEN DATE '2024-06-01' AND DATE '2024-06-30'" : ''
  await conn.run(`CREATE TABLE t AS SELECT * FROM read_parquet('${file.replace(/'/g, "''")}') ${where}`)
  const r = await conn.runAndReadAll('SELECT count(*)::INTEGER AS n FROM t')
  rows = Number(r.getRows()[0][0])
}
const ms = performance.now() - t0
console.log(JSON.stringify({ ms, rss: process.resourceUsage().maxRSS, rows, groups }))
