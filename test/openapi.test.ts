// openapi/openapi.json is committed for client generation; it must match what the app serves.

import { readFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import t from 'tap'
import { testApp } from './helpers/app.js'

t.test('the committed OpenAPI document matches the running app', async (t) => {
  const { app } = await testApp(t)
  const served = await app.inject({ method: 'GET', url: '/openapi.json' })
  t.equal(served.statusCode, 200)
  const doc = served.json()
  t.equal(doc.openapi, '3.1.0')
  const committed = JSON.parse(await readFile(resolve(import.meta.dirname, '../openapi/openapi.json'), 'utf8'))
  t.same(doc, committed, 'openapi/openapi.json is stale: run `npm run openapi` and commit the result')
  t.ok(doc.components.schemas.FilterCondition, 'shared schemas are named components')
  const docs = await app.inject({ method: 'GET', url: '/docs/' })
  t.equal(docs.statusCode, 200, 'Swagger UI is served at /docs')
})
