// The SQL baseline of bench/link.ts, as a DuckDB script in its own process: load both files typed,
// band join (amount within 10%, booked 0–21 days after sending), score each candidate by the
// Jaro–Winkler similarity of the upper-cased memos, keep the pairs that are each other's best,
// and write the three result sets as CSV — what `concord reconcile --out` writes.
//   node --import tsx bench/link-duckdb.ts SENT.csv RECEIVED.csv OUT_DIR

import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'

const [sent, received, out] = process.argv.slice(2)
mkdirSync(out, { recursive: true })
const q = (s: string) => `'${s.replace(/'/g, "''")}'`
const db = await DuckDBInstance.create(':memory:', { threads: '2' })
const conn = await db.connect()
await conn.run(
  `CREATE TABLE l AS SELECT * FROM read_csv(${q(sent)}, types={'amount': 'DECIMAL(18,2)', 'sent_date': 'DATE'})`,
)
await conn.run(
  `CREATE TABLE r AS SELECT * FROM read_csv(${q(received)}, types={'amount': 'DECIMAL(18,2)', 'booking_date': 'DATE'})`,
)
await conn.run(`CREATE TABLE candidates AS
  SELECT l.sent_id, r.received_id, jaro_winkler_similarity(upper(l.memo), upper(r.memo)) AS score
  FROM l JOIN r ON r.amount BETWEEN l.amount * 0.9 AND l.amount * 1.1
    AND r.booking_date BETWEEN l.sent_date AND l.sent_date + 21`)
await conn.run(`CREATE TABLE matched AS
  SELECT sent_id, received_id, score FROM (
    SELECT *, row_number() OVER (PARTITION BY sent_id ORDER BY score DESC, received_id) AS by_left,
              row_number() OVER (PARTITION BY received_id ORDER BY score DESC, sent_id) AS by_right
    FROM candidates) WHERE by_left = 1 AND by_right = 1`)
await conn.run(
  `COPY (SELECT sent_id AS left_keys, received_id AS right_keys, score FROM matched ORDER BY sent_id) TO ${q(join(out, 'matches.csv'))} (HEADER)`,
)
await conn.run(
  `COPY (SELECT * FROM l ANTI JOIN matched m USING (sent_id)) TO ${q(join(out, 'unmatched-left.csv'))} (HEADER)`,
)
await conn.run(
  `COPY (SELECT * FROM r ANTI JOIN matched m USING (received_id)) TO ${q(join(out, 'unmatched-right.csv'))} (HEADER)`,
)
conn.closeSync()
db.closeSync()
