// How `concord reconcile` starts on large files (src/runs/cli-args.ts): the engine's helper
// threads before it loads its modules (warmForFiles) — which threads for which arguments, and that
// the partitioning helper it started is the one the engine then finds, running — and glibc's huge
// pages, seen from inside the started process: set by bin/concord.js's shebang line when it is
// started as a command, and otherwise by starting again (hugePagesEnv).

import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join } from 'node:path'
import t from 'tap'
import { partitionHelper } from '../src/engine/match/partition-helper.js'
import { hugePagesEnv, warmForFiles } from '../src/runs/cli-args.js'

const dir = mkdtempSync(join(tmpdir(), 'concord-warm-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

const small = join(dir, 'small.csv')
writeFileSync(small, 'id,amount\n1,2.00\n')
const large = join(dir, 'large.csv')
// a little over 4 MiB: the threshold
const rows = ['id,ref,amount,booked']
for (let i = 0; rows.length < 130_000; i++) rows.push(`T${i},REF-${1_000_000 + i},${(i % 9973) + 0.25},2025-01-02`)
writeFileSync(large, rows.join('\n'))
const recipe = join(dir, 'recipe.json')

t.test('which helpers start', async (t) => {
  const none = { partition: false, sets: false }
  t.same(await warmForFiles(['--left', small, '--right', small, '--recipe', recipe, '--out', dir]), none, 'small files')
  t.same(await warmForFiles(['--left', 'bank', '--right', 'invoices', '--recipe', recipe]), none, 'aliases')
  t.same(await warmForFiles(['--left', large, '--right', small]), none, 'arguments the command refuses')
  t.same(await warmForFiles(['--left', large, '--right', small, '--recipe', recipe]), {
    partition: true,
    sets: false,
  })
  t.same(
    await warmForFiles(['--left', small, '--right', large, '--recipe', recipe, '--out', dir, '--format', 'arrow']),
    {
      partition: true,
      sets: false,
    },
  )
  t.same(await warmForFiles(['--left', small, '--right', large, '--recipe', recipe, '--out', dir]), {
    partition: true,
    sets: true,
  })
  t.equal(await partitionHelper().ready(), true, 'the engine finds the helper started, running')
})

// 16 MiB in one row: large by size, quick to reconcile
const huge = join(dir, 'huge.csv')
writeFileSync(huge, `id,amount,memo\nL1,10.00,${'x'.repeat(16 * 1024 * 1024)}\nL2,5.00,short\n`)
const right = join(dir, 'right.csv')
writeFileSync(right, 'id,amount\nR1,10.00\nR2,7.00\n')
writeFileSync(
  recipe,
  JSON.stringify({
    name: 'start',
    left: { source: 'l', key: ['id'] },
    right: { source: 'r', key: ['id'] },
    passes: [{ name: 'amount', pattern: '1:1', when: 'l.amount = r.amount' }],
  }),
)

t.test('huge pages: when the command starts again', async (t) => {
  const argv = (left: string) => ['--left', left, '--right', right, '--recipe', recipe]
  t.same(hugePagesEnv(argv(huge), { PATH: '/bin' }), { PATH: '/bin', GLIBC_TUNABLES: 'glibc.malloc.hugetlb=1' })
  t.same(hugePagesEnv(argv(huge), { GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' }), {
    GLIBC_TUNABLES: 'glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1',
  })
  t.equal(hugePagesEnv(argv(huge), { GLIBC_TUNABLES: 'glibc.malloc.hugetlb=0' }), null, 'a choice already made')
  t.equal(hugePagesEnv(argv(huge), { GLIBC_TUNABLES: 'glibc.malloc.hugetlb=1:' }), null, 'by the shebang line')
  t.equal(hugePagesEnv(argv(huge), {}, 'darwin'), null, 'not Linux')
  t.equal(hugePagesEnv(argv(large), {}), null, 'a smaller file')
  t.equal(hugePagesEnv(argv('bank'), {}), null, 'an alias')
  t.equal(hugePagesEnv(['--left', huge], {}), null, 'arguments the command refuses')
})

/**
 * Runs `command` (`concord reconcile` of the huge file) with `tunables` and returns the process id
 * and GLIBC_TUNABLES of every process image it started, as a preload noted them (in its main
 * thread: NODE_OPTIONS reaches worker threads too).
 */
function startedImages(command: string[], tunables?: string): string[][] {
  const seen = join(dir, 'seen.txt')
  rmSync(seen, { force: true })
  const note = join(dir, 'note.mjs')
  writeFileSync(
    note,
    `import { appendFileSync } from 'node:fs'\nimport { isMainThread } from 'node:worker_threads'\n` +
      `if (isMainThread) appendFileSync(${JSON.stringify(seen)}, [process.pid, process.env.GLIBC_TUNABLES ?? '-', ` +
      `process.execArgv.includes('--initial-old-space-size=128')].join(' ') + '\\n')\n`,
  )
  const { GLIBC_TUNABLES: _, ...env } = process.env
  const run = spawnSync(
    command[0],
    [...command.slice(1), 'reconcile', '--left', huge, '--right', right, '--recipe', recipe, '--json'],
    {
      env: {
        ...env,
        ...(tunables === undefined ? {} : { GLIBC_TUNABLES: tunables }),
        NODE_OPTIONS: `--import=${note}`,
        // the shebang line's `node` is the one running the tests
        PATH: [dirname(process.execPath), env.PATH].join(delimiter),
      },
      encoding: 'utf8',
    },
  )
  if (run.status !== 0) throw new Error(`${command.join(' ')} failed: ${run.stderr}`)
  if ((JSON.parse(run.stdout) as { matches: number }).matches !== 1) throw new Error(`the run itself: ${run.stdout}`)
  return readFileSync(seen, 'utf8')
    .trim()
    .split('\n')
    .map((line) => line.split(' '))
}

t.test('huge pages: the command started as `concord`', { skip: process.platform !== 'linux' }, async (t) => {
  const images = startedImages(['bin/concord.js'])
  t.equal(images.length, 1, 'started once: its shebang line set them')
  t.equal(images[0][1], 'glibc.malloc.hugetlb=1:')
  t.equal(images[0][2], 'true', "and V8's old generation starts at 128 MB")
  // glibc takes the last value a tunable is given: the caller's
  t.same(
    startedImages(['bin/concord.js'], 'glibc.malloc.hugetlb=0').map(([, tunables]) => tunables),
    ['glibc.malloc.hugetlb=1:glibc.malloc.hugetlb=0'],
  )
})

t.test(
  'huge pages: the command started as `node bin/concord.js`',
  { skip: process.platform !== 'linux' },
  async (t) => {
    const images = startedImages([process.execPath, 'bin/concord.js'])
    if (typeof (process as { execve?: unknown }).execve !== 'function') {
      t.same(
        images.map(([, tunables]) => tunables),
        ['-'],
        'no process.execve: runs as it is',
      )
      return
    }
    t.equal(images.length, 2, 'started once more')
    t.equal(images[0][0], images[1][0], 'the same process')
    t.same(
      images.map(([, tunables, heap]) => [tunables, heap]),
      [
        ['-', 'false'],
        ['glibc.malloc.hugetlb=1', 'true'],
      ],
    )
  },
)
