// Connectors are plugins (issue 19 item 2): a source type from outside the tree, named by
// CONNECTOR_MODULES, registers, previews and runs — in the run's worker thread too — with no
// change to Concord; and the PostgreSQL engine is a capability its connector offers, which the
// core asks for by engine name, never by source type.

import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { testApp } from './helpers/app.js'
import { waitForRun } from './helpers/runs.js'

const module = pathToFileURL(join(import.meta.dirname, 'fixtures/inline-connector.mjs')).href

t.test('a connector from outside the tree registers, previews and runs', async (t) => {
  const { app } = await testApp(t, {
    files: { 'bank.csv': 'txn_id,amount\nT1,10.00\nT2,20.50\nT3,7.00\n' },
    env: { CONNECTOR_MODULES: module },
  })
  t.equal(
    (
      await app.inject({
        method: 'POST',
        url: '/api/sources',
        payload: { alias: 'bank', type: 'csv', path: 'bank.csv' },
      })
    ).statusCode,
    201,
  )
  const registered = await app.inject({
    method: 'POST',
    url: '/api/sources',
    payload: {
      alias: 'ledger',
      type: 'inline',
      rows: [
        { id: 'X1', amount: '20.50' },
        { id: 'X2', amount: '10.00' },
        { id: 'X3', amount: '99.99' },
      ],
    },
  })
  t.equal(registered.statusCode, 201, registered.body)
  t.same(registered.json().config, { rows: 3 }, "the connector's own redaction")
  const preview = (await app.inject({ method: 'GET', url: '/api/sources/ledger/preview' })).json()
  t.same(preview.rows[0], { id: 'X1', amount: '20.50' })

  const bad = await app.inject({
    method: 'POST',
    url: '/api/sources',
    payload: { alias: 'bad', type: 'inline', rows: [{ id: 'Y', amount: '1.5' }] },
  })
  t.equal(bad.statusCode, 400, 'its config schema is applied')
  t.equal(bad.json().error, 'invalid_source_config')

  const recipe = {
    name: 'bank-vs-ledger',
    left: { source: 'bank', key: ['txn_id'] },
    right: { source: 'ledger', key: ['id'] },
    passes: [{ name: 'amount', pattern: '1:1', when: 'l.amount = r.amount' }],
  }
  const run = await waitForRun(
    app,
    (await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe } })).json().id,
  )
  t.equal(run.status, 'completed', JSON.stringify(run.error))
  t.match(run.summary, { matches: 2, left: { unmatched: 1 }, right: { unmatched: 1 } })
  const matches = (await app.inject({ method: 'GET', url: `/api/runs/${run.id}/matches` })).json()
  t.same(
    matches.items.map((m: { left_keys: string[]; right_keys: string[] }) => [m.left_keys[0], m.right_keys[0]]),
    [
      ['T1', 'X2'],
      ['T2', 'X1'],
    ],
  )

  // the pushdown engine is the left source's connector's to offer: an inline source offers none
  const pushed = await app.inject({ method: 'POST', url: '/api/runs', payload: { recipe, engine: 'postgres' } })
  t.equal(pushed.statusCode, 400)
  t.match(pushed.json(), {
    error: 'pushdown_unavailable',
    message: /needs both sources to be postgres sources \("bank" is csv\)/,
  })
})
