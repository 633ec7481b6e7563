// `concord exceptions …` from a shell against a running service over loopback HTTP: list (table
// and JSON, filters, pages), show, assign, comment, write-off, match with an adjustment, unmatch;
// every subcommand's --help; the service's refusals as exit 1 with its message, bad usage as 2.

import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import t from 'tap'
import { testApp } from './helpers/app.js'
import { byKey, completedRun, dayOne, registerBankSources, saveRecipe, allExceptions } from './helpers/exceptions.js'

const exec = promisify(execFile)
const bin = new URL('../bin/concord.js', import.meta.url).pathname

t.test('concord exceptions works the queue of a running service', async (t) => {
  const { app } = await testApp(t, { files: { 'bank.csv': dayOne.bank, 'invoices.csv': dayOne.invoices } })
  await registerBankSources(app)
  const run = await completedRun(app, { recipe_id: await saveRecipe(app) })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  const e = byKey(await allExceptions(app))
  const concord = async (...args: string[]) => {
    try {
      const { stdout, stderr } = await exec(process.execPath, [bin, 'exceptions', ...args], {
        env: { ...process.env, CONCORD_URL: url },
      })
      return { code: 0, stdout, stderr }
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string }
      return { code: e.code, stdout: e.stdout, stderr: e.stderr }
    }
  }

  const table = await concord('list', '--reason', 'fee_variance', '--sort', 'amount', '--order', 'asc')
  t.equal(table.code, 0, table.stderr)
  t.same(
    table.stdout
      .trim()
      .split('\n')
      .map((l) => l.trim().split(/\s+/).slice(1, 5)),
    [
      ['side', 'record', 'reason', 'at'],
      ['left', 'T2', 'fee_variance', '3.00'],
      ['right', 'I2', 'fee_variance', '3.00'],
      ['left', 'T8', 'fee_variance', '5.00'],
      ['right', 'I8', 'fee_variance', '5.00'],
    ],
  )
  const first = JSON.parse((await concord('list', '--limit', '2', '--sort', 'amount', '--json', '--count')).stdout)
  t.equal(first.items.length, 2)
  t.equal(first.total, 11)
  const next = await concord('list', '--limit', '2', '--sort', 'amount', '--cursor', first.next_cursor, '--json')
  t.same(
    JSON.parse(next.stdout).items.map((x: { amount_at_risk: string }) => x.amount_at_risk),
    ['200.00', '75.25'],
  )
  t.match((await concord('list', '--limit', '1')).stdout, /more: --cursor \S+/)

  const shown = await concord('show', String(e.T4.id))
  t.match(shown.stdout, /T4\s+date_outside_window/)
  t.match(shown.stdout, /why: closest candidate I4 failed r\.invoice_date BETWEEN/)

  t.equal((await concord('assign', String(e.T5.id), 'ana', '--version', '1')).code, 0)
  const stale = await concord('assign', String(e.T5.id), 'bo', '--version', '1')
  t.equal(stale.code, 1)
  t.match(stale.stderr, /^version_conflict: .*version 2/)
  t.equal((await concord('comment', String(e.T5.id), 'asked', 'the', 'bank')).stdout.trim(), 'comment added')
  const off = await concord('write-off', String(e.I5.id), '--reason', 'bank charge', '--json')
  t.match(JSON.parse(off.stdout), { status: 'resolved', resolution: 'written_off' })
  const matched = await concord(
    'match',
    String(e.T2.id),
    String(e.I2.id),
    '--adjustment',
    '3.00',
    '--adjustment-reason',
    'acquirer fee',
  )
  t.equal(matched.code, 0, matched.stderr)
  t.match(matched.stdout, /matched \(group .*, difference 3\.00\)/)
  const refused = await concord('match', String(e.T3.id), String(e.I3.id))
  t.equal(refused.code, 1)
  t.match(refused.stderr, /amounts_disagree: left 500.00 and right 450.00 differ by 50.00.*\n {2}book the difference/)
  const undone = await concord('unmatch', '--run', run.id, '--match', 'm0000001', '--reason', 'wrong customer')
  t.match(undone.stdout, /open again:\n.*\n.*T1\s+unmatched_by_operator/)
  const detail = (await app.inject({ url: `/api/exceptions/${e.T5.id}` })).json()
  t.match(detail, { exception: { assignee: 'ana' }, comments: [{ detail: { text: 'asked the bank' } }] })

  for (const command of ['list', 'show', 'assign', 'comment', 'resolve', 'accept', 'write-off', 'match', 'unmatch']) {
    const help = await concord(command, '--help')
    t.equal(help.code, 0)
    t.match(help.stdout, new RegExp(`^usage: concord exceptions ${command}`), `${command} --help`)
  }
  t.match((await concord('--help')).stdout, /commands:\n {2}list/)
  const usage = await concord('write-off', String(e.T4.id))
  t.equal(usage.code, 2)
  t.match(usage.stderr, /--reason is required/)
  t.equal((await concord('frobnicate')).code, 2)
  const down = await exec(process.execPath, [bin, 'exceptions', 'list', '--url', 'http://127.0.0.1:1'], {}).catch(
    (err: { code: number; stderr: string }) => err,
  )
  t.match(down, { code: 1, stderr: /cannot reach http:\/\/127\.0\.0\.1:1/ })
})
