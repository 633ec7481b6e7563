// Passes form a DAG by `after` (default: the pass written before). Depth phases are computed up
// front; a cycle is reported with its path.

import type { RecipePass } from '../../recipes/schema.js'

export interface PassOrder {
  /** Passes grouped by depth: every pass's dependencies are in earlier phases. */
  phases: string[][]
  dependencies: Map<string, string[]>
}

export class PassGraphError extends Error {
  constructor(
    readonly code: 'pass_cycle' | 'unknown_pass' | 'duplicate_pass',
    message: string,
    readonly pass: string,
  ) {
    super(message)
  }
}

export function orderPasses(passes: RecipePass[]): PassOrder {
  const names = new Set<string>()
  for (const p of passes) {
    if (names.has(p.name)) throw new PassGraphError('duplicate_pass', `two passes are named "${p.name}"`, p.name)
    names.add(p.name)
  }
  const dependencies = new Map<string, string[]>()
  passes.forEach((p, n) => {
    const deps = p.after ?? (n > 0 ? [passes[n - 1].name] : [])
    for (const d of deps) {
      if (!names.has(d))
        throw new PassGraphError(
          'unknown_pass',
          `pass "${p.name}" runs after "${d}", which is not a pass of this recipe`,
          p.name,
        )
    }
    dependencies.set(p.name, deps)
  })
  const cycle = findCycle(
    passes.map((p) => p.name),
    dependencies,
  )
  if (cycle) throw new PassGraphError('pass_cycle', `passes form a cycle: ${cycle.join(' → ')}`, cycle[0])
  const depth = new Map<string, number>()
  const depthOf = (name: string): number => {
    const known = depth.get(name)
    if (known !== undefined) return known
    const d = Math.max(-1, ...dependencies.get(name)!.map(depthOf)) + 1
    depth.set(name, d)
    return d
  }
  const phases: string[][] = []
  for (const p of passes) {
    const d = depthOf(p.name)
    if (!phases[d]) phases[d] = []
    phases[d].push(p.name)
  }
  return { phases, dependencies }
}

function findCycle(names: string[], deps: Map<string, string[]>): string[] | undefined {
  const state = new Map<string, 'visiting' | 'done'>()
  const stack: string[] = []
  const visit = (n: string): string[] | undefined => {
    if (state.get(n) === 'done') return undefined
    if (state.get(n) === 'visiting') return [...stack.slice(stack.indexOf(n)), n]
    state.set(n, 'visiting')
    stack.push(n)
    for (const d of deps.get(n) ?? []) {
      const c = visit(d)
      if (c) return c
    }
    stack.pop()
    state.set(n, 'done')
    return undefined
  }
  for (const n of names) {
    const c = visit(n)
    if (c) return c.reverse()
  }
  return undefined
}
