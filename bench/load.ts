// Load benchmark: a real `concord serve` process under autocannon. Per endpoint (preview,
// load-scoped, run status, result paging) at 1, 16 and 64 connections: throughput, p50/p99 latency
// and errors. Then four full runs of different recipes, first one after another, then all four at
// once: their results must be identical.
//   npm run bench:load [-- --rows 100000 --seconds 5]

import { type ChildProcess, spawn } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { copyFile, mkdtemp, rm } from 'node:fs/promises'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import autocannon from 'autocannon'
import { reconFiles, writeRecon } from './gen-recon.js'

const opt = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? Number(process.argv[i + 1]) : dflt
}
const rows = opt('rows', 100_000)
const seconds = opt('seconds', 5)
// --seconds 0 skips the autocannon cells (the concurrent-runs check only)

const files = reconFiles(rows)
await writeRecon(rows)
const dataDir = await mkdtemp(join(tmpdir(), 'bench-load-'))
await copyFile(files.left, join(dataDir, 'bank.csv'))
await copyFile(files.right, join(dataDir, 'invoices.csv'))

const port = await new Promise<number>((done) => {
  const s = net.createServer().listen(0, '127.0.0.1', () => {
    const p = (s.address() as net.AddressInfo).port
    s.close(() => done(p))
  })
})
const base = `http://127.0.0.1:${port}`
// the rate limit is raised for the benchmark: it measures the service, not the limiter. Requests
// carry a key, as in production (access checks are part of what is measured), and four runs may
// execute at once, so the concurrent-runs scenario really runs all four together.
const KEY = `bench-${randomBytes(24).toString('hex')}`
const auth = { authorization: `Bearer ${KEY}` }
const server: ChildProcess = spawn(process.execPath, [resolve('bin/concord.js'), 'serve'], {
  env: {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '10000000',
    CONCORD_ADMIN_KEY: KEY,
    RUN_CONCURRENCY: '4',
  },
  stdio: ['ignore', 'ignore', 'inherit'],
})
const stop = async () => {
  server.kill('SIGTERM')
  await new Promise((r) => server.once('exit', r))
  await rm(dataDir, { recursive: true, force: true })
}
for (let i = 0; ; i++) {
  if (
    await fetch(`${base}/health`).then(
      (r) => r.ok,
      () => false,
    )
  )
    break
  if (i > 300) throw new Error('concord serve did not start')
  await new Promise((r) => setTimeout(r, 100))
}

async function api<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: body ? { ...auth, 'content-type': 'application/json' } : auth,
    body: body ? JSON.stringify(body) : undefined,
  })
  if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
  return (await res.json()) as T
}
async function finished(id: string): Promise<{ status: string; summary: Record<string, unknown> }> {
  for (;;) {
    const run = await api<{ status: string; summary: Record<string, unknown>; error?: unknown }>(
      'GET',
      `/api/runs/${id}`,
    )
    if (run.status === 'completed') return run
    if (run.status !== 'queued' && run.status !== 'running') throw new Error(`run ${id}: ${JSON.stringify(run.error)}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

await api('POST', '/api/sources', { alias: 'bank', type: 'csv', path: 'bank.csv' })
await api('POST', '/api/sources', { alias: 'invoices', type: 'csv', path: 'invoices.csv' })
const recipe = (name: string, when: string) => ({
  name,
  left: { source: 'bank', key: ['txn_id'] },
  right: { source: 'invoices', key: ['invoice_id'] },
  passes: [{ name: 'match', pattern: '1:1', when }],
})
const recipes = [
  recipe('exact', 'l.reference = r.ref AND l.amount = r.total_amount'),
  recipe('cent', 'l.reference = r.ref AND ABS(l.amount - r.total_amount) <= 0.01'),
  recipe(
    'window',
    "l.reference = r.ref AND ABS(l.amount - r.total_amount) <= 0.01 AND r.invoice_date BETWEEN l.txn_date - INTERVAL '3 days' AND l.txn_date",
  ),
  recipe(
    'loose',
    "l.reference = r.ref AND ABS(l.amount - r.total_amount) <= 5 AND r.invoice_date BETWEEN l.txn_date - INTERVAL '10 days' AND l.txn_date",
  ),
]
const { id: runId } = await api<{ id: string }>('POST', '/api/runs', { recipe: recipes[2] })
const done = await finished(runId)
const matches = Number(done.summary.matches)

const scenarios: { name: string; request: autocannon.Request }[] = [
  { name: 'GET preview (20 rows)', request: { method: 'GET', path: '/api/sources/bank/preview?limit=20' } },
  {
    name: `POST load-scoped (filter on ${rows.toLocaleString('en')} rows)`,
    request: {
      method: 'POST',
      path: '/api/sources/bank/load-scoped',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ conditions: [{ column: 'amount', op: 'between', value: ['100', '200'] }], preview: 5 }),
    },
  },
  { name: 'GET run status', request: { method: 'GET', path: `/api/runs/${runId}` } },
  {
    name: 'GET matches page (100)',
    request: {
      method: 'GET',
      setupRequest: (req) => ({
        ...req,
        path: `/api/runs/${runId}/matches?limit=100&offset=${Math.floor(Math.random() * (matches - 100))}`,
      }),
    },
  },
]

const table: string[] = []
let failed = 0
for (const s of seconds > 0 ? scenarios : []) {
  for (const connections of [1, 16, 64]) {
    const r = await autocannon({ url: base, connections, duration: seconds, headers: auth, requests: [s.request] })
    const errors = r.errors + r.timeouts + r.non2xx
    failed += errors
    table.push(
      `| ${s.name} | ${connections} | ${Math.round(r.requests.average)} | ${r.latency.p50} | ${r.latency.p99} | ${errors} |`,
    )
    console.error(table.at(-1))
  }
}

// four different recipes: one after another, then all at once; the exports must be identical
const exportDigest = async (id: string) => {
  const parts: string[] = []
  for (const set of ['matches', 'unmatched-left', 'unmatched-right']) {
    const res = await fetch(`${base}/api/runs/${id}/export?format=csv&set=${set}`, { headers: auth })
    if (!res.ok) throw new Error(`export ${id} ${set}: ${res.status}`)
    parts.push(
      createHash('sha256')
        .update(Buffer.from(await res.arrayBuffer()))
        .digest('hex')
        .slice(0, 12),
    )
  }
  return parts.join('/')
}
const runAll = async (concurrent: boolean) => {
  const t0 = performance.now()
  const ids: string[] = []
  if (concurrent) {
    for (const r of recipes) ids.push((await api<{ id: string }>('POST', '/api/runs', { recipe: r })).id)
    await Promise.all(ids.map(finished))
  } else {
    for (const r of recipes) {
      const { id } = await api<{ id: string }>('POST', '/api/runs', { recipe: r })
      await finished(id)
      ids.push(id)
    }
  }
  const ms = performance.now() - t0
  const runs = await Promise.all(ids.map((id) => api<{ summary: { matches: number } }>('GET', `/api/runs/${id}`)))
  return { ms, digests: await Promise.all(ids.map(exportDigest)), matches: runs.map((r) => r.summary.matches) }
}
const sequential = await runAll(false)
const concurrent = await runAll(true)
const same = sequential.digests.every((d, i) => d === concurrent.digests[i])
await stop()

console.log(`\nLoad, ${rows.toLocaleString('en')} rows per side, ${seconds} s per cell (node ${process.version})\n`)
console.log('| request | connections | req/s | p50 ms | p99 ms | errors |')
console.log('|---|---|---|---|---|---|')
for (const line of table) console.log(line)
console.log(`\nFour full runs (${recipes.map((r) => r.name).join(', ')}): matches ${sequential.matches.join(', ')}`)
console.log(`| one after another | ${sequential.ms.toFixed(0)} ms |`)
console.log(`| all four at once | ${concurrent.ms.toFixed(0)} ms |`)
console.log(`results identical (sha256 of the three CSV exports per run): ${same ? 'yes' : 'NO'}`)
if (!same) {
  console.log(sequential.digests, concurrent.digests)
  process.exitCode = 1
}
if (failed > 0) {
  console.log(`${failed} requests failed (errors, timeouts or non-2xx answers): the load run does not pass`)
  process.exitCode = 1
}
