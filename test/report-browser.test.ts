// The run report in a real headless Chromium (Debian's package, driven by playwright-core): the
// page is loaded from a listening server, its figures are read off the rendered page and checked
// against the run's summary (counts, match rate, amounts to the cent, per pass), it fetches
// nothing but itself, data cannot inject markup into it, and it prints to a PDF with a page per
// section. A screenshot and the PDF are kept in test-artifacts/report/ (git-ignored). Without
// Chromium the tests are skipped, visibly, with the reason.

import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { type BrowserContext, chromium, type Page } from 'playwright-core'
import t, { type Test } from 'tap'
import { acquirerRecipe } from './helpers/recipes.js'
import { datasetsDir, hasDatasets } from './helpers/app.js'
import { completedRun, exampleFiles, examplesRecipe, reportApp } from './helpers/report.js'

const CHROMIUM = '/usr/bin/chromium'
const browserSkip = existsSync(CHROMIUM)
  ? false
  : `no Chromium at ${CHROMIUM} (apt-get install -y chromium): the report is not checked in a browser`
const artifacts = new URL('../test-artifacts/report/', import.meta.url).pathname
const acquirerDir = join(datasetsDir, 'acquirer-settlement')

/** A fresh browser profile each time, nothing in the background that could reach out. */
async function browser(t: Test): Promise<BrowserContext> {
  const profile = mkdtempSync(join(tmpdir(), 'concord-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
  t.teardown(async () => {
    await context.close()
    rmSync(profile, { recursive: true, force: true })
  })
  return context
}

interface Summary {
  match_rate: number
  matches: number
  ambiguous: number
  left: Record<string, number | string | null>
  right: Record<string, number | string | null>
  passes: Record<string, number | string | null>[]
}

/** Loads the report from the listening app; every request the page makes is recorded. */
async function openReport(t: Test, app: FastifyInstance, runId: string) {
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  const page = await (await browser(t)).newPage()
  const requests: string[] = []
  page.on('request', (r) => requests.push(r.url()))
  const url = `${base}/api/runs/${runId}/report`
  const res = await page.goto(url)
  t.equal(res?.status(), 200, 'the report loads')
  t.match(res?.headers()['content-type'], /^text\/html/)
  return { page, requests, url, base }
}

/**
 * A figure as the page shows it: its visible text, which must be its data-value written for
 * reading (digits grouped by commas, nothing else changed: no rounding of a cent).
 */
async function shown(t: Test, page: Page, selector: string): Promise<string> {
  const el = page.locator(selector)
  t.equal(await el.count(), 1, `one ${selector}`)
  const value = (await el.getAttribute('data-value')) ?? ''
  const text = (await el.innerText()).trim()
  if (value === '') t.equal(text, '—', `${selector}: no value shows as a dash`)
  else if (/^-?\d+(\.\d+)?$/.test(value)) t.equal(text.replaceAll(',', ''), value, `${selector} shows ${value}`)
  return value
}

/** Every figure on the page checked against the run's summary. */
async function checkAgainstSummary(t: Test, page: Page, s: Summary): Promise<void> {
  const rate = page.locator('[data-figure="match-rate"]')
  t.equal(await rate.getAttribute('data-value'), String(s.match_rate), 'match rate')
  t.equal(await rate.innerText(), `${(s.match_rate * 100).toFixed(2)} %`, 'match rate shown as a percentage')
  t.equal(await shown(t, page, '[data-figure="run-matches"]'), String(s.matches))
  t.equal(await shown(t, page, '[data-figure="run-ambiguous"]'), String(s.ambiguous))
  for (const side of ['left', 'right'] as const) {
    for (const name of ['rows', 'matched', 'ambiguous', 'unmatched', 'amount', 'matched_amount', 'unmatched_amount']) {
      const value = await shown(t, page, `tr[data-side="${side}"] [data-figure="${name}"]`)
      t.equal(value, String(s[side][name] ?? ''), `${side} ${name}: ${s[side][name]}`)
    }
    // the unmatched records by reason add up to the summary's unmatched, records and amount
    const total = `[data-total="${side}"]`
    if (Number(s[side].unmatched) > 0) {
      t.equal(await shown(t, page, `${total} [data-figure="records"]`), String(s[side].unmatched))
      t.equal(await shown(t, page, `${total} [data-figure="amount"]`), String(s[side].unmatched_amount ?? ''))
      const rows = await page
        .locator(`table[data-reasons="${side}"] tr[data-reason] [data-figure="records"]`)
        .evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-value'))))
      t.equal(
        rows.reduce((a, b) => a + b, 0),
        s[side].unmatched,
        `${side}: the reasons' rows add up`,
      )
    }
  }
  t.equal(await page.locator('table[data-table="passes"] tr[data-pass]').count(), s.passes.length, 'a row per pass')
  for (const p of s.passes) {
    const row = `table[data-table="passes"] tr[data-pass="${p.name}"]`
    t.equal(await shown(t, page, `${row} [data-figure="status"]`), p.status)
    for (const name of ['matches', 'ambiguous', 'left_matched', 'left_amount', 'right_matched', 'right_amount'])
      t.equal(await shown(t, page, `${row} [data-figure="${name}"]`), String(p[name] ?? ''), `pass ${p.name} ${name}`)
  }
  // the histograms count every match, each in one bin
  for (const name of ['amount', 'days']) {
    const fig = page.locator(`figure[data-histogram="${name}"]`)
    const counted = Number(await fig.getAttribute('data-counted'))
    t.equal(counted + Number(await fig.getAttribute('data-missing')), s.matches, `${name} deltas: every match`)
    const bars = await fig
      .locator('rect.bar')
      .evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-count'))))
    t.equal(
      bars.reduce((a, b) => a + b, 0),
      counted,
      `${name} histogram: the bars hold every value`,
    )
  }
}

/** Saves what a person would look at: the page, and what the browser's print makes of it. */
async function keep(t: Test, page: Page, name: string): Promise<void> {
  mkdirSync(artifacts, { recursive: true })
  const png = join(artifacts, `${name}.png`)
  const pdf = join(artifacts, `${name}.pdf`)
  await page.screenshot({ path: png, fullPage: true })
  await page.emulateMedia({ media: 'print' })
  t.notOk(await page.locator('.hint').isVisible(), 'the on-screen hint is not printed')
  await page.pdf({ path: pdf, format: 'A4', printBackground: true })
  await page.emulateMedia({ media: 'screen' })
  t.equal(readFileSync(png).subarray(1, 4).toString(), 'PNG', `screenshot ${png}`)
  const bytes = readFileSync(pdf)
  t.equal(bytes.subarray(0, 5).toString(), '%PDF-', `printed ${pdf}`)
  // each of the five sections starts a page (the print stylesheet)
  const pages = bytes.toString('latin1').match(/\/Type\s*\/Page\b/g)?.length ?? 0
  t.ok(pages >= 5, `${pages} printed pages`)
}

t.test(
  'the examples run: the rendered figures are the summary, and the page prints',
  { skip: browserSkip },
  async (t) => {
    const app = await reportApp(t, { files: exampleFiles() })
    const run = await completedRun(
      app,
      [
        ['bank', 'csv', 'bank.csv'],
        ['invoices', 'csv', 'invoices.csv'],
      ],
      examplesRecipe,
    )
    t.equal(run.status, 'completed', JSON.stringify(run.error))
    const { page, requests, url } = await openReport(t, app, run.id)
    await checkAgainstSummary(t, page, run.summary as Summary)

    t.equal(await page.locator('h1').innerText(), 'Run report: bank-vs-invoices')
    t.same(
      await page
        .locator('table[data-top="left"] tr[data-key]')
        .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-key'))),
      ['T-0010', 'T-0008', 'T-0011'],
      'the largest unmatched left records first',
    )
    t.equal(
      await page.locator('table[data-top="left"] tr[data-key="T-0010"] [data-figure="amount"]').innerText(),
      '4,950.00',
    )
    const summary = run.summary as Summary
    const aging = await page
      .locator('[data-aging="buckets"] [data-figure="count"]')
      .evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-value'))))
    t.equal(aging.length, 4, 'exceptions by age: four buckets')
    t.equal(
      aging.reduce((a, b) => a + b, 0),
      Number(summary.left.unmatched) + Number(summary.right.unmatched) + summary.ambiguous,
      'exceptions by age: every unmatched record and held match is an open exception',
    )
    t.ok(await page.locator('figure[data-histogram="amount"] svg').isVisible(), 'the amount histogram is drawn')
    t.ok(
      requests.every((r) => r === url || r.startsWith(new URL(url).origin)),
      `nothing fetched from elsewhere: ${requests.join(', ')}`,
    )
    t.equal(requests.filter((r) => !r.endsWith('/favicon.ico')).length, 1, 'no request but the page itself')
    await keep(t, page, 'examples')
  },
)

t.test('markup in the data stays text in the browser', { skip: browserSkip }, async (t) => {
  const key = '<img src=x onerror="window.pwned=1">'
  const app = await reportApp(t, {
    files: {
      'l.csv': `id,ref,amount\n"${key.replaceAll('"', '""')}",A,10.00\nL2,B,20.00\n`,
      'r.csv': 'id,ref,amount\nR1,B,20.00\n',
    },
  })
  const recipe = {
    name: '<script>window.pwned=2</script>',
    left: { source: 'l', key: ['id'] },
    right: { source: 'r', key: ['id'] },
    passes: [{ name: 'p', pattern: '1:1', when: 'l.ref = r.ref AND l.amount = r.amount' }],
  }
  const run = await completedRun(
    app,
    [
      ['l', 'csv', 'l.csv'],
      ['r', 'csv', 'r.csv'],
    ],
    recipe,
  )
  const { page } = await openReport(t, app, run.id)
  t.equal(await page.evaluate(() => (globalThis as unknown as { pwned?: number }).pwned), undefined, 'nothing ran')
  t.equal(await page.locator('img, script, iframe, object').count(), 0, 'no element from data')
  t.equal(await page.locator('h1 [data-figure="recipe"]').innerText(), recipe.name, 'the recipe name, as text')
  t.equal(await page.locator('table[data-top="left"] td.key').first().innerText(), key, 'the record key, as text')
})

t.test(
  'acquirer settlement: the rendered figures are the summary',
  { skip: browserSkip || (hasDatasets && existsSync(acquirerDir) ? false : `no datasets at ${acquirerDir}`) },
  async (t) => {
    const runsDir = mkdtempSync(join(tmpdir(), 'concord-report-runs-'))
    t.teardown(() => rmSync(runsDir, { recursive: true, force: true }))
    const app = await reportApp(t, { dataDir: datasetsDir, env: { RUNS_DIR: runsDir } })
    const run = await completedRun(
      app,
      [
        ['ledger', 'csv', 'acquirer-settlement/ledger-midaz.csv'],
        ['settlement', 'json', 'acquirer-settlement/acquirer-settlement.json'],
      ],
      acquirerRecipe,
    )
    t.equal(run.status, 'completed', JSON.stringify(run.error))
    t.match(run.summary, { matches: 800, ambiguous: 15, left: { rows: 1000, matched: 800, unmatched: 200 } })
    const { page } = await openReport(t, app, run.id)
    await checkAgainstSummary(t, page, run.summary as Summary)
    const top = await page
      .locator('table[data-top="left"] tr[data-key] [data-figure="amount"]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-value')!))
    t.equal(top.length, 10, 'ten largest unmatched ledger entries')
    const cents = top.map((a) => Math.abs(Number(a.replace('.', ''))))
    t.same(
      cents,
      [...cents].sort((a, b) => b - a),
      'largest first',
    )
    await keep(t, page, 'acquirer-settlement')
  },
)
