// The Docker build context (issue 19): what `docker build .` would send, computed from this
// working tree with .dockerignore applied by a library that follows Docker's matching rules. The
// installed and built trees and the data folder stay out; everything the Dockerfile copies is in.
// No Docker engine runs in CI, so the context is checked rather than built.

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { createRequire } from 'node:module'
import type { Ignore } from '@balena/dockerignore'
import t from 'tap'

// CommonJS whose types declare a default export: required, so the factory is what TypeScript sees
const ignore = createRequire(import.meta.url)('@balena/dockerignore') as () => Ignore

const root = new URL('..', import.meta.url).pathname

/** Every path under `dir`, relative to the root; ignored folders are not descended into. */
function paths(dir: string, ignored: (path: string) => boolean, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = relative(root, join(dir, entry.name))
    out.push(path)
    // a folder Docker leaves out may still hold a re-included file (`!a/b`); none of ours does
    if (entry.isDirectory() && !ignored(path)) paths(join(dir, entry.name), ignored, out)
  }
  return out
}

t.test('the build context leaves out node_modules, data and dist, and holds what the Dockerfile copies', async (t) => {
  const rules = ignore().add(readFileSync(join(root, '.dockerignore'), 'utf8'))
  const ignored = (path: string) => rules.ignores(path)
  const sent = paths(root, ignored).filter((p) => !ignored(p))

  for (const dir of ['node_modules', 'dist', 'data', '.git', 'test', 'bench', '.tap', 'coverage']) {
    t.same(
      sent.filter((p) => p === dir || p.startsWith(`${dir}/`)),
      [],
      `${dir}/ is not in the context`,
    )
  }
  // what the tests would find in a working tree (node_modules and dist exist here: npm ci built them)
  t.ok(existsSync(join(root, 'node_modules')) && ignored('node_modules/fastify/package.json'))
  t.ok(ignored('data/db/PG_VERSION') && ignored('.env') && ignored('bench/data/recon-1000-left.csv'))

  const copied = readFileSync(join(root, 'Dockerfile'), 'utf8')
    .split('\n')
    .filter((line) => /^COPY\s/.test(line) && !line.includes('--from='))
    .flatMap((line) => line.trim().split(/\s+/).slice(1, -1))
  t.ok(copied.length >= 8, `the Dockerfile copies ${copied.join(', ')}`)
  for (const path of copied) {
    t.ok(existsSync(join(root, path)), `${path} exists`)
    if (statSync(join(root, path)).isDirectory()) {
      const inside = sent.filter((p) => p.startsWith(`${path}/`) && statSync(join(root, p)).isFile())
      t.ok(inside.length > 0, `${path}/ is sent with its files (${inside.length})`)
    } else t.ok(sent.includes(path), `${path} is sent`)
  }
})
