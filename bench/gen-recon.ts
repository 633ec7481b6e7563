// Seeded reconciliation workload for the engine benchmark: left = bank transactions, right =
// invoices. Per left row: 75% one invoice that matches (same reference, amount ±0.01, dated 0–3
// days before), 5% a split into 2–3 invoices summing to the amount, 10% nothing (left-only), 10% a
// near miss (same reference, but the amount off by 0.02–5.00 or the date 4–10 days off).
//   node --import tsx bench/gen-recon.ts --rows 1000000   (writes bench/data/recon-<rows>-{left,right}.csv)

import { createWriteStream } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { dirname } from 'node:path'
import { isoDay, money, prng } from './gen-data.js'

export interface ReconFiles {
  left: string
  right: string
}

export function reconFiles(rows: number): ReconFiles {
  return { left: `bench/data/recon-${rows}-left.csv`, right: `bench/data/recon-${rows}-right.csv` }
}

class Writer {
  private chunk = ''
  private readonly out
  constructor(path: string, header: string) {
    this.out = createWriteStream(path)
    this.chunk = `${header}\n`
  }
  async line(s: string): Promise<void> {
    this.chunk += `${s}\n`
    if (this.chunk.length > 1 << 20) {
      if (!this.out.write(this.chunk)) await new Promise<void>((r) => this.out.once('drain', () => r()))
      this.chunk = ''
    }
  }
  async close(): Promise<void> {
    this.out.end(this.chunk)
    await new Promise<void>((r) => this.out.once('finish', () => r()))
  }
}

export async function writeRecon(rows: number, seed = 7): Promise<ReconFiles> {
  const files = reconFiles(rows)
  await mkdir(dirname(files.left), { recursive: true })
  const rand = prng(seed)
  const int = (n: number) => Math.floor(rand() * n)
  const left = new Writer(files.left, 'txn_id,account,amount,txn_date,reference')
  // right rows are collected, then written in a seeded shuffled order
  const right: string[] = []
  for (let i = 1; i <= rows; i++) {
    const id = String(i).padStart(9, '0')
    const account = `ACC-${String(int(20_000)).padStart(5, '0')}`
    const cents = 1000 + int(2_000_000)
    const day = 10 + int(700)
    const ref = `REF-${id}`
    await left.line(`T${id},${account},${money(cents)},${isoDay(day)},${ref}`)
    const u = rand()
    if (u < 0.75) {
      right.push(`I${id},${account},${money(cents + int(3) - 1)},${isoDay(day - int(4))},${ref}`)
    } else if (u < 0.8) {
      const parts = 2 + int(2)
      let rest = cents
      for (let p = 1; p <= parts; p++) {
        const share = p === parts ? rest : Math.floor(cents / parts) + int(100) - 50
        rest -= share
        right.push(`I${id}-${p},${account},${money(share)},${isoDay(day - int(11))},${ref}`)
      }
    } else if (u < 0.9) {
      // left-only
    } else if (rand() < 0.5) {
      right.push(
        `I${id},${account},${money(cents + (rand() < 0.5 ? -1 : 1) * (2 + int(499)))},${isoDay(day - int(4))},${ref}`,
      )
    } else {
      right.push(`I${id},${account},${money(cents)},${isoDay(day + (rand() < 0.5 ? 1 + int(7) : -4 - int(7)))},${ref}`)
    }
  }
  await left.close()
  for (let k = right.length - 1; k > 0; k--) {
    const m = int(k + 1)
    const tmp = right[k]
    right[k] = right[m]
    right[m] = tmp
  }
  const out = new Writer(files.right, 'invoice_id,customer,total_amount,invoice_date,ref')
  for (const line of right) await out.line(line)
  await out.close()
  return files
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const i = process.argv.indexOf('--rows')
  const rows = i >= 0 ? Number(process.argv[i + 1]) : 1_000_000
  const files = await writeRecon(rows)
  console.log(`wrote ${files.left} and ${files.right}`)
}
