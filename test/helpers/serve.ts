// A real `concord serve` process for tests that need one: a restart, a crash, several instances.
// Started from the built JavaScript on a free loopback port, ready when /ready answers; killed at
// the test's end if it is still running.

import { type ChildProcess, spawn } from 'node:child_process'
import { createServer } from 'node:net'
import { join, resolve } from 'node:path'
import type { Test } from 'tap'

const root = resolve(import.meta.dirname, '../..')

export async function freePort(): Promise<number> {
  return new Promise((ok) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => ok(port))
    })
  })
}

export interface Serve {
  base: string
  child: ChildProcess
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/** `concord serve` with `env` over the test's environment (DATA_DIR, or DATABASE_URL), ready. */
export async function serve(t: Test, env: Record<string, string>): Promise<Serve> {
  const port = await freePort()
  const child = spawn(process.execPath, [join(root, 'bin/concord.js'), 'serve'], {
    env: { ...process.env, PORT: String(port), LOG_LEVEL: 'warn', MAX_EVENT_LOOP_DELAY_MS: '0', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.on('exit', (code, signal) => done({ code, signal })),
  )
  t.teardown(() => {
    child.kill('SIGKILL')
  })
  const base = `http://127.0.0.1:${port}`
  const until = Date.now() + 120_000
  while (!(await fetch(`${base}/ready`).catch(() => null))?.ok) {
    if (child.exitCode !== null) throw new Error('concord serve exited')
    if (Date.now() > until) throw new Error('concord serve not ready')
    await new Promise((r) => setTimeout(r, 100))
  }
  return { base, child, exited }
}

/** A JSON request to a served instance: its status and parsed body (null for 204). */
export async function call<T = any>( // eslint-disable-line @typescript-eslint/no-explicit-any
  base: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const res = await fetch(base + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: res.status, body: (res.status === 204 ? null : await res.json()) as T }
}
