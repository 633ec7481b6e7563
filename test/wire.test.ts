// The wire schemas' "or null" and "one of these words": what they accept, that they are written
// without a union (fast-json-stringify runs a validator per union branch for every value), and
// that a reply written from them is the same JSON as JSON.stringify's.

import Fastify from 'fastify'
import t from 'tap'
import { Type } from 'typebox'
import { Compile } from 'typebox/compile'
import { CompileOnUse } from '../src/compile-on-use.js'
import { ExceptionSchema } from '../src/exceptions/schema.js'
import { buildSerializer } from '../src/serializer.js'
import { Nullable, OneOf } from '../src/wire.js'
import { testApp } from './helpers/app.js'

t.test('Nullable and OneOf accept what the unions accepted, as type lists and enums', async (t) => {
  const schema = Type.Object({
    text: Nullable(Type.String()),
    count: Nullable(Type.Integer()),
    word: OneOf(['open', 'resolved']),
    maybe: Nullable(OneOf(['a', 'b'])),
    literals: Nullable(Type.Union([Type.Literal('x'), Type.Literal('y')])),
    pair: Nullable(Type.Object({ left: Type.String() })),
    ref: Nullable(Type.Ref('Other')),
  })
  t.notOk(JSON.stringify(schema.properties.text).includes('anyOf'))
  t.same(schema.properties.maybe, { type: ['string', 'null'], enum: ['a', 'b', null] })
  t.same(schema.properties.literals, { type: ['string', 'null'], enum: ['x', 'y', null] })
  t.match(schema.properties.ref, { anyOf: [{ $ref: 'Other' }, { type: 'null' }] }, 'a reference stays a union')
  const check = Compile({ Other: Type.String() }, schema)
  const ok = { text: null, count: 3, word: 'open', maybe: null, literals: 'y', pair: null, ref: null }
  t.ok(check.Check(ok))
  t.ok(check.Check({ ...ok, text: 's', maybe: 'b', pair: { left: 'L' }, ref: 'r' }))
  for (const bad of [{ count: 1.5 }, { word: 'shut' }, { maybe: 'c' }, { literals: 'z' }, { pair: { right: 1 } }])
    t.notOk(check.Check({ ...ok, ...bad }), JSON.stringify(bad))
})

t.test('an exception is written without a validator, as JSON.stringify writes it', async (t) => {
  t.notOk(JSON.stringify(ExceptionSchema).includes('anyOf'), 'no union left in the Exception reply')
  // Fastify writes the reply from its schema (fast-json-stringify), as the service does
  const app = Fastify()
  t.teardown(() => app.close())
  let reply: unknown
  app.get('/x', { schema: { response: { 200: ExceptionSchema } } }, async () => reply)
  const write = async (value: unknown) => {
    reply = value
    return (await app.inject({ method: 'GET', url: '/x' })).body
  }
  const row = {
    id: 7,
    run_id: 'r1',
    last_run_id: null,
    recipe_id: 'rc',
    recipe_version: null,
    side: 'left',
    record_key: 'T1',
    keys: null,
    match_id: null,
    candidate_key: 'I1',
    amount: '12.50',
    amount_at_risk: '1.25',
    difference: '1.25',
    record_date: '2024-01-02',
    age_days: 3,
    reason: 'amount_outside_tolerance',
    carry: true,
    status: 'resolved',
    resolution: 'accepted',
    resolution_detail: { reason: 'fee' },
    resolved_by: 'ops',
    resolved_at: '2024-01-05T00:00:00.000Z',
    assignee: null,
    version: 2,
    created_at: '2024-01-03T00:00:00.000Z',
    updated_at: '2024-01-05T00:00:00.000Z',
  }
  t.same(JSON.parse(await write(row)), row)
  t.same(JSON.parse(await write({ ...row, keys: { left: ['a'], right: ['b', 'c'] }, resolution: null })), {
    ...row,
    keys: { left: ['a'], right: ['b', 'c'] },
    resolution: null,
  })
})

t.test('a reply serializer is compiled with only the shared schemas it refers to', async (t) => {
  const shared = {
    Page: { $id: 'Page', type: 'object', properties: { items: { type: 'array', items: { $ref: 'Item' } } } },
    Item: {
      $id: 'Item',
      type: 'object',
      properties: { id: { type: 'integer' }, tag: { $ref: 'Tag#/properties/name' } },
    },
    Tag: { $id: 'Tag', type: 'object', properties: { name: { type: 'string' } } },
    // never referred to: Fastify's own compiler checked (and here would refuse) it for every route
    Unrelated: { $id: 'Unrelated', type: 'no such type' },
  }
  const compile = buildSerializer(shared)
  const write = compile({ schema: { $ref: 'Page' } })
  t.equal(write({ items: [{ id: 1, tag: 'a', extra: true }] }), '{"items":[{"id":1,"tag":"a"}]}')
  const self = compile({ schema: shared.Item })
  t.equal(self({ id: 2, tag: 'b' }), '{"id":2,"tag":"b"}', 'a reply schema that is itself shared')
})

t.test('schemas compile on first use; every route of the app compiles, and start-up compiled none', async (t) => {
  const { app } = await testApp(t)
  const waiting = app.compilers.waiting
  // ~100 routes, a validator per request part and a serializer per reply status
  t.ok(waiting > 200, `${waiting} compilers waited after ready: none ran while the app got ready`)
  const res = await app.inject({ method: 'GET', url: '/api/sources' })
  t.equal(res.statusCode, 200)
  t.ok(app.compilers.waiting < waiting, 'a request compiled what its route needed')
  const compiled = await app.compilers.compileAll()
  t.ok(compiled > 200, `${compiled} compiled in the background`)
  t.equal(app.compilers.waiting, 0, 'nothing left, and no schema threw')
  t.equal((await app.inject({ method: 'GET', url: '/api/sources' })).statusCode, 200)
})

t.test('a closing app stops compiling in the background', async (t) => {
  const compilers = new CompileOnUse()
  const calls: string[] = []
  const compiler = compilers.wrap((route: { name: string }) => {
    calls.push(route.name)
    return (x: number) => x + 1
  })
  const routes = ['a', 'b', 'c'].map((name) => compiler({ name }))
  t.same(calls, [], 'nothing compiles until used')
  t.equal(routes[1](1), 2)
  t.equal(routes[1](2), 3)
  t.same(calls, ['b'], 'once, on first use')
  const all = compilers.compileAll()
  compilers.stop()
  t.equal(await all, 1, 'the first turn compiled one; the stop was seen before the next')
  t.same(calls, ['b', 'a'])
  t.equal(compilers.waiting, 1)
})

t.test('a schema that does not compile fails its route and is reported after the rest compiled', async (t) => {
  const compilers = new CompileOnUse()
  const compiler = compilers.wrap((route: { method: string; url: string }) => {
    if (route.url === '/bad') throw new Error('unknown keyword')
    return () => route.url
  })
  const bad = compiler({ method: 'GET', url: '/bad' })
  const good = compiler({ method: 'GET', url: '/good' })
  t.throws(() => bad(), /the schema of GET \/bad does not compile: Error: unknown keyword/)
  await t.rejects(compilers.compileAll(), { message: '1 route schemas do not compile' })
  t.equal(good(), '/good')
  t.equal(compilers.waiting, 1, 'only the one that does not compile is left')
})
