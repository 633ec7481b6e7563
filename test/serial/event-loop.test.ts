// The event loop held to account: while the three CSV exports of a run with a million matches
// stream out and key lookups run against it, `GET /health` answers within 50 ms at the 99th
// percentile. Every part is its own process, as in use: the service is `concord serve` from the
// built JavaScript; the exports and lookups run in a client process (its parsing must not count
// against the service); the probe, every 10 ms over real HTTP, runs in a third, small process.
// The probe once ran inside this test process, beside an in-process app: that process carries
// tap's and tsx's source maps (~150 MB of small arrays on the heap), and its own major GCs paused
// probes for 100-400 ms — the harness's garbage, not the service's. The figures are in
// bench/README.md; the bound is asserted here. It runs alone (test/serial/, .taprc): beside
// another test file on 2 cores its probes read that file's CPU too.

import { spawn } from 'node:child_process'
import { setPriority } from 'node:os'
import t from 'tap'
import { call, serve } from '../helpers/serve.js'
import { percentile, writeCsvPair } from '../helpers/timing.js'

const ROWS = 1_000_000

/** Two files whose every row matches one on the other side (same ref and amount), shuffled. */
function writeFiles(dir: string): void {
  writeCsvPair(dir, ['id,ref,amount,booked', 'id,ref,amount,paid'], ROWS, (i) => {
    const amount = `${(i * 7919) % 100000}.${String(i % 100).padStart(2, '0')}`
    const j = (i * 48271) % ROWS // a permutation: 48271 is prime to 10^6
    const b = `${(j * 7919) % 100000}.${String(j % 100).padStart(2, '0')}`
    return [
      `L${i},R${i},${amount},2026-01-${String(1 + (i % 28)).padStart(2, '0')}\n`,
      `P${j},R${j},${b},2026-01-${String(1 + (j % 28)).padStart(2, '0')}\n`,
    ]
  })
}

/** The client: downloads the three exports and runs lookups, in its own process; prints what it got. */
const CLIENT = `
const base = process.argv[1]
const run = process.argv[2]
const get = async (path) => {
  const res = await fetch(base + path)
  let bytes = 0, lines = 0
  // newlines found with indexOf (memchr), not a loop over each byte: the client's CPU is not
  // what is measured, and on 2 cores it would compete with the service for it
  for await (const chunk of res.body) {
    bytes += chunk.length
    for (let at = chunk.indexOf(10); at >= 0; at = chunk.indexOf(10, at + 1)) lines++
  }
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

/**
 * The probe: GET /health every 10 ms until its stdin closes, then prints the round trips (ms).
 * Alone in its process, so nothing but the service and the machine delays it. Its first request
 * is not counted: a process's first fetch loads undici and opens the connection, 35-45 ms of the
 * probe's own start that was the one slow probe of every run (CI failed on it at 56 ms). It says
 * "warm" when that is done, and the test starts the client then.
 */
const PROBE = `
const base = process.argv[1]
await (await fetch(base + '/health')).arrayBuffer()
process.stdout.write('warm\\n')
const probes = []
let probing = true
process.stdin.on('end', () => (probing = false)).resume()
while (probing) {
  const t0 = performance.now()
  const res = await fetch(base + '/health')
  await res.arrayBuffer()
  probes.push(performance.now() - t0)
  await new Promise((r) => setTimeout(r, 10))
}
console.log(JSON.stringify(probes))
`

/** A child node process running `script`; resolves with its exit code and what it printed. */
function node(script: string, args: string[], stdin: 'ignore' | 'pipe' = 'ignore') {
  const child = spawn(process.execPath, ['--input-type=module', '-e', script, ...args], {
    stdio: [stdin, 'pipe', 'inherit'],
  })
  let out = ''
  child.stdout!.on('data', (d) => (out += d))
  const done = new Promise<{ code: number | null; out: string }>((ok) => child.on('exit', (code) => ok({ code, out })))
  return { child, done }
}

/** The service's event-loop delay p99 (seconds) since the last scrape: prom-client resets it then. */
async function loopP99(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text()
  return Number(/^concord_nodejs_eventloop_lag_p99_seconds (\S+)$/m.exec(text)?.[1])
}

t.test('GET /health answers within 50 ms (p99) during a 1M-match CSV export and key lookups', async (t) => {
  const dir = t.testdir({})
  writeFiles(dir)
  const { base } = await serve(t, { DATA_DIR: dir })
  for (const [alias, path] of [
    ['left', 'left.csv'],
    ['right', 'right.csv'],
  ]) {
    const res = await call(base, 'POST', '/api/sources', { alias, type: 'csv', path })
    t.equal(res.status, 201, JSON.stringify(res.body))
  }
  const recipe = {
    name: 'million',
    left: { source: 'left', key: ['id'] },
    right: { source: 'right', key: ['id'] },
    passes: [{ name: 'same', pattern: '1:1', when: 'l.ref = r.ref AND l.amount = r.amount' }],
  }
  const started = await call(base, 'POST', '/api/runs', { recipe, mode: 'full' })
  t.equal(started.status, 202, JSON.stringify(started.body))
  let run = started.body
  for (const until = Date.now() + 120_000; !['completed', 'failed', 'cancelled'].includes(run.status);) {
    if (Date.now() > until) throw new Error(`run still ${run.status}`)
    await new Promise((r) => setTimeout(r, 100))
    run = (await call(base, 'GET', `/api/runs/${run.id}`)).body
  }
  t.equal(run.status, 'completed', JSON.stringify(run.error))
  t.equal(run.summary.matches, ROWS, 'a million matches')

  await loopP99(base) // resets the service's event-loop histogram: what follows is the export's
  const probe = node(PROBE, [base], 'pipe')
  // the client starts once the probe is warm; a probe that died says so below, it does not hang here
  await Promise.race([new Promise((warm) => probe.child.stdout!.once('data', warm)), probe.done])
  const client = node(CLIENT, [base, run.id])
  // the load generator shares the 2 cores with the service: at the service's priority its
  // download parsing took the CPU the service's loop needed, which a client elsewhere would not
  setPriority(client.child.pid!, 10)
  const { code, out } = await client.done
  const loopMs = (await loopP99(base)) * 1000
  probe.child.stdin!.end()
  const probed = await probe.done
  t.equal(code, 0, 'the client finished')
  t.equal(probed.code, 0, 'the probe finished')
  const probes = JSON.parse(probed.out.slice(probed.out.indexOf('\n') + 1)) as number[]
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
  t.comment(
    `${probes.length} probes: p50 ${percentile(probes, 0.5).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, ` +
      `max ${Math.max(...probes).toFixed(1)} ms; the service's event-loop delay p99 ${loopMs.toFixed(1)} ms; ` +
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
