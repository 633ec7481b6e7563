// Small unkeyed test data: transfers sent and received by the same payers, with no shared key.
// The payer's name sits in both memos (abbreviated, reordered or misspelt on the receiving side),
// amounts arrive whole or less a fee, bookings 0–5 days later; some records on each side have no
// partner. Seeded: the same rows on every run.

import { prng } from '../../bench/gen-data.js'
import type { Row } from './engine.js'

const FIRST = ['ANNA', 'BORIS', 'CARLA', 'DMITRI', 'ELENA', 'FARID', 'GRETA', 'HUGO', 'INES', 'JONAS']
const LAST = [
  'KOWALSKI',
  'LINDQVIST',
  'MORETTI',
  'NAKAMURA',
  'OKONKWO',
  'PETROVA',
  'QUINTERO',
  'ROSSETTI',
  'SANTOS',
  'TANAKA',
  'UDEH',
  'VARGAS',
  'WEBER',
  'XAVIER',
  'YILMAZ',
  'ZIELINSKI',
]
const FILLER = ['REF', 'SALARY', 'RENT', 'INVOICE', 'GIFT']

export interface Unkeyed {
  sent: Row[]
  received: Row[]
  /** "sent_id|received_id" of every true pair. */
  truth: Set<string>
}

const day = (d: number) => new Date(Date.UTC(2025, 0, 1) + d * 86_400_000).toISOString().slice(0, 10)
const money = (cents: number) => (cents / 100).toFixed(2)

export function unkeyedTransfers(pairs: number, singles: number, seed = 7): Unkeyed {
  const rand = prng(seed)
  const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)]
  const sent: Row[] = []
  const received: Row[] = []
  const truth = new Set<string>()
  const variant = (first: string, last: string) => {
    const r = rand()
    if (r < 0.3) return `${first[0]} ${last}`
    if (r < 0.5) return `${last} ${first}`
    if (r < 0.7) return `${first} ${last.slice(0, 2)}${last[3]}${last[2]}${last.slice(4)}` // a swapped letter
    return `${first.toLowerCase()} ${last.toLowerCase()}`
  }
  for (let n = 0; n < pairs + singles; n++) {
    const first = pick(FIRST)
    const last = pick(LAST)
    const cents = 1_000 + Math.floor(rand() * 500_000)
    const d = Math.floor(rand() * 300)
    const s = `S${String(n + 1).padStart(4, '0')}`
    sent.push({ sent_id: s, sent_date: day(d), amount: money(cents), memo: `${first} ${last} ${pick(FILLER)}` })
    if (n >= pairs) continue
    const fee = rand() < 0.5 ? 0 : Math.round(cents * (0.005 + rand() * 0.02))
    const r = `R${String(n + 1).padStart(4, '0')}`
    received.push({
      received_id: r,
      booking_date: day(d + Math.floor(rand() * 6)),
      amount: money(cents - fee),
      memo: `FROM ${variant(first, last)}`,
    })
    truth.add(`${s}|${r}`)
  }
  for (let n = 0; n < singles; n++) {
    received.push({
      received_id: `X${String(n + 1).padStart(4, '0')}`,
      booking_date: day(Math.floor(rand() * 300)),
      amount: money(1_000 + Math.floor(rand() * 500_000)),
      memo: `FROM ${pick(FIRST)} ${pick(LAST)}`,
    })
  }
  // the receiving bank lists its credits in its own order
  received.sort(
    (a, b) =>
      String(a.booking_date).localeCompare(String(b.booking_date)) ||
      String(a.received_id).localeCompare(String(b.received_id)),
  )
  return { sent, received, truth }
}
