// Shared by the run report's tests: an app that may be handed an exception-aging provider, and a
// completed run of the project's examples (bank.csv against invoices.csv, the README's recipe).

import { readFileSync } from 'node:fs'
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import type { ExceptionAging } from '../../src/runs/report/report.js'
import { freshDatabase, testEnv } from './app.js'
import { waitForRun } from './runs.js'

export const examples = new URL('../../examples/', import.meta.url).pathname

/** The README's recipe over the examples: exact, then within 5.00 (fees), then by date window. */
export const examplesRecipe = {
  name: 'bank-vs-invoices',
  left: { source: 'bank', key: ['txn_id'] },
  right: { source: 'invoices', key: ['invoice_id'] },
  passes: [
    { name: 'exact', pattern: '1:1', when: 'l.reference = r.ref AND l.amount = r.total_amount' },
    { name: 'fees', pattern: '1:1', when: 'l.reference = r.ref AND ABS(l.amount - r.total_amount) <= 5' },
    {
      name: 'window',
      pattern: '1:1',
      when: "l.amount = r.total_amount AND r.invoice_date BETWEEN l.txn_date - INTERVAL '3 days' AND l.txn_date",
    },
  ],
}

/** An app over `files` (or `dataDir`), with the report's exception aging when given. */
export async function reportApp(
  t: Test,
  opts: { files?: Record<string, string>; dataDir?: string; env?: Record<string, string>; aging?: ExceptionAging } = {},
): Promise<FastifyInstance> {
  const dataDir = opts.dataDir ?? t.testdir(opts.files ?? {})
  const config = loadConfig({ DATA_DIR: dataDir, ...testEnv, ...opts.env })
  const database = await freshDatabase()
  const app = await buildApp({ config, database, logger: false, exceptionAging: opts.aging })
  t.teardown(async () => {
    await app.close()
    await database.close()
  })
  await app.ready()
  return app
}

export const exampleFiles = () => ({
  'bank.csv': readFileSync(`${examples}bank.csv`, 'utf8'),
  'invoices.csv': readFileSync(`${examples}invoices.csv`, 'utf8'),
})

/** Registers two CSV files of the data folder and runs `recipe` to its end; returns the run. */
export async function completedRun(
  app: FastifyInstance,
  sources: [alias: string, type: string, path: string][],
  recipe: object,
  extra: Record<string, unknown> = {},
) {
  for (const [alias, type, path] of sources) {
    const res = await app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type, path } })
    if (res.statusCode !== 201) throw new Error(res.body)
  }
  const started = await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe, ...extra } })
  if (started.statusCode !== 202) throw new Error(started.body)
  return waitForRun(app, started.json().id)
}
