// The event loop held to account: while the three CSV exports of a run with a million matches
// stream out and key lookups run against it, `GET /health` answers within 50 ms at the 99th
// percentile. The exports and lookups run in a separate process (the client's own parsing must
// not count against the server's loop); this process serves and probes /health every 10 ms over
// real HTTP, and also watches its loop with perf_hooks.monitorEventLoopDelay. The figures are in
// bench/README.md; the bound is asserted here. It runs alone (test/serial/, .taprc): beside
// another test file on 2 cores its probes read that file's CPU too.

import { spawn } from 'node:child_process'
import { closeSync, openSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks'
import t from 'tap'
import { testApp } from '../helpers/app.js'
import { waitForRun } from '../helpers/runs.js'

const ROWS = 1_000_000

/**
 * Two files whose every row matches one on the other side (same ref and amount), in a shuffled
 * order. Written 50,000 lines at a time: two million lines held at once as strings survived into
 * the old generation, and collecting them later paused this process's loop — the one that serves
 * and probes — for up to 87 ms in the middle of the measurement: the test's garbage, not the
 * service's.
 */
function writeFiles(dir: string): void {
  const left = openSync(join(dir, 'left.csv'), 'w')
  const right = openSync(join(dir, 'right.csv'), 'w')
  writeSync(left, 'id,ref,amount,booked\n')
  writeSync(right, 'id,ref,amount,paid\n')
  for (let from = 0; from < ROWS; from += 50_000) {
    let l = ''
    let r = ''
    for (let i = from; i < Math.min(ROWS, from + 50_000); i++) {
      const amount = `${(i * 7919) % 100000}.${String(i % 100).padStart(2, '0')}`
      l += `L${i},R${i},${amount},2026-01-${String(1 + (i % 28)).padStart(2, '0')}\n`
      const j = (i * 48271) % ROWS // a permutation: 48271 is prime to 10^6
      const b = `${(j * 7919) % 100000}.${String(j % 100).padStart(2, '0')}`
      r += `P${j},R${j},${b},2026-01-${String(1 + (j % 28)).padStart(2, '0')}\n`
    }
    writeSync(left, l)
    writeSync(right, r)
  }
  closeSync(left)
  closeSync(right)
}

/** The client: downloads the three exports and runs lookups, in its own process; prints what it got. */
const CLIENT = `
const base = process.argv[1]
const run = process.argv[2]
const get = async (path) => {
  const res = await fetch(base + path)
  let bytes = 0, lines = 0
  for await (const chunk of res.body) { bytes += chunk.length; for (const b of chunk) if (b === 10) lines++ }
  return { status: res.status, bytes, lines }
}
const lookups = async () => {
  const out = []
  for (let k = 0; k < 40; k++) {
    const key = k % 2 ? 'L' + (k * 24_989) : 'P' + (k * 17_011)
    const t0 = performance.now()
    const res = await fetch(base + '/api/runs/' + run + '/matches?key=' + key)
    const body = await res.json()
    out.push({ key, total: body.total, ms: performance.now() - t0 })
  }
  return out
}
const [matches, left, right, found] = await Promise.all([
  get('/api/runs/' + run + '/export?set=matches&format=csv'),
  get('/api/runs/' + run + '/export?set=unmatched-left&format=csv'),
  get('/api/runs/' + run + '/export?set=unmatched-right&format=csv'),
  lookups(),
])
console.log(JSON.stringify({ matches, left, right, found }))
`

const percentile = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]

t.test('GET /health answers within 50 ms (p99) during a 1M-match CSV export and key lookups', async (t) => {
  const dir = t.testdir({})
  writeFiles(dir)
  const { app } = await testApp(t, { dataDir: dir })
  for (const [alias, path] of [
    ['left', 'left.csv'],
    ['right', 'right.csv'],
  ]) {
    const res = await app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type: 'csv', path } })
    t.equal(res.statusCode, 201, res.body)
  }
  const recipe = {
    name: 'million',
    left: { source: 'left', key: ['id'] },
    right: { source: 'right', key: ['id'] },
    passes: [{ name: 'same', pattern: '1:1', when: 'l.ref = r.ref AND l.amount = r.amount' }],
  }
  const started = await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe, mode: 'full' } })
  t.equal(started.statusCode, 202, started.body)
  const run = await waitForRun(app, started.json().id)
  t.equal(run.status, 'completed', JSON.stringify(run.error))
  t.equal(run.summary.matches, ROWS, 'a million matches')

  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  const gcs: number[] = []
  const gcWatch = new PerformanceObserver((list) => gcs.push(...list.getEntries().map((e) => e.duration)))
  gcWatch.observe({ entryTypes: ['gc'] })
  const loop = monitorEventLoopDelay({ resolution: 5 })
  loop.enable()
  const probes: number[] = []
  let probing = true
  const probe = (async () => {
    while (probing) {
      const t0 = performance.now()
      const res = await fetch(`${base}/health`)
      await res.arrayBuffer()
      probes.push(performance.now() - t0)
      await new Promise((r) => setTimeout(r, 10))
    }
  })()
  const client = spawn(process.execPath, ['--input-type=module', '-e', CLIENT, base, run.id], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let out = ''
  client.stdout.on('data', (d) => (out += d))
  const code = await new Promise<number | null>((done) => client.on('exit', done))
  probing = false
  await probe
  loop.disable()
  gcWatch.disconnect()
  t.comment(`${gcs.length} GC pauses, the longest ${Math.max(0, ...gcs).toFixed(1)} ms`)
  t.equal(code, 0, 'the client finished')
  const got = JSON.parse(out) as {
    matches: { status: number; lines: number }
    left: { status: number; lines: number }
    right: { status: number; lines: number }
    found: { key: string; total: number; ms: number }[]
  }
  t.equal(got.matches.status, 200)
  t.equal(got.matches.lines, ROWS + 1, 'the whole matches export: a header and a million lines')
  t.equal(got.left.lines, 1, 'nothing left unmatched: the header alone')
  t.equal(got.right.lines, 1)
  t.ok(
    got.found.every((f) => f.total === 1),
    'each looked-up key is in exactly one match',
  )
  const p99 = percentile(probes, 0.99)
  const loopP99 = loop.percentile(99) / 1e6
  t.comment(
    `${probes.length} probes: p50 ${percentile(probes, 0.5).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, ` +
      `max ${Math.max(...probes).toFixed(1)} ms; event-loop delay p99 ${loopP99.toFixed(1)} ms; ` +
      `lookups p50 ${percentile(
        got.found.map((f) => f.ms),
        0.5,
      ).toFixed(1)} ms`,
  )
  t.ok(probes.length >= 20, `${probes.length} probes during the export`)
  // The exports are encoded on the export worker (src/runs/exporter.ts); the loop only moves bytes
  // to the sockets. Encoded on the loop in 3 ms slices, p99 was 59-72 ms; before the slices a
  // 1M-match export held the loop for 17 s.
  t.ok(p99 <= 50, `GET /health p99 ${p99.toFixed(1)} ms <= 50 ms`)
})
