// The summary's amounts are exact for any number and size of amounts: per pass the matched sum
// (from the matches' rows), the side's total, and unmatched = total - matched. Checked against
// BigInt arithmetic on random tables with amounts up to 15 digits (partial sums pass 2^52 and
// spill into a BigInt), NULL amounts, several passes and groups of several records.

import fc from 'fast-check'
import t from 'tap'
import { MatchBuilder } from '../src/engine/explain/evidence.js'
import { formatUnits, sideTotals } from '../src/engine/explain/summary.js'
import type { Table } from '../src/engine/data/table.js'

const caseArb = fc
  .record({
    units: fc.array(
      fc.oneof(
        fc.bigInt({ min: -(10n ** 15n) + 1n, max: 10n ** 15n - 1n }),
        fc.bigInt({ min: -1000n, max: 1000n }),
        fc.constant(null),
      ),
      { minLength: 0, maxLength: 300 },
    ),
    passes: fc.integer({ min: 1, max: 3 }),
    seed: fc.array(fc.nat(1000), { minLength: 300, maxLength: 300 }),
  })
  .map(({ units, passes, seed }) => {
    // matches over distinct rows: groups of 1–3 rows in some pass, or the row left unmatched
    const matches: { pass: number; rows: number[] }[] = []
    for (let row = 0; row < units.length;) {
      const size = 1 + (seed[row] % 3)
      if (seed[row] % 4 !== 0) matches.push({ pass: seed[row] % passes, rows: [] })
      for (let n = 0; n < size && row < units.length; n++, row++) {
        if (seed[row] % 4 !== 0 || n > 0) matches.at(-1)?.rows.push(row)
      }
    }
    return { units, passes, matches: matches.filter((m) => m.rows.length > 0) }
  })

t.test('matched, unmatched and total amounts equal BigInt sums, per side and per pass', async (t) => {
  fc.assert(
    fc.property(caseArb, ({ units, passes, matches }) => {
      const n = units.length
      const values = new Float64Array(n)
      const valid = new Uint8Array(n)
      units.forEach((u, row) => {
        valid[row] = u === null ? 0 : 1
        values[row] = u === null ? 777 : Number(u) // what a NULL slot holds must not count
      })
      const table: Table = {
        columns: [{ name: 'amount', type: 'decimal', nullable: true, scale: 2 }],
        data: [{ type: 'decimal', length: n, valid, values, scale: 2 }],
        length: n,
      }
      const b = new MatchBuilder(n, n)
      for (const m of matches) b.group(m.pass, m.rows, [0], 1, false, 0, 0)
      const set = b.finish(
        Array.from({ length: passes }, (_, p) => p),
        n,
      )
      const got = sideTotals(table, { values, valid, scale: 2 }, set, 'left', passes)

      const byPass = Array.from({ length: passes }, () => 0n)
      const records = Array.from({ length: passes }, () => 0)
      let matched = 0n
      for (const m of matches) {
        records[m.pass] += m.rows.length
        for (const row of m.rows) {
          byPass[m.pass] += units[row] ?? 0n
          matched += units[row] ?? 0n
        }
      }
      const total = units.reduce<bigint>((a, u) => a + (u ?? 0n), 0n)
      const want = {
        rows: n,
        matched: records.reduce((a, r) => a + r, 0),
        amount: formatUnits(total, 2),
        matchedAmount: formatUnits(matched, 2),
        unmatchedAmount: formatUnits(total - matched, 2),
        byPass: records.map((r, p) => ({ records: r, amount: formatUnits(byPass[p], 2) })),
      }
      if (JSON.stringify(got) !== JSON.stringify(want))
        throw new Error(`got ${JSON.stringify(got)}\nwant ${JSON.stringify(want)}`)
    }),
    { numRuns: 300 },
  )
  t.pass('300 generated sides')
})

t.test('a million-record side of 15-digit amounts stays exact', async (t) => {
  const n = 1_000_000
  const values = new Float64Array(n).fill(999_999_999_999_999) // 9,999,999,999,999.99 at scale 2
  const table: Table = {
    columns: [{ name: 'amount', type: 'decimal', nullable: false, scale: 2 }],
    data: [{ type: 'decimal', length: n, valid: null, values, scale: 2 }],
    length: n,
  }
  const b = new MatchBuilder(n, n)
  for (let row = 0; row < n; row += 2) b.pair(0, row, row, 1, false, 0, 0)
  const got = sideTotals(table, { values, valid: null, scale: 2 }, b.finish([0], n), 'left', 1)
  t.equal(got.amount, '9999999999999990000.00')
  t.equal(got.matchedAmount, '4999999999999995000.00')
  t.equal(got.unmatchedAmount, '4999999999999995000.00')
  t.same(got.byPass, [{ records: 500_000, amount: '4999999999999995000.00' }])
})
