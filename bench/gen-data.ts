// Seeded data for the benchmarks: a bank-transactions CSV (id, account, amount with 2 decimals,
// date, reference). `node --import tsx bench/gen-data.ts --rows 1000000 --out bench/data/bank-1m.csv`

import { createWriteStream } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { dirname } from 'node:path'

// the engine's seeded generator: bench data and engine samples draw from one definition
import { prng } from '../src/engine/data/prng.js'

export { prng }

const DAY = 86_400_000
const BASE = Date.UTC(2024, 0, 1)
export const isoDay = (d: number) => new Date(BASE + d * DAY).toISOString().slice(0, 10)
export const money = (cents: number) =>
  `${cents < 0 ? '-' : ''}${Math.floor(Math.abs(cents) / 100)}.${String(Math.abs(cents) % 100).padStart(2, '0')}`

export async function writeBankCsv(path: string, rows: number, seed = 42): Promise<void> {
  await mkdir(dirname(path), { recursive: true })
  const out = createWriteStream(path)
  const rand = prng(seed)
  out.write('txn_id,account,amount,txn_date,reference\n')
  let chunk = ''
  for (let i = 1; i <= rows; i++) {
    const account = `ACC-${String(Math.floor(rand() * 5000)).padStart(5, '0')}`
    const cents = Math.floor(rand() * 5_000_000) + 100
    const day = Math.floor(rand() * 366)
    chunk += `${i},${account},${money(cents)},${isoDay(day)},REF-${String(i).padStart(8, '0')}\n`
    if (chunk.length > 1 << 20) {
      if (!out.write(chunk)) await new Promise<void>((r) => out.once('drain', () => r()))
      chunk = ''
    }
  }
  out.end(chunk)
  await new Promise<void>((r) => out.once('finish', () => r()))
}

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? process.argv[i + 1] : fallback
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = Number(arg('rows', '1000000'))
  const out = arg('out', `bench/data/bank-${rows}.csv`)
  await writeBankCsv(out, rows, Number(arg('seed', '42')))
  console.log(`wrote ${rows} rows to ${out}`)
}
