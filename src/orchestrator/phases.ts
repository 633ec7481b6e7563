// Phases as configuration (DESIGN §3). Each file in plugins/ default-exports one PhaseConfig; the
// registry loads them all. The loop reads a phase's tools, instructions, prerequisites, context and
// advancement rule from here and has no branch of its own for any phase.

import { readdir } from 'node:fs/promises'
import { isDeepStrictEqual } from 'node:util'
import type { PhaseName, SessionField, SessionState } from './session.js'

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

  /** Phases in the order the conversation walks them: from the one nothing advances into. */
  sequence(): PhaseName[] {
    const targets = new Set(this.order.map((n) => this.get(n).next).filter(Boolean))
    let at: PhaseName | undefined = this.order.find((n) => !targets.has(n))
    const out: PhaseName[] = []
    while (at && !out.includes(at)) {
      out.push(at)
      at = this.byName.get(at)?.next
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

const PLUGINS_DIR = new URL('../../plugins/', import.meta.url)

/** A registry with every phase in plugins/. */
export async function loadPhases(): Promise<PhaseRegistry> {
  const registry = new PhaseRegistry()
  const files = (await readdir(PLUGINS_DIR)).filter((f) => /\.(ts|js)$/.test(f) && !f.endsWith('.d.ts')).sort()
  for (const file of files) {
    const mod = (await import(new URL(file, PLUGINS_DIR).href)) as { default?: PhaseConfig }
    if (!mod.default?.name) throw new Error(`plugins/${file} must default-export a PhaseConfig`)
    registry.register(mod.default)
  }
  return registry
}
