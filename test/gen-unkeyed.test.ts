// bench/gen-unkeyed.ts, the unkeyed-transfers workload other benchmarks rely on: seeded and
// deterministic, and its true pairs are what bench/README.md says (booked 0–21 days after
// sending, amounts within 10%, the payer in both memos), at a density that does not change with N.

import { createHash } from 'node:crypto'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { writeUnkeyed } from '../bench/gen-unkeyed.js'

const csv = async (path: string) =>
  (await readFile(path, 'utf8'))
    .trimEnd()
    .split('\n')
    .slice(1)
    .map((line) => line.split(','))
const digest = async (path: string) =>
  createHash('sha256')
    .update(await readFile(path))
    .digest('hex')
const dayOf = (iso: string) => Date.parse(iso) / 86_400_000
const cents = (amount: string) => Math.round(Number(amount) * 100)

t.test('the same seed writes the same files; another seed, others', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'unkeyed-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const a = await writeUnkeyed(join(dir, 'a'), { rows: 2000, seed: 5 })
  const b = await writeUnkeyed(join(dir, 'b'), { rows: 2000, seed: 5 })
  const c = await writeUnkeyed(join(dir, 'c'), { rows: 2000, seed: 6 })
  for (const f of ['sent', 'received', 'truth'] as const) {
    t.equal(await digest(a[f]), await digest(b[f]), `${f}.csv is the same`)
    t.not(await digest(a[f]), await digest(c[f]), `${f}.csv differs with the seed`)
  }
})

t.test('true pairs are booked 0-21 days later, within 10% of the amount, the payer in both memos', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'unkeyed-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const files = await writeUnkeyed(dir, { rows: 5000, seed: 1 })
  const sent = new Map((await csv(files.sent)).map((r) => [r[0], r]))
  const received = new Map((await csv(files.received)).map((r) => [r[0], r]))
  const truth = await csv(files.truth)
  t.equal(sent.size, 5000)
  t.ok(Math.abs(received.size - 5000) < 250, `${received.size} received`)
  t.ok(truth.length > 4300 && truth.length < 4700, `${truth.length} true pairs: about 90% of sent`)
  t.equal(new Set(truth.map((p) => p[1])).size, truth.length, 'a received transfer has one sender')
  const kinds = { equal: 0, lower: 0, higher: 0, sharedWord: 0, lag0to3: 0 }
  for (const [s, r] of truth) {
    const [, sentDate, sentAmount, sentMemo] = sent.get(s)!
    const [, bookingDate, receivedAmount, receivedMemo] = received.get(r)!
    const lag = dayOf(bookingDate) - dayOf(sentDate)
    if (lag < 0 || lag > 21) t.fail(`${s} → ${r}: booked ${lag} days after sending`)
    if (lag <= 3) kinds.lag0to3++
    const a = cents(sentAmount)
    const b = cents(receivedAmount)
    if (Math.abs(a - b) * 10 > Math.abs(a)) t.fail(`${s} → ${r}: ${sentAmount} received as ${receivedAmount}`)
    kinds[a === b ? 'equal' : b < a ? 'lower' : 'higher']++
    // the payer's name: some word (or its first letters) of it appears in both memos
    const words = sentMemo.toUpperCase().split(' ')
    if (words.some((w) => w.length >= 3 && receivedMemo.toUpperCase().includes(w.slice(0, 3)))) kinds.sharedWord++
  }
  const n = truth.length
  t.ok(kinds.equal / n > 0.35 && kinds.equal / n < 0.45, `${kinds.equal} equal amounts: about 40%`)
  t.ok(kinds.lower > kinds.higher * 2, `fees make most others lower (${kinds.lower} lower, ${kinds.higher} higher)`)
  t.ok(kinds.lag0to3 / n > 0.7, `${kinds.lag0to3} booked within 3 days: mostly short`)
  t.ok(kinds.sharedWord / n > 0.95, `${kinds.sharedWord} share a name word`)
})

t.test('the date span grows with N, so the records per day stay the same', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'unkeyed-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const span = async (rows: number) => {
    const files = await writeUnkeyed(join(dir, String(rows)), { rows, seed: 2, perDay: 50 })
    const days = (await csv(files.sent)).map((r) => dayOf(r[1]))
    return Math.max(...days) - Math.min(...days) + 1
  }
  const small = await span(2000)
  const large = await span(8000)
  t.ok(Math.abs(small - 40) <= 2, `2000 rows over ${small} days`)
  t.ok(Math.abs(large - 160) <= 2, `8000 rows over ${large} days`)
})
