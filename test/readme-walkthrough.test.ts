// The README's walkthrough, run as written (issue 19 item 5): every ```sh block marked
// `<!-- walkthrough -->` is taken from README.md in order and run by bash against a live
// `concord serve`, from a folder holding the project's examples/, so the README and the code
// cannot drift. Every curl must answer 2xx (curl --fail-with-body). Two substitutions only: the
// server's port for localhost:3000, and this checkout's bin/concord.js for `npx concord`.

import { execFile, spawn, spawnSync } from 'node:child_process'
import { existsSync, readFileSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { testEnv } from './helpers/app.js'

const run = promisify(execFile)
const root = new URL('..', import.meta.url).pathname
const bin = join(root, 'bin/concord.js')

const missing = ['bash', 'curl', 'jq', 'openssl'].filter((tool) => spawnSync('which', [tool]).status !== 0)

/** The walkthrough's blocks, in README order. */
export function walkthroughBlocks(readme: string): string[] {
  const blocks: string[] = []
  const marked = /<!-- walkthrough -->\s*```sh\n([\s\S]*?)\n```/g
  for (let m = marked.exec(readme); m; m = marked.exec(readme)) blocks.push(m[1])
  return blocks
}

t.test(
  "the README's walkthrough runs top to bottom against a live server",
  { skip: missing.length ? `needs ${missing.join(', ')} on PATH` : false },
  async (t) => {
    const blocks = walkthroughBlocks(readFileSync(join(root, 'README.md'), 'utf8'))
    t.ok(blocks.length >= 10, `${blocks.length} walkthrough blocks`)

    const dir = t.testdir({})
    symlinkSync(join(root, 'examples'), join(dir, 'examples'))
    const port = 20_000 + Math.floor(Math.random() * 20_000)
    const server = spawn(process.execPath, [bin, 'serve'], {
      cwd: dir,
      env: { ...process.env, ...testEnv, DATA_DIR: join(dir, 'data'), PORT: String(port), HOST: '127.0.0.1' },
      stdio: 'ignore',
    })
    t.teardown(() => {
      server.kill('SIGTERM')
    })
    for (let tries = 0; ; tries++) {
      const ready = await fetch(`http://127.0.0.1:${port}/ready`).catch(() => undefined)
      if (ready?.ok) break
      if (tries > 300) throw new Error('concord serve did not become ready')
      await new Promise((r) => setTimeout(r, 100))
    }

    const script = [
      'set -euo pipefail',
      // a refused call stops the walkthrough, with the answer that says why
      'curl() { command curl --fail-with-body --show-error "$@"; }',
      ...blocks,
    ]
      .join('\n')
      .replaceAll('localhost:3000', `127.0.0.1:${port}`)
      .replaceAll('npx concord', `${JSON.stringify(process.execPath)} ${JSON.stringify(bin)}`)
    const { stdout } = await run('bash', ['-c', script], { cwd: dir, timeout: 120_000, maxBuffer: 64 * 1024 * 1024 })

    // what the README's comments promise
    t.match(stdout, /"total_rows":4/, 'the January scope of invoices over 1000.00 holds 4 rows')
    t.match(stdout, /idempotent-replayed: true/i, 'the retried registration is a replay')
    t.match(stdout, /"status":"completed"/, 'the run completed')
    t.match(stdout, /"matches":9/, 'with 9 matches')
    t.match(stdout, /"left_keys":\["T-0003"\],"right_keys":\["INV-0003"\]/, 'INV-0003 matched T-0003')
    t.match(stdout, /"record_key":"INV-0010"/, 'INV-0010 is unmatched, with its reason')
    t.match(stdout, /"code":"tolerance_too_wide"/, 'validate_recipe warned about the wide tolerance')
    for (const file of ['unmatched-right.csv', 'matches.arrow', 'ambiguous.csv', 'recipe-v2.json'])
      t.ok(existsSync(join(dir, file)), `${file} written`)
    const cli = readFileSync(join(dir, 'results/matches.csv'), 'utf8').trim().split('\n')
    t.equal(cli.length, 10, 'concord reconcile wrote the 9 matches (and a header)')

    // after the last block a key exists: open mode is over
    const open = await fetch(`http://127.0.0.1:${port}/api/runs`)
    t.equal(open.status, 401)
  },
)
