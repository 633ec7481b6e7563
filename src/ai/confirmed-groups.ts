// Confirmed pairs as groups: pairs that share a record belong together (a payout confirmed with
// three captures is one group of three pairs), and a group's shape is the pattern it shows.

import type { Pattern } from '../recipes/schema.js'

export interface PairPosition {
  left: number
  right: number
}

export interface ConfirmedGroup {
  lefts: number[]
  rights: number[]
  pairs: PairPosition[]
  /** 1:1, 1:N (one left record, several right), N:1, or N:M. */
  shape: Pattern
}

/** The connected components of the confirmed pairs, in the order their first pair was given. */
export function confirmedGroups(pairs: PairPosition[]): ConfirmedGroup[] {
  const parent = new Map<string, string>()
  const find = (x: string): string => {
    let root = x
    while (parent.get(root) !== root) root = parent.get(root)!
    parent.set(x, root)
    return root
  }
  const node = (x: string) => {
    if (!parent.has(x)) parent.set(x, x)
    return find(x)
  }
  for (const p of pairs) {
    const a = node(`l${p.left}`)
    const b = node(`r${p.right}`)
    if (a !== b) parent.set(b, a)
  }
  const byRoot = new Map<string, ConfirmedGroup>()
  for (const p of pairs) {
    const root = find(`l${p.left}`)
    let g = byRoot.get(root)
    if (!g) {
      g = { lefts: [], rights: [], pairs: [], shape: '1:1' }
      byRoot.set(root, g)
    }
    if (!g.lefts.includes(p.left)) g.lefts.push(p.left)
    if (!g.rights.includes(p.right)) g.rights.push(p.right)
    g.pairs.push(p)
  }
  for (const g of byRoot.values()) g.shape = shapeOf(g.lefts.length, g.rights.length)
  return [...byRoot.values()]
}

function shapeOf(lefts: number, rights: number): Pattern {
  if (lefts === 1) return rights === 1 ? '1:1' : '1:N'
  return rights === 1 ? 'N:1' : 'N:M'
}

/** Whether a pass of `pattern` can match a group of `shape` whole: N:M any, a group sum one of a single record. */
export const patternTakes = (pattern: Pattern, shape: Pattern) =>
  pattern === 'N:M' || pattern === shape || shape === '1:1'

export const pairText = (p: PairPosition) => `(left ${p.left}, right ${p.right})`
