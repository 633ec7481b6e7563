// The recipes API through inject(): versioned saves, validation with every issue located, explain,
// and the error replies. Sources are two small CSV files in the test's data folder.

import t, { type Test } from 'tap'
import { testApp } from './helpers/app.js'

const files = {
  'bank.csv':
    'txn_id,account,amount,txn_date,reference\nT1,ACC-1,100.00,2024-01-05,INV-1\nT2,ACC-2,50.50,2024-01-07,INV-2\n',
  'invoices.csv':
    'invoice_id,customer,total_amount,invoice_date,ref\nI1,ACC-1,100.00,2024-01-03,inv-1\nI2,ACC-2,50.49,2024-01-06,INV-2\n',
}

const recipe = {
  name: 'bank-vs-invoices',
  left: { source: 'bank', key: ['txn_id'], scope: [{ column: 'amount', op: 'gt', value: 0 }] },
  right: { source: 'invoices', key: ['invoice_id'] },
  passes: [
    {
      name: 'by_reference',
      pattern: '1:1',
      when: "UPPER(TRIM(l.reference)) = UPPER(r.ref) AND ABS(l.amount - r.total_amount) <= 0.01 AND r.invoice_date BETWEEN l.txn_date - INTERVAL '3 days' AND l.txn_date",
    },
    {
      name: 'split_payments',
      pattern: '1:N',
      after: ['by_reference'],
      when: "l.account = r.customer AND r.invoice_date BETWEEN l.txn_date - INTERVAL '10 days' AND l.txn_date",
      aggregate: { sum: 'r.total_amount', equals: 'l.amount', tolerance: 0.01, max_group: 5 },
    },
  ],
}

async function withSources(t: Test) {
  const ctx = await testApp(t, { files })
  for (const alias of ['bank', 'invoices']) {
    const res = await ctx.app.inject({
      method: 'POST',
      url: '/api/sources',
      payload: { alias, type: 'csv', path: `${alias}.csv` },
    })
    t.equal(res.statusCode, 201, res.body)
  }
  return ctx
}

t.test('save, version, read back, list and delete a recipe', async (t) => {
  const { app } = await withSources(t)
  const created = await app.inject({ method: 'POST', url: '/api/recipes', payload: recipe })
  t.equal(created.statusCode, 201, created.body)
  const v1 = created.json()
  t.match(v1, { name: 'bank-vs-invoices', version: 1, latest_version: 1 })
  t.equal(v1.recipe.version, 1, 'the stored document carries its version')
  t.same(v1.recipe.passes, recipe.passes)

  const changed = { ...recipe, passes: [{ ...recipe.passes[0], when: 'l.reference = r.ref' }] }
  const updated = await app.inject({ method: 'PUT', url: `/api/recipes/${v1.id}`, payload: changed })
  t.equal(updated.statusCode, 200, updated.body)
  t.match(updated.json(), { id: v1.id, version: 2, latest_version: 2 })

  const latest = (await app.inject({ method: 'GET', url: `/api/recipes/${v1.id}` })).json()
  t.equal(latest.version, 2)
  t.equal(latest.recipe.passes.length, 1)
  const old = (await app.inject({ method: 'GET', url: `/api/recipes/${v1.id}?version=1` })).json()
  t.equal(old.version, 1)
  t.equal(old.recipe.passes.length, 2, 'the old version stays readable as it was')
  const missing = await app.inject({ method: 'GET', url: `/api/recipes/${v1.id}?version=3` })
  t.equal(missing.statusCode, 404)
  t.equal(missing.json().error, 'recipe_version_not_found')

  const list = (await app.inject({ method: 'GET', url: '/api/recipes' })).json()
  t.same(
    list.recipes.map((r: { id: string; latest_version: number }) => [r.id, r.latest_version]),
    [[v1.id, 2]],
  )

  t.equal((await app.inject({ method: 'DELETE', url: `/api/recipes/${v1.id}` })).statusCode, 204)
  const gone = await app.inject({ method: 'GET', url: `/api/recipes/${v1.id}` })
  t.equal(gone.statusCode, 404)
  t.equal(gone.json().error, 'recipe_not_found')
})

t.test('validate reports every issue with its pass, code and position', async (t) => {
  const { app } = await withSources(t)
  const ok = await app.inject({ method: 'POST', url: '/api/recipes/validate', payload: recipe })
  t.same(ok.json(), { valid: true, issues: [], suggestions: [], warnings: [] })

  const bad = {
    ...recipe,
    passes: [
      { name: 'typo', pattern: '1:1', when: 'l.reference = r.reff AND l.amount = r.total_amount' },
      { name: 'dates_vs_numbers', pattern: '1:1', when: 'l.reference = r.ref AND l.txn_date = r.total_amount' },
      { name: 'no_such_fn', pattern: '1:1', when: 'l.reference = r.ref AND frobnicate(l.amount) > 1' },
      { name: 'cross', pattern: '1:1', when: 'l.amount > 5 AND r.total_amount > 5' },
      { name: 'a', pattern: '1:1', when: 'l.reference = r.ref', after: ['b'] },
      { name: 'b', pattern: '1:1', when: 'l.reference = r.ref', after: ['a'] },
    ],
  }
  const report = (await app.inject({ method: 'POST', url: '/api/recipes/validate', payload: bad })).json()
  t.equal(report.valid, false)
  const byPass = (pass: string) => report.issues.filter((i: { pass: string }) => i.pass === pass)
  const typo = byPass('typo')[0]
  t.match(typo, { code: 'unknown_column', message: /no column "reff"/ })
  t.same(typo.position, { start: 14, end: 20 }, 'the position points at r.reff in "when"')
  t.match(typo.suggestion, /r\.ref/)
  t.match(byPass('dates_vs_numbers')[0], { code: 'type_mismatch', message: /date with decimal/ })
  t.match(byPass('no_such_fn')[0], { code: 'unknown_function' })
  t.match(byPass('cross')[0], { code: 'no_usable_join' })
  t.ok(
    report.issues.some(
      (i: { code: string; message: string }) => i.code === 'pass_cycle' && /a → b → a|b → a → b/.test(i.message),
    ),
    'the cycle is reported with its path',
  )
  t.ok(report.suggestions.length > 0)

  const unknownSource = { ...recipe, right: { source: 'invoice', key: ['invoice_id'] } }
  const r2 = (await app.inject({ method: 'POST', url: '/api/recipes/validate', payload: unknownSource })).json()
  t.match(r2.issues[0], { code: 'unknown_source', suggestion: /"invoices"/ })

  const structural = (await app.inject({ method: 'POST', url: '/api/recipes/validate', payload: { name: 'x' } })).json()
  t.equal(structural.valid, false)
  t.equal(structural.issues[0].code, 'invalid_recipe')
})

t.test('an invalid recipe is refused with its issues and nothing is stored', async (t) => {
  const { app } = await withSources(t)
  const bad = { ...recipe, passes: [{ name: 'p', pattern: '1:1', when: 'l.reference = r.nope' }] }
  const res = await app.inject({ method: 'POST', url: '/api/recipes', payload: bad })
  t.equal(res.statusCode, 400)
  t.match(res.json(), { error: 'invalid_recipe', issues: [{ pass: 'p', code: 'unknown_column' }] })
  const shape = await app.inject({ method: 'POST', url: '/api/recipes', payload: { name: 'no passes' } })
  t.equal(shape.statusCode, 400)
  t.equal(shape.json().error, 'invalid_request')
  t.same((await app.inject({ method: 'GET', url: '/api/recipes' })).json(), { recipes: [] })
  const put = await app.inject({ method: 'PUT', url: '/api/recipes/nope', payload: recipe })
  t.equal(put.statusCode, 404)
})

t.test('explain shows hash keys, bands, residuals and phases', async (t) => {
  const { app } = await withSources(t)
  const withBand = {
    ...recipe,
    passes: [
      ...recipe.passes,
      {
        name: 'by_amount_and_date',
        pattern: '1:1',
        after: [],
        when: "ABS(l.amount - r.total_amount) <= 0.01 AND r.invoice_date BETWEEN l.txn_date - INTERVAL '3 days' AND l.txn_date",
      },
    ],
  }
  const res = await app.inject({ method: 'POST', url: '/api/recipes/explain', payload: withBand })
  t.equal(res.statusCode, 200, res.body)
  const [byRef, split, band] = res.json().passes
  t.same(byRef.hash_keys, [{ left: 'UPPER(TRIM(l.reference))', right: 'UPPER(r.ref)' }])
  t.equal(byRef.join, 'hash')
  t.same(byRef.residuals, [
    'ABS(l.amount - r.total_amount) <= 0.01',
    "r.invoice_date BETWEEN l.txn_date - INTERVAL '3 days' AND l.txn_date",
  ])
  t.equal(byRef.phase, 1)
  t.match(split, { phase: 2, after: ['by_reference'], join: 'hash', aggregate: { sum: 'r.total_amount' } })
  t.equal(band.join, 'band')
  t.equal(band.phase, 1)
  // the first range with both bounds, as written: amounts within a cent
  t.match(band.band, {
    column: 'r.total_amount',
    lower: 'l.amount - 0.01',
    upper: 'l.amount + 0.01',
    lower_inclusive: true,
    upper_inclusive: true,
  })
  t.equal(band.residuals.length, 2, 'the band only prunes: its conjuncts are still checked on each pair')
  t.match(
    res.json().text,
    /pass by_reference \(1:1\), phase 1\n {2}hash join on UPPER\(TRIM\(l\.reference\)\) = UPPER\(r\.ref\)/,
  )

  const invalid = await app.inject({
    method: 'POST',
    url: '/api/recipes/explain',
    payload: { ...recipe, passes: [{ name: 'p', pattern: '1:1', when: 'l.x = r.y' }] },
  })
  t.equal(invalid.statusCode, 400)
  t.equal(invalid.json().error, 'invalid_recipe')
})

t.test('execute runs a recipe on the loaded scopes (sample) or on its own scopes (full)', async (t) => {
  const { app } = await withSources(t)
  const err = await app.recipes.execute('default', recipe, 'sample').catch((e: Error) => e)
  t.match(err, { code: 'scope_not_loaded', status: 409 })

  const loaded = await app.inject({
    method: 'POST',
    url: '/api/sources/bank/load-scoped',
    payload: { conditions: [{ column: 'amount', op: 'gt', value: 60 }] },
  })
  t.equal(loaded.json().total_rows, 1)
  await app.inject({ method: 'POST', url: '/api/sources/invoices/load-scoped', payload: {} })
  const sample = await app.recipes.execute('default', recipe, 'sample')
  t.same([sample.summary.left.rows, sample.summary.matches, sample.summary.right.unmatched], [1, 1, 1])

  const full = await app.recipes.execute('default', recipe, 'full', { version: 3 })
  t.match(full.summary, {
    status: 'completed',
    recipe_version: 3,
    matches: 2,
    left: { rows: 2, matched: 2, amount: '150.50' },
    right: { rows: 2, matched: 2, amount: '150.49' },
  })
  t.equal(app.sources.engine('default').get('bank')?.table.length, 1, 'a full run leaves the loaded scope as it was')
})
