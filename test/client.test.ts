// The generated client SDK against a real listening server.

import t from 'tap'
import { createConcordClient } from '../openapi/client/index.js'
import { testApp } from './helpers/app.js'

t.test('the typed client drives a listening server', async (t) => {
  const { app } = await testApp(t, {
    files: {
      'bank.json': JSON.stringify([
        { id: 1, amount: '10.50' },
        { id: 2, amount: '20.00' },
      ]),
    },
  })
  const address = await app.listen({ port: 0, host: '127.0.0.1' })
  const concord = createConcordClient(address)

  const created = await concord.POST('/api/sources', { body: { alias: 'bank', type: 'json', path: 'bank.json' } })
  t.equal(created.response.status, 201)
  t.equal(created.data?.alias, 'bank')

  const described = await concord.GET('/api/sources/{alias}', { params: { path: { alias: 'bank' } } })
  t.same(
    described.data?.columns.map((c) => c.type),
    ['integer', 'decimal'],
  )

  const scoped = await concord.POST('/api/sources/{alias}/load-scoped', {
    params: { path: { alias: 'bank' } },
    body: { conditions: [{ column: 'amount', op: 'gt', value: '15' }] },
  })
  t.equal(scoped.data?.total_rows, 1)
  t.same(scoped.data?.rows, [{ id: 2, amount: '20.00' }])

  const missing = await concord.GET('/api/sources/{alias}', { params: { path: { alias: 'nope' } } })
  t.equal(missing.response.status, 404)
  t.equal(missing.error?.error, 'source_not_found')
})
