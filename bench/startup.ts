// Start-up as an operator meets it (issue 17): `npm start` until GET /ready answers 200, on a fresh
// data folder (PGlite's first init included) and on an existing one, alternated BENCH_RUNS times (3);
// then the request a client sends as soon as /ready said yes (POST /api/sources), which must not be
// refused. Each start is a whole process group, stopped with SIGTERM before the next.
//   npm run bench:startup

import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { median } from './whole-process.js'

const runs = Number(process.env.BENCH_RUNS ?? 3)
const existing = mkdtempSync(join(tmpdir(), 'concord-startup-'))
writeFileSync(join(existing, 'rows.json'), JSON.stringify([{ id: 1, amount: '2.50' }]))

interface Start {
  readyMs: number
  firstRequest: number
}

async function start(dataDir: string, port: number): Promise<Start> {
  const t0 = performance.now()
  const child = spawn('npm', ['start', '--silent'], {
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    stdio: 'ignore',
    detached: true,
  })
  const exited = new Promise((done) => child.on('exit', done))
  try {
    for (;;) {
      const res = await fetch(`http://127.0.0.1:${port}/ready`).catch(() => undefined)
      if (res?.status === 200) break
      if (performance.now() - t0 > 60_000) throw new Error('not ready after 60 s')
      await new Promise((r) => setTimeout(r, 10))
    }
    const readyMs = performance.now() - t0
    const first = await fetch(`http://127.0.0.1:${port}/api/sources`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ alias: `rows_${port}`, type: 'json', path: 'rows.json' }),
    })
    return { readyMs, firstRequest: first.status }
  } finally {
    process.kill(-child.pid!, 'SIGTERM')
    await exited
  }
}

const fresh: Start[] = []
const again: Start[] = []
await start(existing, 18700) // the existing folder's first init is not what this measures
for (let k = 0; k < runs; k++) {
  const dir = mkdtempSync(join(tmpdir(), 'concord-fresh-'))
  writeFileSync(join(dir, 'rows.json'), '[]')
  fresh.push(await start(dir, 18701 + 2 * k))
  rmSync(dir, { recursive: true, force: true })
  again.push(await start(existing, 18702 + 2 * k))
}
rmSync(existing, { recursive: true, force: true })
for (const [name, xs] of [
  ['fresh data folder', fresh],
  ['existing data folder', again],
] as const)
  console.log(
    `npm start to /ready, ${name}: median ${median(xs.map((x) => x.readyMs)).toFixed(0)} ms ` +
      `(${xs.map((x) => x.readyMs.toFixed(0)).join(', ')}); first request after /ready: ${xs.map((x) => x.firstRequest).join(', ')}`,
  )
