// The run report of a million matches against the event loop. Its figures are read on the
// report's own thread (src/runs/report/figures-thread.ts), a record batch at a time, so the
// service's thread spends a small part of the figures' time on a report and `GET /health` keeps
// answering. This process serves and probes /health every 10 ms over real HTTP (first beside a
// spinning thread, to know the shared machine's own noise, then during four uncached reports) and
// watches its loop with perf_hooks; the timings are printed (docs/ARCHITECTURE.md keeps them) and
// the service thread's share asserted.

import { monitorEventLoopDelay } from 'node:perf_hooks'
import { Worker } from 'node:worker_threads'
import t from 'tap'
import { testApp } from './helpers/app.js'
import { waitForRun } from './helpers/runs.js'
import { percentile, writeCsvPair } from './helpers/timing.js'

const MATCHES = 1_000_000
/** Of the matches, those a few cents apart (the second pass); the rest agree to the cent. */
const NEAR = 50_000
/** Records on each side whose counterpart is too far off: unmatched, with a failed conjunct. */
const FAR = 50_000

/**
 * Left and right files of MATCHES + FAR rows. Row i: exact for i < MATCHES - NEAR, then NEAR rows
 * 1..49 cents apart, then FAR rows 9.99 apart.
 */
function writeFiles(dir: string): void {
  const amount = (c: number) => `${Math.floor(c / 100)}.${String(c % 100).padStart(2, '0')}`
  writeCsvPair(dir, ['id,ref,amount,booked', 'id,ref,amount,paid'], MATCHES + FAR, (i) => {
    const cents = 100 + ((i * 7919) % 10_000_000)
    const off = i < MATCHES - NEAR ? 0 : i < MATCHES ? 1 + (i % 49) : 999
    const day = 1 + (i % 27)
    return [
      `L${i},R${i},${amount(cents)},2026-01-${String(day).padStart(2, '0')}\n`,
      `P${i},R${i},${amount(cents + off)},2026-01-${String(day + (i % 2)).padStart(2, '0')}\n`,
    ]
  })
}

/** This thread's CPU time (Node 23.9+; @types/node does not list it yet). */
const threadCpu = (since?: NodeJS.CpuUsage): NodeJS.CpuUsage =>
  (process as unknown as { threadCpuUsage(since?: NodeJS.CpuUsage): NodeJS.CpuUsage }).threadCpuUsage(since)

t.test('a 1M-match run report is computed off the event loop: GET /health answers meanwhile', async (t) => {
  const dir = t.testdir({})
  writeFiles(dir)
  const { app } = await testApp(t, { dataDir: dir })
  for (const alias of ['left', 'right']) {
    const res = await app.inject({
      method: 'POST',
      url: '/api/sources',
      payload: { alias, type: 'csv', path: `${alias}.csv` },
    })
    t.equal(res.statusCode, 201, res.body)
  }
  const recipe = {
    name: 'million',
    left: { source: 'left', key: ['id'] },
    right: { source: 'right', key: ['id'] },
    passes: [
      { name: 'same', pattern: '1:1', when: 'l.ref = r.ref AND l.amount = r.amount' },
      {
        name: 'near',
        pattern: '1:1',
        when: "l.ref = r.ref AND ABS(l.amount - r.amount) <= 0.50 AND r.paid BETWEEN l.booked AND l.booked + INTERVAL '1 day'",
      },
    ],
  }
  const started = await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe } })
  t.equal(started.statusCode, 202, started.body)
  const run = await waitForRun(app, started.json().id)
  t.equal(run.status, 'completed', JSON.stringify(run.error))
  t.match(run.summary, { matches: MATCHES, left: { unmatched: FAR }, right: { unmatched: FAR } })

  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  /** Probes /health every 10 ms until `work` settles; returns the probes' times. */
  const probing = async (work: Promise<unknown>) => {
    const probes: number[] = []
    let done = false
    void work.finally(() => (done = true))
    while (!done) {
      const t0 = performance.now()
      await (await fetch(`${base}/health`)).arrayBuffer()
      probes.push(performance.now() - t0)
      await new Promise((r) => setTimeout(r, 10))
    }
    return probes
  }
  const figuresMsOf = (page: string) => Number(/stored results in (\d+) ms/.exec(page)?.[1])
  // the first report starts the figures thread (from the TypeScript sources here, through tsx:
  // seconds on a busy machine; built, ~0.2 s): timed, not probed
  const t0 = performance.now()
  const cold = await (await fetch(`${base}/api/runs/${run.id}/report?top=1`)).text()
  const coldMs = performance.now() - t0

  // the machine's own noise (the tests share it with other work): the same probes while a thread
  // of this process spins for 3 s, as the figures thread works: on a saturated machine any busy
  // thread delays the loop's wake-ups; the report must not add to that
  const spinner = new Worker('const end = Date.now() + 3000; while (Date.now() < end);', { eval: true })
  const idle = await probing(new Promise((r) => spinner.once('exit', r)))

  // four uncached reports in a row (each `top` is read anew), so that the probes are as many as
  // the idle ones and a p99 is a percentile, not one unlucky probe
  const loop = monitorEventLoopDelay({ resolution: 5 })
  loop.enable()
  let body = ''
  let status = 0
  const times: number[] = []
  const reports = (async () => {
    for (const top of [17, 18, 19, 20]) {
      const t1 = performance.now()
      const res = await fetch(`${base}/api/runs/${run.id}/report?top=${top}`)
      status = res.status
      body = await res.text()
      times.push(performance.now() - t1)
    }
  })()
  const probes = await probing(reports)
  await reports
  const first = times[times.length - 1]
  loop.disable()
  const t2 = performance.now()
  await (await fetch(`${base}/api/runs/${run.id}/report?top=20`)).text()
  const again = performance.now() - t2

  t.equal(status, 200)
  // the page's figures, read from its data attributes (whatever the markup's layout)
  const attr = (tag: RegExp, name: string) => {
    const element = tag.exec(body)?.[0] ?? ''
    return new RegExp(`${name}="([^"]*)"`).exec(element)?.[1]
  }
  const histogram = /<figure[^>]*data-histogram="amount"[^>]*>/
  t.equal(attr(histogram, 'data-counted'), String(MATCHES), 'every match has an amount delta')
  t.equal(attr(histogram, 'data-zero'), String(MATCHES - NEAR), 'the first pass agrees to the cent')
  const total = /data-total="left"[\s\S]*?<\/tr>/
  t.equal(attr(total, 'data-value'), String(FAR), 'unmatched left records')
  t.equal(
    /data-figure="amount"\s+data-value="([\d.]+)"/.exec(total.exec(body)?.[0] ?? '')?.[1],
    run.summary.left.unmatched_amount,
    'their amount to the cent',
  )
  t.equal((body.match(/<tr\s+data-key=/g) ?? []).length, 40, 'twenty largest unmatched records a side')
  const figuresMs = figuresMsOf(body)

  // what the service's thread itself spends on a report (another `top`: the figures are read
  // again), against the figures' own time on their thread: robust to a busy machine, where the
  // probes' latencies also measure the neighbours. Three reports, the least share kept: a
  // collection of garbage left by the earlier work can land in any one of them (108 ms of 390 once
  // on CI), but figures read on this thread would cost every one of them
  let mainMs = Infinity
  let otherFiguresMs = 0
  for (const top of [5, 6, 7]) {
    const cpu0 = threadCpu()
    const other = await (await fetch(`${base}/api/runs/${run.id}/report?top=${top}`)).text()
    const cpu = threadCpu(cpu0)
    const spent = (cpu.user + cpu.system) / 1000
    const figures = figuresMsOf(other)
    if (spent / figures < mainMs / (otherFiguresMs || 1)) [mainMs, otherFiguresMs] = [spent, figures]
  }

  const p99 = percentile(probes, 0.99)
  const idleP99 = percentile(idle, 0.99)
  t.comment(
    `report of ${MATCHES} matches and ${2 * FAR} unmatched: the first (thread start) ${coldMs.toFixed(0)} ms ` +
      `(figures ${figuresMsOf(cold)} ms); then ${times.map((x) => x.toFixed(0)).join(', ')} ms (the last: figures ${figuresMs} ms), ` +
      `cached ${again.toFixed(0)} ms; ${probes.length} /health probes meanwhile: p50 ${percentile(probes, 0.5).toFixed(1)} ms, ` +
      `p99 ${p99.toFixed(1)} ms, max ${Math.max(...probes).toFixed(1)} ms (beside a spinning thread: p50 ${percentile(idle, 0.5).toFixed(1)} ms, ` +
      `p99 ${idleP99.toFixed(1)} ms); event-loop delay p99 ${(loop.percentile(99) / 1e6).toFixed(1)} ms, ` +
      `max ${(loop.max / 1e6).toFixed(1)} ms; another report: ${mainMs.toFixed(0)} ms of the service thread's CPU ` +
      `for ${otherFiguresMs} ms of figures`,
  )
  t.ok(probes.length >= 10, `${probes.length} probes while the report was computed`)
  // What is asserted is what a busy machine cannot blur: the service's thread's own CPU. With the
  // figures read on it (a batch at a time, the loop given back between batches) a report took 199
  // ms of it for 511 ms of figures (the rest is waiting for the file); on the figures thread, 23-64
  // ms for 308-1601 ms. The probes' latencies are printed, not bounded: on this shared 2-core
  // machine they read the neighbours too (test/serial/event-loop.test.ts's p99 <= 50 ms read 131 ms there
  // while this test's p99 read 40-126 ms, a few descheduled probes in a hundred).
  t.ok(mainMs < otherFiguresMs / 4, `the service thread spent ${mainMs.toFixed(0)} ms of ${otherFiguresMs} ms`)
  t.ok(again < first, 'a second report of the run reads no file again')
})
