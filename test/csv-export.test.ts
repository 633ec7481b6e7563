// The CSV encoder (src/runs/csv.ts) against the JSON pages, which read the same result files
// through Arrow's own accessors: every field of every row, parsed back with csv-parse, equals
// the page's value written by the field rules (NULL empty, quotes when a quote, comma, CR, LF or
// edge whitespace, lists joined with ';'). The data is made to be awkward: quotes, commas,
// newlines, edge spaces (also U+00A0), non-ASCII, NULLs, negative decimals at two scales, dates
// from 1901 to 2099, a 1:1 and a 1:N pass, near misses of every kind. And `concord reconcile
// --out` (CSV encoded from the tables in memory) writes the very bytes the service exports from
// the stored files.

import { existsSync } from 'node:fs'
import { cp, mkdir, readdir, readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { Worker } from 'node:worker_threads'
import { tableFromIPC, tableToIPC } from 'apache-arrow'
import { parse } from 'csv-parse/sync'
import t from 'tap'
import { loadConfig } from '../src/config.js'
import { prng } from '../src/engine/data/prng.js'
import { formatDate, formatDecimal } from '../src/engine/data/values.js'
import { loadCsv } from '../src/engine/load/csv/index.js'
import { reconcile } from '../src/engine/reconcile.js'
import type { Recipe } from '../src/recipes/schema.js'
import { type CommandIO, reconcileCommand } from '../src/runs/cli.js'
import { csvBatch, csvHeader } from '../src/runs/csv.js'
import { stringColumn, toArrowTable } from '../src/engine/data/arrow.js'
import { dropMatches, type EarlyInput, setsWriter, startMatches, writeSets } from '../src/runs/write-sets.js'
import { CsvExporter } from '../src/runs/exporter.js'
import { matchesPage, unmatchedPage } from '../src/runs/pages.js'
import { RESULT_SETS } from '../src/runs/results.js'

const testEnv = { LOG_LEVEL: 'silent', AI_MODE: 'deterministic' }

const AWKWARD = ['plain', 'with, comma', 'say "hi"', 'two\nlines', ' leading', 'trailing ', '\u00a0nbsp', 'café ☕', '']

function files(rows: number) {
  const rnd = prng(7)
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]
  const q = (s: string) => (/[",\n\r]/.test(s) || s !== s.trim() ? `"${s.replace(/"/g, '""')}"` : s)
  const left = ['id,ref,amount,booked,memo']
  const right = ['id,ref,total,paid,note']
  let r = 0
  for (let i = 0; i < rows; i++) {
    const units = Math.floor(rnd() * 2_000_000) - 500_000
    const amount = (units / 100).toFixed(2)
    const day = Math.floor(rnd() * 72_000) - 25_000 // 1901 .. 2099
    const date = new Date(day * 86_400_000).toISOString().slice(0, 10)
    const id = `L${i}${i % 17 === 0 ? ',x' : ''}`
    const memo = i % 11 === 0 ? '' : pick(AWKWARD)
    left.push([q(id), `R${i}`, amount, date, q(memo)].join(','))
    const kind = rnd()
    const rid = () => q(`P${r++}${r % 13 === 0 ? ' "q"' : ''}`)
    if (kind < 0.5) right.push([rid(), `R${i}`, (units / 100 + 0.001).toFixed(3), date, q(pick(AWKWARD))].join(','))
    else if (kind < 0.65) {
      const a = Math.floor(units / 3)
      right.push([rid(), `R${i}`, (a / 100).toFixed(3), date, 'part'].join(','))
      right.push([rid(), `R${i}`, ((units - a) / 100).toFixed(3), date, 'part'].join(','))
    } else if (kind < 0.8) right.push([rid(), `R${i}`, (units / 100 + 7).toFixed(3), date, ''].join(','))
    else if (kind < 0.9) right.push([rid(), `R${i % 50}`, amount, date, 'other'].join(','))
  }
  return { 'left.csv': `${left.join('\n')}\n`, 'right.csv': `${right.join('\n')}\n` }
}

const recipe = {
  name: 'awkward',
  left: { source: 'left', key: ['id'] },
  right: { source: 'right', key: ['id'] },
  passes: [
    { name: 'exact', pattern: '1:1', when: 'l.ref = r.ref AND ABS(l.amount - r.total) <= 0.01 AND l.booked = r.paid' },
    {
      name: 'split',
      pattern: '1:N',
      when: "l.ref = r.ref AND r.note = 'part'",
      aggregate: { sum: 'r.total', equals: 'l.amount', tolerance: 0.01, max_group: 3 },
    },
  ],
}

/** A field as the CSV rules write it. */
function field(v: unknown): string {
  if (v === null || v === undefined) return ''
  const s = Array.isArray(v) ? v.join(';') : String(v)
  return /[",\n\r]/.test(s) || s !== s.trim() ? `"${s.replace(/"/g, '""')}"` : s
}

const io = (): CommandIO & { err: () => string } => {
  let err = ''
  return {
    stdout: { write: () => true },
    stderr: { write: (s: string | Uint8Array) => ((err += String(s)), true), isTTY: false },
    err: () => err,
  }
}

// the service's exporter: the CSV is encoded on its worker thread and handed back through a ring
// of shared slots; `small` cuts 4 KiB chunks, so an export takes dozens and reuses each slot many
// times; `moved` has slots too small for any chunk, so each one travels in a buffer of its own
const exporter = new CsvExporter()
const small = new CsvExporter({ chunkBytes: 4096 })
const moved = new CsvExporter({ chunkBytes: 4096, slotBytes: 4096 })
t.teardown(() => Promise.all([exporter, small, moved].map((e) => e.close())))

/**
 * An export written to a destination that holds each chunk until it calls back, as a socket does,
 * and reads its bytes only then: a slot refilled before the callback shows as wrong bytes.
 */
async function exported(dir: string, set: (typeof RESULT_SETS)[number], via = exporter): Promise<string> {
  const chunks: Buffer[] = []
  const out = new Writable({
    write(chunk: Buffer, _encoding, done) {
      setImmediate(() => {
        chunks.push(Buffer.from(chunk))
        done()
      })
    },
  })
  if (!(await (await via.open(dir, set)).pipeTo(out))) throw new Error(`the export of ${set} did not finish`)
  return Buffer.concat(chunks).toString('utf8')
}

t.test('CSV exports equal the pages field by field, and the CLI writes the same bytes', async (t) => {
  const dir = t.testdir({ ...files(3000), 'recipe.json': JSON.stringify(recipe) })
  const config = loadConfig({ DATA_DIR: join(dir, 'data'), ...testEnv })
  const args = [
    '--left',
    join(dir, 'left.csv'),
    '--right',
    join(dir, 'right.csv'),
    '--recipe',
    join(dir, 'recipe.json'),
  ]
  for (const [format, out] of [
    ['arrow', 'stored'],
    ['csv', 'cli'],
  ]) {
    const o = io()
    t.equal(await reconcileCommand([...args, '--out', join(dir, out), '--format', format], config, o), 0, o.err())
  }
  const stored = join(dir, 'stored')

  const matches = await matchesPage(stored, 0, 100_000, { ambiguous: false })
  t.ok(matches.total > 1000, `${matches.total} matches`)
  t.ok(
    matches.items.some((m) => m.left_keys.length + m.right_keys.length > 2),
    'some matches hold several records',
  )
  const matchCsv = await exported(stored, 'matches')
  const parsedMatches = parse(matchCsv, { columns: true }) as Record<string, string>[]
  t.equal(parsedMatches.length, matches.total)
  let mismatches = 0
  matches.items.forEach((m, k) => {
    const row = parsedMatches[k]
    const want = [
      m.match_id,
      m.pass,
      m.pattern,
      m.left_keys,
      m.right_keys,
      m.score,
      m.deltas.amount,
      m.deltas.days,
      m.ambiguous,
    ].map(field)
    const got = ['match_id', 'pass', 'pattern', 'left_keys', 'right_keys', 'score', 'amount_delta', 'days_delta']
      .map((c) => field(row[c]))
      .concat(field(row.ambiguous))
    if (JSON.stringify(got) !== JSON.stringify(want)) mismatches++
  })
  t.equal(mismatches, 0, 'every match row equals its page item')
  // one name and one value for a match's id in the pages, the CSV and the Arrow export (the stored
  // file is what GET /api/runs/:id/export?format=arrow sends)
  const matchArrow = tableFromIPC(await readFile(join(stored, 'matches.arrow')))
  t.same(
    matchArrow.schema.fields.filter((f) => /^match_/.test(f.name)).map((f) => f.name),
    ['match_id'],
  )
  t.same(
    [...matchArrow.getChild('match_id')!].map(String),
    parsedMatches.map((r) => r.match_id),
    'the Arrow export holds the CSV match ids',
  )
  t.match(parsedMatches[0].match_id, /^m\d{7}$/)
  // the raw line, not only the parsed values: each field quoted exactly when it must be
  const lines = matchCsv.split('\n')
  t.equal(
    lines[1],
    [
      matches.items[0].match_id,
      matches.items[0].pass,
      matches.items[0].pattern,
      matches.items[0].left_keys,
      matches.items[0].right_keys,
      matches.items[0].score,
      matches.items[0].deltas.amount,
      matches.items[0].deltas.days,
      matches.items[0].ambiguous,
    ]
      .map(field)
      .join(','),
  )

  for (const side of ['left', 'right'] as const) {
    const page = await unmatchedPage(stored, side, 0, 100_000)
    t.ok(page.total > 100, `${page.total} unmatched ${side}`)
    const csv = await exported(stored, `unmatched-${side}`)
    const header = csv.slice(0, csv.indexOf('\n')).split(',')
    const rows = parse(csv, { columns: false, from_line: 2 }) as string[][]
    t.equal(rows.length, page.total)
    const reasons = new Set<string>()
    let wrong = 0
    page.items.forEach((item, k) => {
      reasons.add(item.reason.replace(/[LP]\d+\S*/g, 'KEY'))
      const want = [
        item.record_key,
        item.closest_candidate,
        item.failed?.pass ?? null,
        item.failed?.conjunct ?? null,
        item.reason,
        item.tied_with,
        ...header.slice(6).map((h) => item.record[h.slice(2)]),
      ].map(field)
      if (JSON.stringify(rows[k].map(field)) !== JSON.stringify(want)) {
        if (wrong++ < 3) t.same(rows[k].map(field), want, `unmatched-${side} row ${k}`)
      }
    })
    t.equal(wrong, 0, `every unmatched ${side} row equals its page item`)
    t.ok(reasons.size >= 3, `several kinds of reason (${[...reasons].join(' | ')})`)
  }

  // `?key=` through the run's key index: the very matches holding the key, on either side
  const all = (await matchesPage(stored, 0, 100_000)).items
  const keys = all
    .filter((_, k) => k % 97 === 0)
    .flatMap((m) => [m.left_keys[0], m.right_keys[m.right_keys.length - 1]])
    .concat('no such key')
  for (const key of keys) {
    const want = all.filter((m) => m.left_keys.includes(key) || m.right_keys.includes(key)).map((m) => m.match_id)
    const got = (await matchesPage(stored, 0, 100, { key })).items.map((m) => m.match_id)
    t.same(got, want, `matches holding ${JSON.stringify(key)}`)
  }
  const unmatched = (await unmatchedPage(stored, 'left', 0, 100_000)).items
  for (const item of unmatched.filter((_, k) => k % 101 === 0)) {
    const got = await unmatchedPage(stored, 'left', 0, 10, { recordKey: item.record_key })
    t.same(
      got.items.map((i) => i.record_key),
      [item.record_key],
      `unmatched ${JSON.stringify(item.record_key)}`,
    )
  }
  const first = (await unmatchedPage(stored, 'right', 0, 100_000)).items
  for (const pass of ['exact', 'split']) {
    const got = await unmatchedPage(stored, 'right', 0, 100_000, { failedPass: pass })
    t.equal(got.total, first.filter((i) => i.failed?.pass === pass).length, `failed_pass=${pass}`)
  }

  // encoded in slices of any size (an export yields every few thousand rows), the bytes are the same
  for (const set of RESULT_SETS) {
    const table = tableFromIPC(await readFile(join(stored, `${set}.arrow`)))
    const parts: Uint8Array[] = [csvHeader(table.schema, set)]
    for (const batch of table.batches)
      for (let at = 0; at < batch.numRows; at += 333)
        parts.push(...csvBatch(table.schema, batch.slice(at, at + 333), set))
    t.equal(Buffer.concat(parts).toString('utf8'), await exported(stored, set), `${set} encoded in slices`)
  }

  for (const set of RESULT_SETS) {
    const cli = await readFile(join(dir, 'cli', `${set}.csv`), 'utf8')
    t.equal(cli, await exported(stored, set), `${set}: the CLI's CSV is the service's export`)
  }

  // concurrent exports share the worker and each gets its own bytes
  const together = await Promise.all(RESULT_SETS.map((set) => exported(stored, set)))
  for (const [k, set] of RESULT_SETS.entries())
    t.equal(together[k], await readFile(join(dir, 'cli', `${set}.csv`), 'utf8'), `${set} exported alongside the others`)

  // in many small chunks through reused slots, slowly read, and in chunks moved one by one
  for (const set of RESULT_SETS) {
    const cli = await readFile(join(dir, 'cli', `${set}.csv`), 'utf8')
    t.equal(await exported(stored, set, small), cli, `${set}: the same bytes in 4 KiB chunks`)
    t.equal(await exported(stored, set, moved), cli, `${set}: the same bytes in chunks too long for a slot`)
  }
  const matchesCsv = await readFile(join(dir, 'cli', 'matches.csv'), 'utf8')
  t.ok(matchesCsv.length > 10 * 4096, `the matches take many small chunks (${matchesCsv.length} bytes)`)

  // a client that goes away after the first chunk: the export ends there and the next one is whole
  const gone = await small.open(stored, 'matches')
  let taken = 0
  const leaving: Writable = new Writable({
    write(chunk: Buffer, _encoding, done) {
      taken += chunk.byteLength
      done()
      leaving.destroy()
    },
  })
  t.equal(await gone.pipeTo(leaving), false, 'the export says it did not finish')
  t.ok(taken > 0 && taken < matchesCsv.length, `the client that left took the first chunk only (${taken} bytes)`)
  t.equal(await exported(stored, 'matches', small), matchesCsv, 'the next export is whole')
  // one that left between the export's opening and its first byte
  const unread = await small.open(stored, 'matches')
  const closed = new Writable({ write: (_chunk, _encoding, done) => done() })
  closed.destroy()
  t.equal(await unread.pipeTo(closed), false, 'nothing is written to a destination already closed')
  t.equal(await exported(stored, 'matches', small), matchesCsv, 'and the next export is whole')

  // a result file the worker cannot read (removed behind the service's back): the stream fails, it
  // does not hang or end short
  const copy = join(dir, 'vanishing')
  await cp(stored, copy, { recursive: true })
  await rm(join(copy, 'unmatched-left.arrow'))
  await t.rejects(exporter.open(copy, 'unmatched-left'), /ENOENT/, 'fails before any byte is sent')
  await t.rejects(exporter.open(join(dir, 'no-such-run'), 'ambiguous'), { code: 'result_set_missing' })
})

t.test('two threads write the same CSV files as one, and a helper that fails costs no output', async (t) => {
  const dir = t.testdir({ ...files(3000) })
  const load = async (file: string) => (await loadCsv(join(dir, file))).table
  const result = reconcile(recipe as Recipe, await load('left.csv'), await load('right.csv'))
  const input = { result, leftKey: recipe.left.key, rightKey: recipe.right.key }
  const outs = { one: join(dir, 'one'), two: join(dir, 'two'), failing: join(dir, 'failing') }
  for (const out of Object.values(outs)) await mkdir(out)
  await writeSets(input, outs.one, 'csv') // 3,000 rows: below the helper's threshold, one thread
  await writeSets(input, outs.two, 'csv', { helperMinRows: 0 })
  let started = 0
  await writeSets(input, outs.failing, 'csv', {
    helperMinRows: 0,
    helper: () => {
      started++
      return new Worker('throw new Error("this helper cannot start")', { eval: true })
    },
  })
  t.equal(started, 1, 'the failing helper was started')
  // a set encoded a few source records at a time (large sets are: SLICE_ROWS) is the same file,
  // on one thread and on two; with every fifth match flagged ambiguous, the two match files still
  // number their rows as the run does
  const ambiguous = Uint8Array.from(result.matches.ambiguous, (a, k) => (k % 5 === 3 ? 1 : a))
  const flagged = { ...input, result: { ...result, matches: { ...result.matches, ambiguous } } }
  t.ok(result.matches.count > 700 && result.unmatchedLeft.rows.length > 100, 'every set spans several slices')
  for (const [name, run] of [
    ['the run', input],
    ['ambiguous matches among them', flagged],
  ] as const) {
    const sliced = { whole: join(dir, `whole-${name}`), one: join(dir, `one-${name}`), two: join(dir, `two-${name}`) }
    for (const out of Object.values(sliced)) await mkdir(out)
    await writeSets(run, sliced.whole, 'csv')
    await writeSets(run, sliced.one, 'csv', { sliceRows: 7 })
    await writeSets(run, sliced.two, 'csv', { sliceRows: 100, helperMinRows: 0 })
    for (const set of RESULT_SETS) {
      const whole = await readFile(join(sliced.whole, `${set}.csv`), 'utf8')
      t.ok(whole.split('\n').length > 100 || (set === 'ambiguous' && run === input), `${name}: ${set} has rows`)
      t.equal(await readFile(join(sliced.one, `${set}.csv`), 'utf8'), whole, `${name}: ${set} in slices of 7`)
      t.equal(await readFile(join(sliced.two, `${set}.csv`), 'utf8'), whole, `${name}: ${set} in slices, two threads`)
    }
  }
  for (const set of RESULT_SETS) {
    const one = await readFile(join(outs.one, `${set}.csv`), 'utf8')
    t.ok(one.split('\n').length > 2 || set === 'ambiguous', `${set} has rows`)
    t.equal(await readFile(join(outs.two, `${set}.csv`), 'utf8'), one, `${set}: two threads, the same bytes`)
    t.equal(
      await readFile(join(outs.failing, `${set}.csv`), 'utf8'),
      one,
      `${set}: written again after the helper failed`,
    )
  }
  // the run's Arrow files and key indexes: the same content whichever thread wrote them (compared
  // as the CSV they read back as: Arrow numbers dictionaries per thread, so the bytes may differ)
  const arrow = { one: join(dir, 'arrow-one'), two: join(dir, 'arrow-two') }
  for (const out of Object.values(arrow)) await mkdir(out)
  await writeSets(input, arrow.one, 'arrow')
  await writeSets(input, arrow.two, 'arrow', { helperMinRows: 0 })
  // a run's own work after matching (its exceptions) done on the calling thread while the helper
  // writes, once, whether or not a helper is used
  const calls: string[] = []
  for (const [name, opts] of [
    ['alongside-helper', { helperMinRows: 0 }],
    ['alongside-one', {}],
  ] as const) {
    const out = join(dir, name)
    await mkdir(out)
    await writeSets(input, out, 'arrow', { ...opts, alongside: () => calls.push(name) })
    for (const set of RESULT_SETS)
      t.equal(await readBack(out, set), await readBack(arrow.one, set), `${name}: ${set}.arrow, the same rows`)
  }
  t.same(calls, ['alongside-helper', 'alongside-one'], 'the work alongside ran once per write')
  // the calling thread busy alongside (a run's exceptions) answers no message meanwhile: the helper
  // claims the next sets itself, and has written the unmatched ones before that work is over
  const busy = join(dir, 'busy')
  await mkdir(busy)
  const unmatched = ['unmatched-left', 'unmatched-right'].map((set) => join(busy, `${set}.arrow`))
  let waited = 0
  await writeSets(input, busy, 'arrow', {
    helperMinRows: 0,
    alongside: () => {
      const since = performance.now()
      const pause = new Int32Array(new SharedArrayBuffer(4))
      while (!unmatched.every((f) => existsSync(f)) && performance.now() - since < 20_000) Atomics.wait(pause, 0, 0, 5)
      waited = performance.now() - since
    },
  })
  t.ok(waited < 20_000, `the helper wrote both unmatched sets while this thread was busy (${Math.round(waited)} ms)`)
  for (const set of RESULT_SETS)
    t.equal(await readBack(busy, set), await readBack(arrow.one, set), `busy alongside: ${set}.arrow, the same rows`)
  for (const set of RESULT_SETS) {
    t.equal(await readBack(arrow.two, set), await readBack(arrow.one, set), `${set}.arrow: two threads, the same rows`)
    t.same(
      await readFile(join(arrow.two, `${set}.keys`)),
      await readFile(join(arrow.one, `${set}.keys`)),
      `${set}.keys: the same index`,
    )
  }
})

t.test('the matches set started while the engine explains the unmatched records: the same files', async (t) => {
  const dir = t.testdir({ ...files(3000) })
  const load = async (file: string) => (await loadCsv(join(dir, file))).table
  let early: EarlyInput['result'] | undefined
  const result = reconcile(recipe as Recipe, await load('left.csv'), await load('right.csv'), {
    onMatches: (m) => (early = m),
  })
  t.ok(early, 'the engine showed its matches before the result')
  t.equal(early!.matches, result.matches, 'the very match columns the result holds')
  t.equal(early!.passes, result.passes)
  const keys = { leftKey: recipe.left.key, rightKey: recipe.right.key }
  const input = { result, ...keys }
  const one = join(dir, 'one')
  await mkdir(one)
  await writeSets(input, one, 'csv')
  t.equal(startMatches({ result: early!, ...keys }, one, 'csv'), undefined, '3,000 rows: one thread, nothing started')

  for (const format of ['csv', 'arrow'] as const) {
    const out = join(dir, `early-${format}`)
    await mkdir(out)
    const started = startMatches({ result: early!, ...keys }, out, format, { helperMinRows: 0 })
    t.ok(started, `${format}: the matches set went to the helper`)
    // as a run writes its Arrow files: its exceptions alongside, on the calling thread
    let along = 0
    const alongside = format === 'arrow' ? () => along++ : undefined
    await writeSets(input, out, format, { early: started, helperMinRows: 0, alongside })
    t.equal(along, format === 'arrow' ? 1 : 0, `${format}: the work alongside ran once`)
    for (const set of RESULT_SETS) {
      const want = await readFile(join(one, `${set}.csv`), 'utf8')
      t.equal(
        format === 'csv' ? await readFile(join(out, `${set}.csv`), 'utf8') : await readBack(out, set),
        want,
        `${format}: ${set}`,
      )
    }
  }

  // a run that fails after its passes: the early set is waited for and the helper let go
  const dropped = join(dir, 'dropped')
  await mkdir(dropped)
  await dropMatches(startMatches({ result: early!, ...keys }, dropped, 'csv', { helperMinRows: 0 })!)
  t.same(await readdir(dropped), ['matches.csv'], 'only the early set was written')

  // through a job's writer: the CLI's, whose matches hook starts the set and whose write finishes
  const writer = setsWriter(join(dir, 'writer'), 'csv')
  writer.matches!({ result: early!, ...keys })
  await writer(input)
  for (const set of RESULT_SETS)
    t.equal(await readFile(join(dir, 'writer', `${set}.csv`), 'utf8'), await readFile(join(one, `${set}.csv`), 'utf8'))
  await writer.abandon!() // after the write: nothing left to drop
})

async function readBack(out: string, set: (typeof RESULT_SETS)[number]) {
  const table = tableFromIPC(await readFile(join(out, `${set}.arrow`)))
  const parts = [csvHeader(table.schema, set), ...table.batches.flatMap((b) => csvBatch(table.schema, b, set))]
  return Buffer.concat(parts).toString('utf8')
}

t.test('a column of plain ASCII bytes still quotes a field with whitespace at an edge', async (t) => {
  // plain buffers skip the per-byte check (plainBytes): the edges are what is left to look at
  const values = ['a', ' lead', 'trail ', 'in side', '\tTAB', '', 'z']
  const table = toArrowTable({
    columns: [{ name: 'note', type: 'string', nullable: true }],
    data: [{ ...stringColumn([...values.slice(0, 5), null, ...values.slice(5)]) }],
    length: values.length + 1,
  })
  const batch = table.batches[0]
  const text = Buffer.concat(csvBatch(table.schema, batch, 'matches')).toString()
  t.equal(text, 'a\n" lead"\n"trail "\nin side\n"\tTAB"\n\n\nz\n')
  const mixed = toArrowTable({
    columns: [{ name: 'note', type: 'string', nullable: false }],
    data: [stringColumn(['say "hi"', ' lead', 'x'])],
    length: 3,
  })
  t.equal(Buffer.concat(csvBatch(mixed.schema, mixed.batches[0], 'matches')).toString(), '"say ""hi"""\n" lead"\nx\n')
})

t.test('a reason spliced from plain keys is quoted when a key puts whitespace at its edge', async (t) => {
  // the left key " L1" (a plain buffer: no quote, comma or line break; an Arrow file keeps the
  // space where CSV and JSON loads trim it) begins the right record's reason
  const left = toArrowTable({
    columns: [
      { name: 'id', type: 'string', nullable: false },
      { name: 'amount', type: 'decimal', nullable: false, scale: 2 },
      { name: 'd', type: 'date', nullable: false },
    ],
    data: [
      stringColumn([' L1']),
      { type: 'decimal', length: 1, valid: null, values: new Float64Array([1000]), scale: 2 },
      { type: 'date', length: 1, valid: null, values: new Int32Array([19723]) },
    ],
    length: 1,
  })
  const dir = t.testdir({
    'left.arrow': Buffer.from(tableToIPC(left, 'file')),
    'right.csv': 'id,amount,d\nR1,10.00,2024-01-01\nR2,10.00,2024-01-05\n',
    'recipe.json': JSON.stringify({
      name: 'edges',
      left: { source: 'l', key: ['id'] },
      right: { source: 'r', key: ['id'] },
      passes: [
        {
          name: 'p',
          pattern: '1:1',
          when: "l.amount = r.amount AND r.d BETWEEN l.d - INTERVAL '9 days' AND l.d + INTERVAL '9 days'",
        },
      ],
    }),
  })
  const config = loadConfig({ DATA_DIR: join(dir, 'data'), ...testEnv })
  const o = io()
  const args = [
    '--left',
    join(dir, 'left.arrow'),
    '--right',
    join(dir, 'right.csv'),
    '--recipe',
    join(dir, 'recipe.json'),
  ]
  t.equal(await reconcileCommand([...args, '--out', join(dir, 'out')], config, o), 0, o.err())
  const lines = (await readFile(join(dir, 'out', 'unmatched-right.csv'), 'utf8')).split('\n')
  t.equal(
    lines[1],
    'R2," L1",p,," L1 (it was matched elsewhere) satisfies pass p but was outscored or tied",,R2,10.00,2024-01-05',
  )
})

t.test('floats are written as String() writes them, the digit-by-digit path included', async (t) => {
  // scores and day counts take a fast path (at most six decimals below 2^32); everything else
  // goes through String(): the two must never differ
  const rnd = prng(11)
  const values = [0, -0, 1, -1, 0.5, 1e-6, 9.99e-7, 1e-7, 0.999896, 0.1 + 0.2, 1 / 3, -2.5, 5e-324, 1e21]
  values.push(2 ** 32, 2 ** 32 - 1e-6, 2 ** 32 - 0.5, 2 ** 32 + 0.25, 4294967295.999999, 1.0000005, 0.0000015)
  // a column copies the bytes of the value it wrote last when the next is the same
  values.push(...values.flatMap((v) => [v, v, -v]))
  for (let i = 0; i < 300_000; i++) {
    const k = rnd()
    values.push(
      k < 0.25
        ? Math.round(rnd() * 1e6) / 1e6
        : k < 0.45
          ? Math.round((rnd() - 0.5) * 1e8)
          : k < 0.65
            ? Math.round((rnd() - 0.5) * 8.6e15) / 1e6
            : k < 0.8
              ? (rnd() - 0.5) * 10 ** Math.floor(rnd() * 30 - 10)
              : Math.round(rnd() * 1e9) / 1e3,
    )
  }
  const table = toArrowTable({
    columns: [{ name: 'x', type: 'float', nullable: false }],
    data: [{ type: 'float', length: values.length, valid: null, values: Float64Array.from(values) }],
    length: values.length,
  })
  const { rows, wrong } = wrongLines(table, (at) => String(values[at]))
  t.equal(rows, values.length)
  t.same(wrong, [])
})

/** The first five rows of `table`'s CSV lines that are not `want(row)`, and how many rows it had. */
function wrongLines(table: ReturnType<typeof toArrowTable>, want: (row: number) => string) {
  const wrong: string[] = []
  let at = 0
  for (const batch of table.batches) {
    const lines = Buffer.concat(csvBatch(table.schema, batch, 'matches'))
      .toString()
      .split('\n')
    for (let i = 0; i < batch.numRows; i++, at++)
      if (lines[i] !== want(at) && wrong.length < 5) wrong.push(`${want(at)} written ${lines[i]}`)
  }
  return { rows: at, wrong }
}

t.test('dates and decimals are written as formatDate and formatDecimal write them', async (t) => {
  // dates are spelled once per day and then copied (a table from 1900 over 2^17 days); the edges
  // of that table, days outside it and repeated days must read the same as formatDate's
  const rnd = prng(13)
  const days = [-25_568, -25_567, -25_566, 0, -1, 19_700, 19_700, 105_504, 105_505, 105_506, 2_932_896, -719_528]
  for (let i = 0; i < 50_000; i++) days.push(Math.floor(rnd() * 150_000) - 30_000)
  const units = [0, 5, -5, 99, 100, 101, -100, 9_999, 10_000, 123_456_789, -987_654_321, 2 ** 53 - 1, -(2 ** 53 - 1)]
  for (let i = 0; i < 50_000; i++) units.push(Math.round((rnd() - 0.5) * 10 ** Math.floor(rnd() * 16)))
  const n = Math.max(days.length, units.length)
  const table = toArrowTable({
    columns: [
      { name: 'd', type: 'date', nullable: false },
      { name: 'u', type: 'decimal', nullable: false },
    ],
    data: [
      { type: 'date', length: n, valid: null, values: Int32Array.from({ length: n }, (_, i) => days[i % days.length]) },
      {
        type: 'decimal',
        length: n,
        valid: null,
        scale: 2,
        values: Float64Array.from({ length: n }, (_, i) => units[i % units.length]),
      },
    ],
    length: n,
  })
  const { rows, wrong } = wrongLines(
    table,
    (at) => `${formatDate(days[at % days.length])},${formatDecimal(units[at % units.length], 2)}`,
  )
  t.equal(rows, n)
  t.same(wrong, [])
})
