// The chat agent's phases are Fastify plugins (issue 19 item 1): the seven shipped in plugins/
// register themselves with the app's phase registry, a phase is added by registering one more
// plugin (no other file changes), and a graph that does not fit together stops the app at ready.

import t, { type Test } from 'tap'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { advance } from '../src/orchestrator/loop.js'
import { type PhaseConfig, phasePlugin } from '../src/orchestrator/phases.js'
import { newSession } from '../src/orchestrator/session.js'
import { freshDatabase, testEnv } from './helpers/app.js'

const SHIPPED = ['greeting', 'intent', 'scoping', 'demonstration', 'inference', 'validation', 'execution']

/** A phase between validation and execution: a second look at the approved recipe. */
const review: PhaseConfig = {
  name: 'review',
  after: 'validation',
  tools: ['validate_recipe'],
  instructions: 'Show the approved recipe once more and ask whether to run it on everything.',
  prerequisites: { sessionFields: ['recipe_draft', 'validation_approved'] },
  contextInjections: ['recipe_draft', 'validation'],
  advancesWhen: (s) => s.last_run !== null,
  back: ['inference'],
  owns: [],
  clearsOnReturn: [],
  errorPolicy: { maxRetriesPerTool: 2, onExhausted: 'remove_tool' },
}

async function app(t: Test, extra: PhaseConfig[] = []) {
  const database = await freshDatabase()
  const a = await buildApp({ config: loadConfig({ DATA_DIR: t.testdir({}), ...testEnv }), database, logger: false })
  t.teardown(async () => {
    await a.close()
    await database.close()
  })
  for (const config of extra) await a.register(phasePlugin(config))
  return a
}

const phaseNames = async (a: Awaited<ReturnType<typeof app>>) =>
  (await a.inject({ method: 'GET', url: '/api/phases' })).json().phases as {
    name: string
    transitions: { next: string | null; back: string[] }
  }[]

t.test('the shipped phases register themselves, in the order they advance', async (t) => {
  const a = await app(t)
  await a.ready()
  const phases = await phaseNames(a)
  t.same(
    phases.map((p) => p.name),
    SHIPPED,
  )
  t.same(
    phases.map((p) => p.transitions.next),
    [...SHIPPED.slice(1), null],
  )
})

t.test('one more plugin adds a phase where it says, and sessions walk through it', async (t) => {
  const a = await app(t, [review])
  await a.ready()
  const phases = await phaseNames(a)
  t.same(
    phases.map((p) => p.name),
    [...SHIPPED.slice(0, 6), 'review', 'execution'],
  )
  t.equal(phases.find((p) => p.name === 'validation')!.transitions.next, 'review')
  t.equal(phases.find((p) => p.name === 'review')!.transitions.next, 'execution')

  // an approved validation now advances into review, which holds until its own rule holds
  const session = { ...newSession('s1'), phase: 'validation', validation_approved: true }
  const events: Parameters<typeof advance>[0]['events'] = []
  advance({ phases: a.phases, events }, session)
  t.equal(session.phase, 'review')
  session.last_run = { id: 'r1', mode: 'full', summary: null }
  advance({ phases: a.phases, events }, session)
  t.equal(session.phase, 'execution')
  t.same(
    events.map((e) => (e.detail as { to: string }).to),
    ['review', 'execution'],
  )
})

t.test('a phase that does not fit stops the app when it gets ready, saying why', async (t) => {
  const broken: PhaseConfig = {
    ...review,
    name: 'broken',
    after: undefined,
    next: 'nowhere',
    tools: ['no_such_tool'],
    back: ['execution'],
    prerequisites: { sessionFields: ['last_run'] },
  }
  const a = await app(t, [broken])
  await t.rejects(
    async () => {
      await a.ready()
    },
    {
      message: new RegExp(
        ['phase "broken": next names no phase \\("nowhere"\\)', 'phase "broken" is not reached from "greeting"'].join(
          '.*',
        ),
      ),
    },
  )

  const b = await app(t, [{ ...review, name: 'odd', after: 'scoping', back: ['execution'], tools: ['no_such_tool'] }])
  await t.rejects(
    async () => {
      await b.ready()
    },
    {
      message:
        /phase "odd": back to "execution", which is not earlier.*prerequisite recipe_draft is produced by "inference", which is not earlier.*phase "odd": no tool "no_such_tool"/,
    },
  )
})
