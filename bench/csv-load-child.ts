// One measured load in a fresh process (see csv-load.ts). Prints { ms, rss (KiB), rows }.

import { createReadStream } from 'node:fs'
import { parse } from 'csv-parse'
import { loadCsv } from '../src/engine/load/csv/index.js'

const [engine, file] = process.argv.slice(2)
const t0 = performance.now()
let rows = 0
if (engine === 'concord') {
  const { table } = await loadCsv(file)
  rows = table.length
} else if (engine === 'csv-parse') {
  for await (const _ of createReadStream(file).pipe(parse({ from_line: 2 }))) rows++
} else {
  const { DuckDBInstance } = await import('@duckdb/node-api')
  const db = await DuckDBInstance.create(':memory:', { threads: '2' })
  const conn = await db.connect()
  await conn.run(`CREATE TABLE t AS SELECT * FROM read_csv('${file.replace(/'/g, "''")}')`)
  const r = await conn.runAndReadAll('SELECT count(*)::INTEGER AS n FROM t')
  rows = Number(r.getRows()[0][0])
}
const ms = performance.now() - t0
console.log(JSON.stringify({ ms, rss: process.resourceUsage().maxRSS, rows }))
