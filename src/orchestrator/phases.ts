// Phases as configuration (DESIGN §3). Each file in plugins/ default-exports one PhaseConfig; the
// registry loads them all. The loop reads a phase's tools, instructions, prerequisites, context and
// advancement rule from here and has no branch of its own for any phase.

import { readdir } from 'node:fs/promises'
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
  /** Earlier phases this one may return to when the user changes their work. */
  back: PhaseName[]
  /** The fields this phase produces: going back to an earlier phase clears those of later ones. */
  owns: SessionField[]
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
