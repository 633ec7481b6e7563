// Seeded bank-transfer workload with no shared key, for band joins and probabilistic passes:
//   node --import tsx bench/gen-unkeyed.ts --rows N --out DIR [--seed S] [--per-day D]
// writes DIR/sent.csv (sent_id, sent_date, amount, memo), DIR/received.csv (received_id,
// booking_date, amount, memo) and DIR/truth.csv (sent_id, received_id).
//
// What the data holds (bench/README.md, "Unkeyed transfers"):
// - Parties (people and companies) send transfers; a quarter of them pay one amount every month.
// - 90% of sent transfers are received: booked 0–21 days later (mostly within 3), for the same
//   amount (40%), less a percentage fee (0.5–2.5%, 25%), less a fixed charge (20%), or converted
//   (within ±10%, 15%). The rest are singles, and as many received singles (10% of N) come from
//   nowhere, so both files have about N rows.
// - The payer's name is in both memos: as written on the sent side; abbreviated, reordered,
//   truncated, lower-cased or with two letters swapped on the received side, with filler words
//   (bank prefixes, references, purposes) around it.
// - Density is constant: the dates span N / per-day days, so a record has about as many others
//   within a date window or an amount band at 10k as at 1M rows, and sizes are comparable.

import { createWriteStream } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { money, prng } from './gen-data.js'

export interface UnkeyedOptions {
  /** Sent transfers; received has about as many. */
  rows: number
  seed?: number
  /** Sent transfers per day (the date span is rows / perDay days). */
  perDay?: number
}

export interface UnkeyedFiles {
  sent: string
  received: string
  truth: string
  /** Received transfers, and of them the ones with a sent counterpart. */
  receivedRows: number
  pairs: number
}

const FIRST = `JAMES MARY JOHN PATRICIA ROBERT JENNIFER MICHAEL LINDA WILLIAM ELIZABETH DAVID BARBARA RICHARD
SUSAN JOSEPH JESSICA THOMAS SARAH CHARLES KAREN CHRISTOPHER LISA DANIEL NANCY MATTHEW BETTY ANTHONY
MARGARET MARK SANDRA DONALD ASHLEY STEVEN KIMBERLY PAUL EMILY ANDREW DONNA JOSHUA MICHELLE KENNETH
CAROL KEVIN AMANDA BRIAN DOROTHY GEORGE MELISSA TIMOTHY DEBORAH RONALD STEPHANIE EDWARD REBECCA JASON
SHARON JEFFREY LAURA RYAN CYNTHIA JACOB KATHLEEN GARY AMY NICHOLAS ANGELA ERIC SHIRLEY JONATHAN ANNA
STEPHEN BRENDA LARRY PAMELA JUSTIN EMMA SCOTT NICOLE BRANDON HELEN BENJAMIN SAMANTHA SAMUEL KATHERINE
GREGORY CHRISTINE ALEXANDER DEBRA FRANK RACHEL PATRICK CAROLYN RAYMOND JANET JACK CATHERINE DENNIS
MARIA JERRY HEATHER TYLER DIANE AARON RUTH JOSE JULIE ADAM OLIVIA HENRY JOYCE NATHAN VIRGINIA LUCAS
SOFIA MATEO CHLOE HUGO INES LARS FREYA PIOTR ZOFIA ANDREI ELENA KENJI YUKI RAVI PRIYA OMAR LEILA`
  .split(/\s+/)
  .filter(Boolean)

const LAST = `SMITH JOHNSON WILLIAMS BROWN JONES GARCIA MILLER DAVIS RODRIGUEZ MARTINEZ HERNANDEZ LOPEZ
GONZALEZ WILSON ANDERSON THOMAS TAYLOR MOORE JACKSON MARTIN LEE PEREZ THOMPSON WHITE HARRIS SANCHEZ
CLARK RAMIREZ LEWIS ROBINSON WALKER YOUNG ALLEN KING WRIGHT SCOTT TORRES NGUYEN HILL FLORES GREEN
ADAMS NELSON BAKER HALL RIVERA CAMPBELL MITCHELL CARTER ROBERTS GOMEZ PHILLIPS EVANS TURNER DIAZ PARKER
CRUZ EDWARDS COLLINS REYES STEWART MORRIS MORALES MURPHY COOK ROGERS GUTIERREZ ORTIZ MORGAN COOPER
PETERSON BAILEY REED KELLY HOWARD RAMOS KIM COX WARD RICHARDSON WATSON BROOKS CHAVEZ WOOD JAMES BENNETT
GRAY MENDOZA RUIZ HUGHES PRICE ALVAREZ CASTILLO SANDERS PATEL MYERS LONG ROSS FOSTER JIMENEZ POWELL
JENKINS PERRY RUSSELL SULLIVAN BELL COLEMAN BUTLER HENDERSON BARNES GONZALES FISHER VASQUEZ SIMMONS
ROMERO JORDAN PATTERSON ALEXANDER HAMILTON GRAHAM REYNOLDS GRIFFIN WALLACE MORENO WEST COLE HAYES
BRYANT HERRERA GIBSON ELLIS TRAN MEDINA AGUILAR STEVENS MURRAY FORD CASTRO MARSHALL OWENS HARRISON
FERNANDEZ MCDONALD WOODS WASHINGTON KENNEDY WELLS VARGAS HENRY CHEN FREEMAN WEBB TUCKER GUZMAN BURNS
CRAWFORD OLSON SIMPSON PORTER HUNTER GORDON MENDEZ SILVA SHAW SNYDER MASON DIXON MUNOZ HUNT HICKS
HOLMES PALMER WAGNER BLACK ROBERTSON BOYD ROSE STONE SALAZAR FOX WARREN MILLS MEYER RICE SCHMIDT
NOWAK KOWALSKI MULLER SCHNEIDER FISCHER WEBER BECKER JANSSEN DUBOIS LAURENT ROSSI RUSSO FERRARI
BIANCHI SATO TANAKA WATANABE SHARMA SINGH KHAN ALI HASSAN IVANOV PETROV NIELSEN HANSEN LARSEN`
  .split(/\s+/)
  .filter(Boolean)

const STEMS = `NORTHWIND CONTOSO FABRIKAM ADVENTURE LITWARE PROSEWARE WINGTIP TAILSPIN MARGIES LUCERNE
ALPINE COHO WIDE WORLD BLUE YONDER FOURTH COFFEE GRAPHIC DESIGN TRADEWINDS SUMMIT HARBOR PIONEER
MERIDIAN ATLAS BEACON CASCADE EVERGREEN FALCON GRANITE HORIZON KEYSTONE LIBERTY MAPLE NORTHSTAR
OAKRIDGE PINNACLE REDWOOD SILVERLINE STERLING TRIDENT UNITY VANGUARD WESTFIELD ZENITH AURORA BRIGHTON
CROWN DELTA ECHO FRONTIER GOLDEN HIGHLAND IRONWOOD JUNIPER KINGSTON LAKESIDE MIDLAND NOVA ORION
PACIFIC QUANTUM RIVERSIDE SEASIDE TIMBER URBAN VERTEX WILLOW`
  .split(/\s+/)
  .filter(Boolean)
const TRADES = `TRADING HOLDINGS LOGISTICS SUPPLIES CONSULTING SERVICES FOODS MOTORS PROPERTIES MEDIA
SYSTEMS ENERGY PARTNERS RETAIL INDUSTRIES`
  .split(/\s+/)
  .filter(Boolean)
const FORMS = ['LTD', 'GMBH', 'LLC', 'INC', 'SA', 'BV', 'AG', 'PLC', '& CO']
const PURPOSES = `RENT SUBSCRIPTION SERVICES CONSULTING LOAN DEPOSIT REFUND MEMBERSHIP TUITION INSURANCE
SUPPLIES UTILITIES FEES DONATION REPAYMENT SALARY COMMISSION MAINTENANCE LICENCE FREIGHT`
  .split(/\s+/)
  .filter(Boolean)
const NUMBERED = ['INVOICE', 'INV', 'ORDER', 'CONTRACT', 'ACCOUNT', 'POLICY']
const BANK_PREFIXES = [
  'SEPA CREDIT',
  'TRF FROM',
  'FASTER PAYMENT',
  'BGC',
  'CREDIT TRANSFER',
  'INWARD PAYMENT',
  'GIRO',
  'RECEIVED FROM',
]

interface Party {
  name: string
  /** Recurring parties pay this amount every month. */
  monthly: number
  purpose: string
}

interface Transfer {
  day: number
  cents: number
  memo: string
  /** Index of the counterpart on the other side, -1 for a single. */
  other: number
  /** Tie-break for rows of one day, drawn at generation so the order is seeded. */
  tie: number
}

export async function writeUnkeyed(dir: string, opts: UnkeyedOptions): Promise<UnkeyedFiles> {
  const rand = prng(opts.seed ?? 11)
  const int = (n: number) => Math.floor(rand() * n)
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]
  const span = Math.max(31, Math.ceil(opts.rows / (opts.perDay ?? 100)))

  const amount = (): number => {
    // log-uniform from 2.00 to 200,000.00; a fifth are round sums
    const cents = Math.round(Math.exp(Math.log(200) + rand() * Math.log(100_000)))
    if (rand() >= 0.2) return cents
    const unit = cents < 10_000 ? 500 : cents < 100_000 ? 1000 : 10_000
    return Math.max(unit, Math.round(cents / unit) * unit)
  }
  const numbered = () => `${pick(NUMBERED)} ${1000 + int(99_000)}`
  const newParty = (): Party => {
    const name =
      rand() < 0.7
        ? [pick(FIRST), ...(rand() < 0.2 ? [String.fromCharCode(65 + int(26))] : []), pick(LAST)].join(' ')
        : [pick(STEMS), ...(rand() < 0.6 ? [pick(TRADES)] : []), pick(FORMS)].join(' ')
    return { name, monthly: rand() < 0.25 ? amount() : 0, purpose: rand() < 0.5 ? pick(PURPOSES) : numbered() }
  }

  const sent: Transfer[] = []
  const received: Transfer[] = []
  const send = (party: Party, day: number, cents: number) => {
    const purpose = party.monthly ? party.purpose : rand() < 0.5 ? pick(PURPOSES) : numbered()
    const t: Transfer = { day, cents, memo: sentMemo(party.name, purpose), other: -1, tie: rand() }
    sent.push(t)
    if (rand() >= 0.9) return // a single: never received
    const lag = rand() < 0.1 ? int(22) : Math.min(21, Math.floor(-Math.log(1 - rand()) * 2))
    const r: Transfer = {
      day: day + lag,
      cents: receivedAmount(cents),
      memo: receivedMemo(party.name, rand() < 0.5 ? purpose : ''),
      other: sent.length - 1,
      tie: rand(),
    }
    t.other = received.length
    received.push(r)
  }
  const receivedAmount = (cents: number): number => {
    const kind = rand()
    if (kind < 0.4) return cents
    if (kind < 0.65) return cents - Math.round(cents * (0.005 + rand() * 0.02)) // a percentage fee
    if (kind < 0.85)
      return cents - Math.min(pick([25, 50, 150, 200, 250, 500, 750, 1000, 1500]), Math.floor(cents * 0.08))
    return cents + Math.trunc(cents * (rand() * 0.2 - 0.1)) // converted: within ±10%, rounded toward the sent amount
  }
  const sentMemo = (name: string, purpose: string): string => {
    const written = rand() < 0.15 ? titleCase(name) : name
    const form = rand()
    if (form < 0.5) return `${written} ${purpose}`
    if (form < 0.7) return `PAYMENT ${purpose} ${written}`
    if (form < 0.85) return written
    return `${purpose} ${written} ${int(1_000_000)}`
  }
  const receivedMemo = (name: string, purpose: string): string => {
    const parts = [pick(BANK_PREFIXES), nameVariant(name)]
    const tail = rand()
    if (tail < 0.4) parts.push(`REF ${100_000 + int(900_000)}`)
    if (purpose) parts.push(purpose)
    return parts.join(' ')
  }
  const nameVariant = (name: string): string => {
    const words = name.split(' ')
    const kind = rand()
    if (kind < 0.3) return name
    if (kind < 0.45) return [words[0][0], ...words.slice(1)].join(' ') // abbreviated: J SMITH
    if (kind < 0.6) return [...words.slice(1), words[0]].join(' ') // reordered: SMITH JOHN
    if (kind < 0.7) return name.slice(0, Math.min(name.length, 8 + int(7))).trimEnd() // truncated
    if (kind < 0.85) return name.toLowerCase()
    // two adjacent letters swapped in one word long enough to have them
    const long = words.map((w, k) => (w.length >= 4 ? k : -1)).filter((k) => k >= 0)
    if (long.length === 0) return name
    const k = pick(long)
    const w = words[k]
    const at = 1 + int(w.length - 2)
    words[k] = w.slice(0, at) + w[at + 1] + w[at] + w.slice(at + 2)
    return words.join(' ')
  }

  const parties: Party[] = []
  while (sent.length < opts.rows) {
    const party = newParty()
    parties.push(party)
    if (party.monthly) {
      // the same amount every month, on the same day of the month, for 3 to 18 months
      const first = int(span)
      const months = 3 + int(16)
      for (let m = 0; m < months && sent.length < opts.rows; m++) {
        const day = addMonths(first, m)
        if (day >= span) break
        send(party, day, party.monthly)
      }
    } else {
      const count = 1 + int(5)
      for (let k = 0; k < count && sent.length < opts.rows; k++) send(party, int(span), amount())
    }
  }
  // received singles: a transfer from someone, or from nobody the sent file knows
  const singles = Math.round(opts.rows * 0.1)
  for (let k = 0; k < singles; k++) {
    const name = rand() < 0.5 ? pick(parties).name : newParty().name
    received.push({ day: int(span + 21), cents: amount(), memo: receivedMemo(name, ''), other: -1, tie: rand() })
  }

  await mkdir(dir, { recursive: true })
  const sentOrder = byDay(sent)
  const receivedOrder = byDay(received)
  const sentId = idsOf(sentOrder, 'S')
  const receivedId = idsOf(receivedOrder, 'R')
  const files = {
    sent: join(dir, 'sent.csv'),
    received: join(dir, 'received.csv'),
    truth: join(dir, 'truth.csv'),
  }
  await writeLines(files.sent, 'sent_id,sent_date,amount,memo', sentOrder, (k) => {
    const t = sent[k]
    return `${sentId[k]},${isoDate(t.day)},${money(t.cents)},${t.memo}`
  })
  await writeLines(files.received, 'received_id,booking_date,amount,memo', receivedOrder, (k) => {
    const t = received[k]
    return `${receivedId[k]},${isoDate(t.day)},${money(t.cents)},${t.memo}`
  })
  const paired = sentOrder.filter((k) => sent[k].other >= 0)
  await writeLines(files.truth, 'sent_id,received_id', paired, (k) => `${sentId[k]},${receivedId[sent[k].other]}`)
  return { ...files, receivedRows: received.length, pairs: paired.length }
}

const BASE = Date.UTC(2015, 0, 1)
const DAY_MS = 86_400_000
const isoDate = (day: number) => new Date(BASE + day * DAY_MS).toISOString().slice(0, 10)

/** The same day of the month `m` months after `day` (clamped to the month's end). */
function addMonths(day: number, m: number): number {
  const d = new Date(BASE + day * DAY_MS)
  const y = d.getUTCFullYear()
  const month = d.getUTCMonth() + m
  const last = new Date(Date.UTC(y, month + 1, 0)).getUTCDate()
  return (Date.UTC(y, month, Math.min(d.getUTCDate(), last)) - BASE) / DAY_MS
}

function titleCase(name: string): string {
  return name
    .split(' ')
    .map((w) => w[0] + w.slice(1).toLowerCase())
    .join(' ')
}

/** Indexes of `rows` by day, ties in their seeded random order. */
function byDay(rows: Transfer[]): number[] {
  return rows.map((_, k) => k).sort((a, b) => rows[a].day - rows[b].day || rows[a].tie - rows[b].tie)
}

function idsOf(order: number[], prefix: string): string[] {
  const width = String(order.length).length
  const ids = new Array<string>(order.length)
  order.forEach((k, n) => {
    ids[k] = `${prefix}${String(n + 1).padStart(width, '0')}`
  })
  return ids
}

async function writeLines(path: string, header: string, order: number[], line: (k: number) => string): Promise<void> {
  const out = createWriteStream(path)
  let chunk = `${header}\n`
  for (const k of order) {
    chunk += `${line(k)}\n`
    if (chunk.length > 1 << 20) {
      if (!out.write(chunk)) await new Promise<void>((r) => out.once('drain', () => r()))
      chunk = ''
    }
  }
  out.end(chunk)
  await new Promise<void>((r) => out.once('finish', () => r()))
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? process.argv[i + 1] : undefined
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = Number(arg('rows') ?? '45000')
  const out = arg('out') ?? `bench/data/unkeyed-${rows}`
  const perDay = arg('per-day')
  if (!Number.isInteger(rows) || rows < 1) throw new Error('--rows takes a positive integer')
  const files = await writeUnkeyed(out, {
    rows,
    seed: Number(arg('seed') ?? '11'),
    ...(perDay ? { perDay: Number(perDay) } : {}),
  })
  console.log(
    `wrote ${rows} sent, ${files.receivedRows} received (${files.pairs} true pairs) to ${out}/{sent,received,truth}.csv`,
  )
}
