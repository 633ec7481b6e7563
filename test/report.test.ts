// The run report (GET /api/runs/:id/report): its figures checked against the run's summary and
// against the result pages they summarize, its refusals, the exception-aging seam, escaping of
// everything that comes from data, and the histogram's bins. The page in a real browser:
// report-browser.test.ts; a million matches against the event loop: report-event-loop.test.ts.

import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { amountColumns } from '../src/runs/report/amounts.js'
import { reportFigures } from '../src/runs/report/figures.js'
import { HistogramBuilder, niceStep } from '../src/runs/report/histogram.js'
import { renderReport } from '../src/runs/report/html.js'
import type { RunReport } from '../src/runs/report/report.js'
import { completedRun, exampleFiles, examplesRecipe, reportApp } from './helpers/report.js'
import { waitForRun } from './helpers/runs.js'

const SOURCES: [string, string, string][] = [
  ['bank', 'csv', 'bank.csv'],
  ['invoices', 'csv', 'invoices.csv'],
]

/** Exact units of a decimal string at `scale` places ("-3.50" at 2 → -350). */
const units = (text: string, scale: number) => {
  const [whole, frac = ''] = text.replace('-', '').split('.')
  const n = Number(whole + frac.padEnd(scale, '0'))
  return text.startsWith('-') ? -n : n
}

async function pages(app: FastifyInstance, url: string) {
  return (await app.inject({ method: 'GET', url: `${url}${url.includes('?') ? '&' : '?'}limit=1000` })).json()
}

t.test('the figures agree with the summary and with the result pages they summarize', async (t) => {
  const app = await reportApp(t, { files: exampleFiles() })
  const run = await completedRun(app, SOURCES, examplesRecipe)
  t.equal(run.status, 'completed', JSON.stringify(run.error))
  const s = run.summary
  t.match(s, { matches: 9, left: { unmatched: 3, unmatched_amount: '5715.00' } })

  const res = await app.inject({ method: 'GET', url: `/api/runs/${run.id}/report` })
  t.equal(res.statusCode, 200, res.statusCode === 200 ? 'the report page' : res.body)
  t.match(res.headers['content-type'], /^text\/html; charset=utf-8/)
  t.match(res.headers['content-security-policy'], /default-src 'none'/, 'the page may fetch nothing')
  t.notMatch(
    res.body,
    /<script|<link|@import|url\(|https?:\/\/(?!www\.w3\.org\/2000\/svg)/i,
    'no script, no external resource',
  )
  t.match(res.body, '<span data-figure="match-rate" data-value="0.782609">78.26 %</span>')
  t.match(res.body, /<tr data-side="left">[\s\S]*?data-figure="unmatched_amount" data-value="5715.00">5,715.00</)
  // the service's own provider: the run's open exceptions by age, every unmatched record one
  const counts = [
    ...res.body.matchAll(
      /<tr data-bucket="[^"]*">\s*<td>[^<]*<\/td>\s*<td class="num"><span data-figure="count" data-value="(\d+)"/g,
    ),
  ]
  t.equal(counts.length, 4, 'four age buckets')
  t.equal(
    counts.reduce((n, m) => n + Number(m[1]), 0),
    run.summary.left.unmatched + run.summary.right.unmatched + run.summary.ambiguous,
    'the exceptions by age count every unmatched record and held match',
  )

  const { recipe } = await app.db.selectFrom('runs').select('recipe').where('id', '=', run.id).executeTakeFirstOrThrow()
  const dir = app.runs.resultsDir(run.id)
  const figures = await reportFigures(dir, await amountColumns(dir, recipe), { top: 10, bins: 24 })
  t.same(figures.amount_columns, { left: 'amount', right: 'total_amount' })
  for (const side of ['left', 'right'] as const) {
    const u = figures.unmatched[side]
    t.equal(u.records, s[side].unmatched, `${side}: every unmatched record is counted once`)
    t.equal(u.amount, s[side].unmatched_amount, `${side}: their amounts add up to the summary's, to the cent`)
    t.equal(
      u.by_reason.reduce((a, r) => a + r.records, 0),
      u.records,
    )
    const cents = u.by_reason.reduce((a, r) => a + units(r.amount!, 2), 0)
    t.equal(cents, units(s[side].unmatched_amount, 2), `${side}: the reasons' amounts add up too`)
    // each pass's records as the pages filter them (a record with no candidate is listed under the first pass)
    for (const pass of s.passes) {
      const page = await pages(app, `/api/runs/${run.id}/unmatched/${side}?failed_pass=${pass.name}`)
      const counted = u.by_reason
        .filter((r) => r.pass === pass.name || (r.pass === null && pass.name === s.passes[0].name))
        .reduce((a, r) => a + r.records, 0)
      t.equal(counted, page.total, `${side}, pass ${pass.name}: ${page.total} records`)
    }
    // the largest amounts, as sorting every unmatched record of the pages gives them
    const all = (await pages(app, `/api/runs/${run.id}/unmatched/${side}`)).items as {
      record_key: string
      reason: string
      record: Record<string, string>
    }[]
    const column = figures.amount_columns[side]!
    const sorted = [...all].sort((a, b) => Math.abs(units(b.record[column], 2)) - Math.abs(units(a.record[column], 2)))
    t.same(
      u.top!.map((r) => [r.record_key, r.amount, r.why]),
      sorted.map((r) => [r.record_key, r.record[column], r.reason]),
    )
  }
  t.same(
    figures.unmatched.left.by_reason.map((r) => [r.reason, r.pass, r.conjunct, r.records, r.amount]),
    [
      ['no_candidate', null, null, 1, '125.00'],
      ['failed_conjunct', 'fees', 'ABS(l.amount - r.total_amount) <= 5', 1, '4950.00'],
      [
        'failed_conjunct',
        'window',
        "r.invoice_date BETWEEN l.txn_date - INTERVAL '3 days' AND l.txn_date",
        1,
        '640.00',
      ],
    ],
  )

  // the histograms bin exactly the deltas the match pages give
  const matches = (await pages(app, `/api/runs/${run.id}/matches`)).items as {
    deltas: { amount: string | null; days: number | null }
  }[]
  const amount = figures.deltas.amount
  t.match(amount, { counted: 9, missing: 0, zero: 7, min: '-4.00', max: '0.00', discrete: true })
  for (const bin of amount.bins) {
    const [from, to] = [units(bin.from, 2), units(bin.to, 2)]
    const inBin = matches.filter(
      (m) => m.deltas.amount !== null && units(m.deltas.amount, 2) >= from && units(m.deltas.amount, 2) <= to,
    )
    t.equal(bin.count, inBin.length, `amount bin ${bin.from}..${bin.to}`)
  }
  const days = figures.deltas.days
  t.equal(days.counted + days.missing, s.matches)
  t.same(
    days.bins.map((b) => [b.from, b.count]),
    [
      ['-2', matches.filter((m) => m.deltas.days === -2).length],
      ['-1', matches.filter((m) => m.deltas.days === -1).length],
    ],
  )

  const top1 = await app.inject({ method: 'GET', url: `/api/runs/${run.id}/report?top=1` })
  t.equal((top1.body.match(/<tr data-key=/g) ?? []).length, 2, 'top=1: one record per side')
  t.match(top1.body, 'data-key="T-0010"')
  t.match(top1.body, 'data-key="INV-0010"')
})

t.test('refusals: no such run 404, a failed run 409, bad top 400; a dry run shows its summary', async (t) => {
  const app = await reportApp(t, { files: exampleFiles() })
  const missing = await app.inject({ method: 'GET', url: '/api/runs/no-such-run/report' })
  t.equal(missing.statusCode, 404)
  t.match(missing.json(), { error: 'run_not_found' })

  const dry = await completedRun(app, SOURCES, examplesRecipe, { dry_run: true })
  const page = await app.inject({ method: 'GET', url: `/api/runs/${dry.id}/report` })
  t.equal(page.statusCode, 200, page.statusCode === 200 ? 'a dry run has a report' : page.body)
  t.match(page.body, 'data-figure="run-matches" data-value="9"')
  t.match(page.body, 'A dry run keeps only its summary')

  const bad = await app.inject({ method: 'GET', url: `/api/runs/${dry.id}/report?top=0` })
  t.equal(bad.statusCode, 400)
  t.match(bad.json(), { error: 'invalid_request' })

  // the invoices file goes after registration: the run fails loading it
  await rm(join(t.testdirName, 'invoices.csv'))
  const started = await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe: examplesRecipe } })
  const failed = await waitForRun(app, started.json().id)
  t.equal(failed.status, 'failed')
  const refused = await app.inject({ method: 'GET', url: `/api/runs/${failed.id}/report` })
  t.equal(refused.statusCode, 409)
  t.match(refused.json(), { error: 'results_not_ready', message: /is failed/ })
})

t.test("a viewer reads its workspace's report; another workspace gets a 404, no key a 401", async (t) => {
  const ROOT = 'root-key-for-report-tests-0123456789'
  const app = await reportApp(t, { files: exampleFiles(), env: { CONCORD_ADMIN_KEY: ROOT } })
  const as = (key?: string) => (method: 'GET' | 'POST', url: string, payload?: object) =>
    app.inject({ method, url, payload, headers: key ? { authorization: `Bearer ${key}` } : {} })
  const root = as(ROOT)
  const a = as((await root('POST', '/api/workspaces', { name: 'acme' })).json().admin_key)
  const b = as((await root('POST', '/api/workspaces', { name: 'globex' })).json().admin_key)
  for (const [alias, type, path] of SOURCES)
    t.equal((await a('POST', '/api/sources', { alias, type, path })).statusCode, 201)
  const started = (await a('POST', '/api/runs', { recipe: examplesRecipe })).json()
  for (let i = 0; (await a('GET', `/api/runs/${started.id}`)).json().status !== 'completed'; i++) {
    if (i > 2400) throw new Error('the run did not complete')
    await new Promise((r) => setTimeout(r, 50))
  }
  const viewer = as((await a('POST', '/api/keys', { name: 'v', role: 'viewer' })).json().key)
  const url = `/api/runs/${started.id}/report`
  t.equal((await viewer('GET', url)).statusCode, 200, 'a viewer reads the report')
  const other = await b('GET', url)
  t.equal(other.statusCode, 404, 'another workspace cannot see that the run exists')
  t.match(other.json(), { error: 'run_not_found' })
  t.equal((await as()('GET', url)).statusCode, 401, 'no key, no report')
})

t.test(
  'exceptions by age come from the injected provider; none, or a failing provider, leave the report standing',
  async (t) => {
    const asked: string[] = []
    let answer: () => Promise<{ bucket: string; count: number; amount: string }[] | null> = async () => [
      { bucket: '0-1 days', count: 3, amount: '5715.00' },
      { bucket: '<b>2-7</b> days', count: 2, amount: '1234567.89' },
    ]
    const app = await reportApp(t, {
      files: exampleFiles(),
      aging: (_ws, runId) => {
        asked.push(runId)
        return answer()
      },
    })
    const run = await completedRun(app, SOURCES, examplesRecipe)
    const get = () => app.inject({ method: 'GET', url: `/api/runs/${run.id}/report` })

    const page = await get()
    t.same(asked, [run.id], 'the provider is asked for this run')
    t.match(page.body, /<tr data-bucket="0-1 days">\s*<td>0-1 days<\/td>/)
    t.match(page.body, 'data-figure="amount" data-value="1234567.89">1,234,567.89<')
    t.match(
      page.body,
      /data-bucket="&lt;b&gt;2-7&lt;\/b&gt; days">\s*<td>&lt;b&gt;2-7&lt;\/b&gt; days<\/td>/,
      'escaped',
    )

    answer = async () => null
    t.match((await get()).body, 'No open exceptions for this run.')
    answer = async () => {
      throw new Error('exceptions table unavailable')
    }
    const failing = await get()
    t.equal(failing.statusCode, 200)
    t.match(failing.body, 'Exception aging could not be read: exceptions table unavailable')
    t.match(failing.body, 'data-figure="run-matches" data-value="9"')
  },
)

t.test('values from data reach the page as text only: record keys, recipe name, conditions, parameters', async (t) => {
  const hostileKey = '<img src=x onerror="alert(1)">'
  const files = {
    'l.csv': `id,ref,amount\n"${hostileKey.replaceAll('"', '""')}",A,10.00\nL2,B,20.00\nL3,<script>x</script>,7.00\n`,
    'r.csv': 'id,ref,amount\nR1,B,20.00\nR2,C,7.00\nR3,<script>x</script>,7.00\n',
  }
  const app = await reportApp(t, { files })
  const recipe = {
    name: '</title><script>alert("name")</script>',
    left: { source: 'l', key: ['id'] },
    right: { source: 'r', key: ['id'] },
    passes: [
      { name: 'p', pattern: '1:1', when: "l.ref = r.ref AND l.amount = r.amount AND l.ref <> '<script>x</script>'" },
    ],
  }
  const run = await completedRun(
    app,
    [
      ['l', 'csv', 'l.csv'],
      ['r', 'csv', 'r.csv'],
    ],
    recipe,
  )
  t.equal(run.status, 'completed', JSON.stringify(run.error))
  const body = (await app.inject({ method: 'GET', url: `/api/runs/${run.id}/report` })).body
  t.notMatch(body, /<script|<img|<\/title><script|onerror="/i, 'no markup from data')
  t.match(body, '&lt;img src=x onerror=&quot;alert(1)&quot;&gt;', 'the key, as text')
  t.match(body, '&lt;/title&gt;&lt;script&gt;alert(&quot;name&quot;)&lt;/script&gt;', 'the recipe name, as text')
  t.match(body, 'l.ref &lt;&gt; &#39;&lt;script&gt;x&lt;/script&gt;&#39;', 'the condition, as text')

  // a pass name the recipe schema would refuse, straight into the renderer (older runs, other writers)
  const report: RunReport = {
    run: {
      ...run,
      params: { '"><b>param': '<i>value</i>' },
      summary: { ...run.summary, passes: [{ ...run.summary.passes[0], name: '"><svg onload=alert(1)>' }] },
    },
    figures: null,
    aging: null,
    aging_error: null,
    generated_at: new Date().toISOString(),
  }
  const html = renderReport(report)
  t.notMatch(html, /<svg onload|<b>param|<i>value/)
  t.match(html, 'data-pass="&quot;&gt;&lt;svg onload=alert(1)&gt;"')
  t.match(html, '&lt;i&gt;value&lt;/i&gt;')
})

t.test('a side without an amount column: no amounts, no ranking by amount, said so', async (t) => {
  const files = { 'l.csv': 'id,ref\nA,1\nB,2\nC,3\n', 'r.csv': 'id,ref\nX,1\nY,9\n' }
  const app = await reportApp(t, { files })
  const recipe = {
    name: 'refs',
    left: { source: 'l', key: ['id'] },
    right: { source: 'r', key: ['id'] },
    passes: [{ name: 'ref', pattern: '1:1', when: 'l.ref = r.ref' }],
  }
  const run = await completedRun(
    app,
    [
      ['l', 'csv', 'l.csv'],
      ['r', 'csv', 'r.csv'],
    ],
    recipe,
  )
  t.match(run.summary, { matches: 1, left: { unmatched: 2, amount: null } })
  const body = (await app.inject({ method: 'GET', url: `/api/runs/${run.id}/report` })).body
  t.match(body, 'data-top="left" data-no-amount="true"')
  t.match(body, 'The right side has no amount column the recipe compares')
  t.match(body, 'Neither side has an amount column the recipe compares')
  t.match(body, /<tr class="total" data-total="left">[\s\S]*?data-figure="records" data-value="2"/)
  t.match(body, 'No match has an amount delta')
})

t.test('histogram bins: nice widths, exact edges, every value in one bin', async (t) => {
  t.equal(niceStep(0.3, true), 1)
  t.equal(niceStep(17, true), 20)
  t.equal(niceStep(0.03, false), 0.05)
  t.equal(niceStep(0, true), 1)

  const cents = new HistogramBuilder()
  cents.add(Float64Array.from([-350, 0, 0, 199, 200, 1_234_567_890_123, Number.NaN]))
  const h = await cents.finish(10, (x) => (x / 100).toFixed(2))
  t.match(h, { counted: 6, missing: 1, zero: 2, min: '-3.50', max: '12345678901.23', discrete: true })
  t.equal(
    h.bins.reduce((a, b) => a + b.count, 0),
    6,
  )
  t.ok(h.bins.length <= 11, `${h.bins.length} bins`)

  const small = new HistogramBuilder()
  small.add(Float64Array.from([-2, -1, -1, 0, 3]))
  const d = await small.finish(24, String)
  t.same(
    d.bins.map((b) => [b.from, b.to, b.count]),
    [
      ['-2', '-2', 1],
      ['-1', '-1', 2],
      ['0', '0', 1],
      ['1', '1', 0],
      ['2', '2', 0],
      ['3', '3', 1],
    ],
  )

  const fractional = new HistogramBuilder()
  fractional.add(Float64Array.from([0.25, 0.5, 1.75]))
  const f = await fractional.finish(4, String)
  t.match(f, { discrete: false, counted: 3 })
  t.same(
    f.bins.map((b) => [b.from, b.to, b.count]),
    [
      ['0', '0.5', 1],
      ['0.5', '1', 1],
      ['1', '1.5', 0],
      ['1.5', '2', 1],
    ],
  )
})
