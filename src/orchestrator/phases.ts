// Phases as Fastify plugins (DESIGN §3). Each file in plugins/ default-exports one: phasePlugin()
// around a PhaseConfig, registering it with the app's phase registry (app.phases, made by the
// `phases` plugin here). When the app is ready the registry checks the graph — one start, every
// phase reachable, transitions and back edges to phases that exist, prerequisites produced
// earlier, tools that exist — so a broken phase stops the service from starting, not a
// conversation. A phase is added by registering one more plugin: `after` links it in. The loop
// reads a phase's tools, instructions, prerequisites, context and advancement rule from here and
// has no branch of its own for any phase.

import { readdir } from 'node:fs/promises'
import { isDeepStrictEqual } from 'node:util'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { newSession, type PhaseName, type SessionField, type SessionState, START_PHASE } from './session.js'

/** The session's fields, for checking what phases name. */
const FIELDS = newSession('')

/** What the system prompt shows of the session, besides the phase's instructions. */
export type ContextInjection =
  | 'sources'
  | 'schemas'
  | 'samples'
  | 'proposals'
  | 'confirmed_pairs'
  | 'rules'
  | 'recipe_draft'
  | 'validation'
  | 'last_run'
  | 'artifacts'

export interface PhaseConfig {
  name: PhaseName
  /** The agent tools the model is offered in this phase (deny by default). */
  tools: string[]
  /** The phase's instructions to the model; they never name a tool the phase does not offer. */
  instructions: string
  prerequisites: { sessionFields: SessionField[] }
  contextInjections: ContextInjection[]
  /** Checked after every tool result (and card response): true moves the session to `next`. */
  advancesWhen: (session: SessionState) => boolean
  next?: PhaseName
  /**
   * For a phase a plugin adds between two others: the phase it follows. The registry links it in
   * (that phase now advances here, and this one to where that one went), so no other file changes.
   */
  after?: PhaseName
  /**
   * Earlier phases this one may return to when the user changes their work (the only transitions
   * besides `next`; any other is refused with invalid_state).
   */
  back: PhaseName[]
  /**
   * The fields this phase produces. A tool that changes one of them in a later phase sends the
   * session back here; going back clears the fields of every later phase.
   */
  owns: SessionField[]
  /**
   * Of its own fields, those cleared when the session comes back to this phase: the work that has
   * to be redone (a new scope reloads both samples), so the stale rest cannot advance it again.
   */
  clearsOnReturn: SessionField[]
  errorPolicy: { maxRetriesPerTool: number; onExhausted: 'remove_tool' | 'end_turn' }
}

export class PhaseRegistry {
  private readonly byName = new Map<PhaseName, PhaseConfig>()
  private readonly order: PhaseName[] = []

  register(config: PhaseConfig): void {
    if (this.byName.has(config.name)) throw new Error(`phase "${config.name}" registered twice`)
    this.byName.set(config.name, config)
    this.order.push(config.name)
  }

  get(name: PhaseName): PhaseConfig {
    const p = this.byName.get(name)
    if (!p) throw new Error(`no phase "${name}"`)
    return p
  }

  all(): PhaseConfig[] {
    return this.sequence().map((n) => this.get(n))
  }

  /** Where each phase advances: its own `next`, with the phases declared `after` another linked in. */
  private links(): Map<PhaseName, PhaseName | undefined> {
    const next = new Map(this.order.map((n) => [n, this.get(n).next] as const))
    for (const name of this.order) {
      const after = this.get(name).after
      if (after === undefined || !next.has(after)) continue
      if (this.get(name).next === undefined) next.set(name, next.get(after))
      next.set(after, name)
    }
    return next
  }

  /** The phase `name` advances to, if any. */
  nextOf(name: PhaseName): PhaseName | undefined {
    return this.links().get(name)
  }

  /** Phases in the order the conversation walks them: from the start, along `next`. */
  sequence(): PhaseName[] {
    const next = this.links()
    let at: PhaseName | undefined = this.byName.has(START_PHASE) ? START_PHASE : this.order[0]
    const out: PhaseName[] = []
    while (at && !out.includes(at)) {
      out.push(at)
      at = next.get(at)
    }
    return out
  }

  /**
   * The graph's problems, none when it is sound: sessions start at START_PHASE; every phase is on
   * the walk from it and the walk ends; `next`, `after` and `back` name registered phases, `back`
   * earlier ones; a prerequisite is a session field no phase from this one on produces; every
   * tool exists.
   */
  problems(tools: ReadonlySet<string>): string[] {
    const out: string[] = []
    if (!this.byName.has(START_PHASE)) out.push(`no phase "${START_PHASE}", where every session starts`)
    const seq = this.sequence()
    const next = this.links()
    const last = seq[seq.length - 1]
    if (last !== undefined && next.get(last) !== undefined && this.byName.has(next.get(last)!))
      out.push(`the phases advance in a cycle through "${next.get(last)}"`)
    for (const name of this.order) {
      const p = this.get(name)
      const at = seq.indexOf(name)
      for (const [what, target] of [
        ['next', p.next],
        ['after', p.after],
      ] as const)
        if (target !== undefined && !this.byName.has(target))
          out.push(`phase "${name}": ${what} names no phase ("${target}")`)
      if (at < 0) {
        out.push(`phase "${name}" is not reached from "${START_PHASE}" (link it with next or after)`)
        continue
      }
      for (const b of p.back)
        if (!this.byName.has(b)) out.push(`phase "${name}": back names no phase ("${b}")`)
        else if (seq.indexOf(b) >= at) out.push(`phase "${name}": back to "${b}", which is not earlier`)
      // a prerequisite is a session field made before this phase: by an earlier phase, or by none
      // (a fact about the workspace, such as the source list)
      for (const field of p.prerequisites.sessionFields) {
        const owner = this.ownerOf(field)
        if (!(field in FIELDS)) out.push(`phase "${name}": prerequisite ${field} is no session field`)
        else if (owner !== undefined && seq.indexOf(owner) >= at)
          out.push(`phase "${name}": prerequisite ${field} is produced by "${owner}", which is not earlier`)
      }
      for (const tool of p.tools) if (!tools.has(tool)) out.push(`phase "${name}": no tool "${tool}"`)
    }
    return out
  }

  /** The fields produced after `phase` (cleared when the session returns to it). */
  fieldsAfter(phase: PhaseName): SessionField[] {
    const seq = this.sequence()
    return seq.slice(seq.indexOf(phase) + 1).flatMap((n) => this.get(n).owns)
  }

  /** The phase that produces `field`, if any does. */
  ownerOf(field: string): PhaseName | undefined {
    return this.all().find((p) => (p.owns as string[]).includes(field))?.name
  }

  /**
   * Where a tool's changes send the session: the earliest phase before the current one that owns
   * a field the patch changes (a new scope in demonstration → scoping; other rules in validation
   * → inference), or undefined when the change belongs to the current phase or a later one.
   */
  returnFor(session: SessionState, patch: Partial<SessionState>): PhaseName | undefined {
    const seq = this.sequence()
    const here = seq.indexOf(session.phase)
    let target: number | undefined
    for (const [field, value] of Object.entries(patch)) {
      const owner = this.ownerOf(field)
      if (!owner) continue
      const at = seq.indexOf(owner)
      const before = (session as unknown as Record<string, unknown>)[field]
      // deep equality, not JSON text: a session read back from jsonb has its keys reordered
      if (at < here && !isDeepStrictEqual(before ?? null, value ?? null)) target = Math.min(target ?? at, at)
    }
    return target === undefined ? undefined : seq[target]
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    phases: PhaseRegistry
  }
}

/**
 * The phase registry as a plugin: app.phases, and the graph checked when the app is ready
 * against the agent's tools (`tools`: their names).
 */
export const phaseRegistry = fp<{ tools: () => Iterable<string> }>(
  async (app, opts) => {
    app.decorate('phases', new PhaseRegistry())
    app.addHook('onReady', async () => {
      const problems = app.phases.problems(new Set(opts.tools()))
      if (problems.length) throw new Error(`the chat agent's phases do not fit together: ${problems.join('; ')}`)
    })
  },
  { name: 'phases' },
)

/** A phase as a Fastify plugin: registering it adds the phase to the app's registry. */
export function phasePlugin(config: PhaseConfig): FastifyPluginAsync {
  return fp(
    async (app: FastifyInstance) => {
      app.phases.register(config)
    },
    { name: `phase:${config.name}`, dependencies: ['phases'] },
  )
}

const PLUGINS_DIR = new URL('../../plugins/', import.meta.url)

/** The phase plugins shipped in plugins/, in file order. */
export async function shippedPhases(): Promise<FastifyPluginAsync[]> {
  const files = (await readdir(PLUGINS_DIR)).filter((f) => /\.(ts|js)$/.test(f) && !f.endsWith('.d.ts')).sort()
  const out: FastifyPluginAsync[] = []
  for (const file of files) {
    const mod = (await import(new URL(file, PLUGINS_DIR).href)) as { default?: unknown }
    if (typeof mod.default !== 'function') throw new Error(`plugins/${file} must default-export phasePlugin(config)`)
    out.push(mod.default as FastifyPluginAsync)
  }
  return out
}
