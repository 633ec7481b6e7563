// The reference for bench/command.ts, as a DuckDB script in its own process: load both files of the
// keyed workload (bench/gen-recon.ts) typed, join them with the recipe's predicate (reference equal,
// amount within 0.01, invoice dated 0–3 days before the transaction), keep each record's first
// partner, and write what `concord reconcile --out` writes as CSV: the matches (keys, amount and
// date deltas) and both unmatched sets with all their columns.
//   node --import tsx bench/recon-duckdb.ts LEFT.csv RIGHT.csv OUT_DIR

import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'

const [left, right, out] = process.argv.slice(2)
mkdirSync(out, { recursive: true })
const q = (s: string) => `'${s.replace(/'/g, "''")}'`
const db = await DuckDBInstance.create(':memory:', { threads: '2' })
const conn = await db.connect()
await conn.run(`CREATE TABLE l AS SELECT * FROM read_csv(${q(left)}, types={'amount': 'DECIMAL(18,2)'})`)
await conn.run(`CREATE TABLE r AS SELECT * FROM read_csv(${q(right)}, types={'total_amount': 'DECIMAL(18,2)'})`)
await conn.run(`CREATE TABLE matched AS
  SELECT l.txn_id, r.invoice_id, r.total_amount - l.amount AS amount_delta, r.invoice_date - l.txn_date AS days_delta
  FROM l JOIN r ON l.reference = r.ref
    AND r.total_amount BETWEEN l.amount - 0.01 AND l.amount + 0.01
    AND r.invoice_date BETWEEN l.txn_date - INTERVAL 3 DAY AND l.txn_date`)
await conn.run(
  `COPY (SELECT row_number() OVER () AS match_no, * FROM matched) TO ${q(join(out, 'matches.csv'))} (HEADER)`,
)
await conn.run(
  `COPY (SELECT * FROM l ANTI JOIN matched m USING (txn_id)) TO ${q(join(out, 'unmatched-left.csv'))} (HEADER)`,
)
await conn.run(
  `COPY (SELECT * FROM r ANTI JOIN matched m USING (invoice_id)) TO ${q(join(out, 'unmatched-right.csv'))} (HEADER)`,
)
conn.closeSync()
db.closeSync()
