// What a process loads at start (issue 17): the built modules import the packages made of hundreds
// of small files (typebox, apache-arrow, pgsql-ast-parser) from dist/vendor/, one file each, and a
// `concord reconcile` on CSV files loads no PostgreSQL driver and no Parquet reader. Checked on the modules the process
// really loads, recorded by a module hook, not on the build's text alone.

import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'

const run = promisify(execFile)
const bin = new URL('../bin/concord.js', import.meta.url).pathname

const HOOKS = `import { appendFileSync } from 'node:fs'
export async function load(url, context, next) {
  appendFileSync(process.env.MODULE_LOG, url + '\\n')
  return next(url, context)
}
`
const REGISTER = `import { register } from 'node:module'
register(new URL('./hooks.mjs', import.meta.url))
`

t.test('concord reconcile on CSV files loads vendored bundles, no database driver, no Parquet reader', async (t) => {
  const dir = t.testdir({
    'hooks.mjs': HOOKS,
    'register.mjs': REGISTER,
    'left.csv': 'id,amount,ref\nL1,10.00,A\nL2,5.00,B\n',
    'right.csv': 'id,amount,ref\nR1,10.00,A\nR2,7.00,C\n',
    'recipe.json': JSON.stringify({
      name: 'tiny',
      left: { source: 'left', key: ['id'] },
      right: { source: 'right', key: ['id'] },
      passes: [{ name: 'ref', pattern: '1:1', when: 'l.ref = r.ref AND l.amount = r.amount' }],
    }),
  })
  const log = join(dir, 'modules.log')
  const args = [
    '--left',
    join(dir, 'left.csv'),
    '--right',
    join(dir, 'right.csv'),
    '--recipe',
    join(dir, 'recipe.json'),
  ]
  const { stdout } = await run(
    process.execPath,
    ['--import', join(dir, 'register.mjs'), bin, 'reconcile', ...args, '--out', join(dir, 'out'), '--json'],
    { env: { ...process.env, MODULE_LOG: log, DATA_DIR: join(dir, 'data') } },
  )
  t.equal((JSON.parse(stdout) as { matches: number }).matches, 1, 'the run itself went through')
  const loaded = (await readFile(log, 'utf8')).trim().split('\n')
  t.ok(
    loaded.some((u) => u.includes('/dist/vendor/typebox')),
    'typebox from dist/vendor',
  )
  t.ok(
    loaded.some((u) => u.includes('/dist/vendor/apache-arrow')),
    'apache-arrow from dist/vendor',
  )
  for (const pkg of [
    'typebox',
    'apache-arrow',
    'pgsql-ast-parser',
    'pg',
    'pg-cursor',
    'pg-copy-streams',
    'kysely',
    // the Parquet reader, when no side is a Parquet file
    'hyparquet',
  ]) {
    t.same(
      loaded.filter((u) => u.includes(`/node_modules/${pkg}/`)),
      [],
      `nothing loaded from node_modules/${pkg}`,
    )
  }
  t.notOk(
    loaded.some((u) => u.includes('/src/') && u.endsWith('.ts')),
    'no TypeScript source loaded',
  )
})
