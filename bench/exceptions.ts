// Exceptions benchmark: a real `concord serve` process runs a recipe whose run leaves 250,000
// exceptions (half the records of each side unmatched, reasons mixed), and reports how long
// writing them took inside the completing transaction (the service's "run exceptions recorded"
// log line) next to the run itself; then autocannon pages the exceptions list with 16
// connections, one scenario at a time, and reports latency percentiles.
//   node --import tsx bench/exceptions.ts [--rows 250000] [--pg] [--seconds 10] [--warmup 3]
// --pg keeps the service's tables in the local PostgreSQL (database test, a fresh schema).
// BENCH_SERVICE_FLAGS: node flags for the service, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"
// (the service is stopped with SIGTERM and waited for, so a profile is written).

import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import autocannon from 'autocannon'
import pg from 'pg'

const option = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`)
  return at >= 0 ? Number(process.argv[at + 1]) : fallback
}
const rows = option('rows', 250_000)
const seconds = option('seconds', 10)
const warmup = option('warmup', 3)
const usePg = process.argv.includes('--pg')
const root = resolve(import.meta.dirname, '..')

/** Each side `rows` records: half match, a quarter differ in amount by 10%, a quarter have no counterpart. */
async function writeData(dir: string) {
  const left = ['txn_id,amount,txn_date,reference']
  const right = ['invoice_id,total_amount,invoice_date,ref']
  for (let i = 0; i < rows; i++) {
    const amount = 10 + (i % 50_000) / 100
    const day = `2024-0${1 + (i % 9)}-${String(1 + (i % 28)).padStart(2, '0')}`
    left.push(`T${i},${amount.toFixed(2)},${day},R${i}`)
    const kind = i % 4
    const paid = kind === 1 ? amount * 0.9 : amount
    right.push(`I${i},${paid.toFixed(2)},${day},${kind === 3 ? 'X' : 'R'}${i}`)
  }
  await writeFile(join(dir, 'bank.csv'), left.join('\n'))
  await writeFile(join(dir, 'invoices.csv'), right.join('\n'))
}

async function freePort(): Promise<number> {
  return new Promise((ok) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => ok(port))
    })
  })
}

const dir = await mkdtemp(join(tmpdir(), 'bench-exceptions-'))
let schema: string | null = null
let child: ChildProcess | undefined
const admin = usePg ? new pg.Client({ connectionString: 'postgresql://postgres@127.0.0.1:5432/test' }) : null
try {
  console.error(`writing ${rows} records a side…`)
  await writeData(dir)
  let databaseUrl: string | undefined
  if (admin) {
    await admin.connect()
    schema = `bench_${Date.now()}`
    await admin.query(`CREATE SCHEMA ${schema}`)
    const url = new URL('postgresql://postgres@127.0.0.1:5432/test')
    url.searchParams.set('options', `-c search_path=${schema}`)
    databaseUrl = url.toString()
  }
  const port = await freePort()
  child = spawn(
    process.execPath,
    [
      ...(process.env.BENCH_SERVICE_FLAGS ? process.env.BENCH_SERVICE_FLAGS.split(' ') : []),
      join(root, 'bin/concord.js'),
      'serve',
    ],
    {
      env: {
        ...process.env,
        DATA_DIR: dir,
        PORT: String(port),
        LOG_LEVEL: 'info',
        MAX_EVENT_LOOP_DELAY_MS: '0',
        RATE_LIMIT_PER_MINUTE: '100000000',
        ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  )
  let recorded: { ms: number; created: number; worker_ms?: number } | null = null
  let buffered = ''
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString()
    let nl: number
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl)
      buffered = buffered.slice(nl + 1)
      if (line.includes('run exceptions recorded')) recorded = JSON.parse(line)
    }
  })
  const base = `http://127.0.0.1:${port}`
  for (let until = Date.now() + 60_000; !(await fetch(`${base}/ready`).catch(() => null))?.ok;) {
    if (Date.now() > until) throw new Error('the service did not start')
    await new Promise((r) => setTimeout(r, 100))
  }
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(base + path, {
      method,
      headers: body ? { 'content-type': 'application/json' } : {},
      body: body ? JSON.stringify(body) : undefined,
    })
    return (await res.json()) as Record<string, unknown>
  }
  for (const [alias, path] of [
    ['bank', 'bank.csv'],
    ['invoices', 'invoices.csv'],
  ])
    await call('POST', '/api/sources', { alias, type: 'csv', path })
  const recipe = await call('POST', '/api/recipes', {
    name: 'bench',
    left: { source: 'bank', key: ['txn_id'] },
    right: { source: 'invoices', key: ['invoice_id'] },
    passes: [{ name: 'exact', pattern: '1:1', when: 'l.reference = r.ref AND ABS(l.amount - r.total_amount) <= 0.01' }],
  })
  const started = await call('POST', '/api/runs', { recipe_id: recipe.id })
  let run: Record<string, unknown>
  for (;;) {
    run = await call('GET', `/api/runs/${started.id}`)
    if (!['queued', 'running'].includes(String(run.status))) break
    await new Promise((r) => setTimeout(r, 100))
  }
  if (run.status !== 'completed') throw new Error(`run ${run.status}: ${JSON.stringify(run.error)}`)
  const runMs = Date.parse(String(run.finished_at)) - Date.parse(String(run.started_at))
  const r = recorded as { ms: number; created: number; worker_ms?: number } | null
  console.log(`database: ${usePg ? 'PostgreSQL (local)' : 'PGlite (embedded)'}`)
  console.log(
    `run: ${runMs} ms start to completed; exceptions: ${r?.created}, classified and written as the run's set file by its worker in ${r?.worker_ms} ms, recorded in ${r?.ms} ms`,
  )

  // a cursor deep into the amount-sorted queue (page 200 of 500)
  let cursor = ''
  for (let n = 0; n < 200; n++) {
    const page = await call('GET', `/api/exceptions?sort=amount&limit=500${cursor ? `&cursor=${cursor}` : ''}`)
    cursor = String(page.next_cursor)
  }
  const scenarios: [string, string][] = [
    ['newest first', '/api/exceptions?limit=50'],
    ['largest at risk', '/api/exceptions?sort=amount&limit=50'],
    ['oldest first', '/api/exceptions?sort=age&limit=50'],
    ['one reason, by amount', '/api/exceptions?reason=amount_outside_tolerance&sort=amount&limit=50'],
    ['amount range + age', '/api/exceptions?amount_min=100.00&amount_max=200.00&age_min=30&limit=50'],
    ['page 100,001', `/api/exceptions?sort=amount&limit=50&cursor=${cursor}`],
  ]
  // a service just started is not yet warm (its code not yet optimized, its heap not yet grown):
  // measured cold, the first scenario of every run read 50-71 ms at p99 whichever it was, and
  // 32-35 ms when the same scenario came last. So each scenario is first served under the same
  // load for `--warmup` seconds, and that figure is printed beside the measured one.
  // the service's own event-loop delay (p99 / max) and time in garbage collection while measured,
  // from its metrics: what of the latency is its thread being held
  const serviceLoop = async () => {
    const text = await (await fetch(`${base}/metrics`)).text()
    const metric = (name: string) => Number(new RegExp(`^${name}(?:{[^}]*})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN)
    const gc = [...text.matchAll(/^concord_nodejs_gc_duration_seconds_sum{[^}]*} (\S+)$/gm)].reduce(
      (a, m) => a + Number(m[1]),
      0,
    )
    const ms = (v: number) => Math.round(v * 1000)
    const out = `${ms(metric('concord_nodejs_eventloop_lag_p99_seconds'))} / ${ms(metric('concord_nodejs_eventloop_lag_max_seconds'))}; GC ${ms(gc - lastGc)} ms`
    lastGc = gc
    return out
  }
  let lastGc = 0
  const warm = async (path: string) => {
    if (warmup <= 0) return null
    const w = await autocannon({ url: base + path, connections: 16, duration: warmup })
    return w.latency.p99
  }
  console.log(
    `\n| scenario (16 connections, ${seconds} s, after ${warmup} s of warm-up) | alone: first (a new filter's list) / median ms | req/s | p50 ms | p90 / p97.5 / p99 ms | max ms | warm-up p99 ms | service's event-loop delay p99 / max ms; its GC |`,
  )
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const [name, path] of scenarios) {
    // one request at a time first: what a page costs the service, without queueing
    const alone: number[] = []
    for (let n = 0; n < 21; n++) {
      const t0 = performance.now()
      await (await fetch(base + path)).arrayBuffer()
      alone.push(performance.now() - t0)
    }
    const first = alone[0]
    alone.sort((a, b) => a - b)
    const warmP99 = await warm(path)
    await serviceLoop() // its delay histogram starts again at each scrape
    const result = await autocannon({ url: base + path, connections: 16, duration: seconds })
    const loop = await serviceLoop()
    if (result.non2xx) throw new Error(`${name}: ${result.non2xx} non-2xx answers`)
    const l = result.latency
    console.log(
      `| ${name} | ${first.toFixed(1)} / ${alone[10].toFixed(1)} | ${Math.round(result.requests.average)} | ${l.p50} | ${l.p90}/${l.p97_5}/${l.p99} | ${l.max} | ${warmP99 ?? '-'} | ${loop} |`,
    )
  }
} finally {
  // the service shuts down in its own time (its database closed, a profile asked for written)
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child!.once('exit', r))
    child.kill('SIGTERM')
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))])
  }
  if (admin && schema) {
    await admin.query(`DROP SCHEMA ${schema} CASCADE`).catch(() => {})
    await admin.end()
  }
  await rm(dir, { recursive: true, force: true })
}
