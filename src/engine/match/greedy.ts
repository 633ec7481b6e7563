// Best-first 1:1 assignment of a component too costly to solve exactly (assign.ts counts it as
// `greedy_fallback` in the pass report): pairs are taken by weight, best first. Within one weight
// level, records with two or more free partners at that weight are a tie: one ambiguous match, or
// with `prefer`, the level's pairs are taken in preference order. It is maximal (no two records
// left free could still be paired) but may match fewer records than the exact assignment.

import type { ComponentEmitter } from './assign.js'
import type { Component } from './workspace.js'

/** Assigns the component; returns how many ties `prefer` resolved. */
export function assignGreedy(c: Component, emit: ComponentEmitter, order?: (a: number, b: number) => number): number {
  const { nl, nr, edges, edgeLeft, edgeRight, weight, leftRow, rightRow } = c
  const byWeight = Array.from({ length: edges }, (_, e) => e).sort(
    (a, b) =>
      weight[b] - weight[a] ||
      leftRow[edgeLeft[a]] - leftRow[edgeLeft[b]] ||
      rightRow[edgeRight[a]] - rightRow[edgeRight[b]],
  )
  const mateLeft = new Int32Array(nl).fill(-1)
  const mateRight = new Int32Array(nr).fill(-1)
  const taken = { l: new Uint8Array(nl), r: new Uint8Array(nr) }
  const free = (e: number) => !taken.l[edgeLeft[e]] && !taken.r[edgeRight[e]]
  const take = (e: number) => {
    taken.l[edgeLeft[e]] = 1
    taken.r[edgeRight[e]] = 1
    mateLeft[edgeLeft[e]] = e
    mateRight[edgeRight[e]] = e
    emit.pair(e)
  }
  let resolved = 0
  const contended: number[] = []
  for (let start = 0; start < edges;) {
    let end = start
    while (end < edges && weight[byWeight[end]] === weight[byWeight[start]]) end++
    const level = byWeight.slice(start, end).filter(free)
    start = end
    if (order) {
      level.sort(order)
      let took = 0
      for (const e of level) if (free(e)) took += (take(e), 1)
      if (took < level.length) {
        resolved++
        contended.push(...level)
      }
      continue
    }
    if (level.length === 1) {
      take(level[0])
      continue
    }
    for (const g of levelGroups(c, level)) {
      if (g.pairs.length === 1) take(g.pairs[0])
      else {
        for (const i of g.left) taken.l[i] = 1
        for (const j of g.right) taken.r[j] = 1
        emit.tie(g.left, g.right, g.pairs, g.pairs)
      }
    }
  }
  if (order && contended.length) emit.passedOver(contended.sort(order), mateLeft, mateRight)
  return resolved
}

/** Connected groups of one weight level's free pairs: a group of one pair is a clean match. */
function levelGroups(c: Component, level: number[]): { left: number[]; right: number[]; pairs: number[] }[] {
  const parent = new Map<number, number>()
  const find = (x: number): number => {
    let root = x
    while (parent.get(root) !== root) root = parent.get(root)!
    parent.set(x, root)
    return root
  }
  const node = (e: number, side: 'l' | 'r') => (side === 'l' ? c.edgeLeft[e] : c.nl + c.edgeRight[e])
  for (const e of level) {
    for (const x of [node(e, 'l'), node(e, 'r')]) if (!parent.has(x)) parent.set(x, x)
    const a = find(node(e, 'l'))
    const b = find(node(e, 'r'))
    if (a !== b) parent.set(a, b)
  }
  const groups = new Map<number, { left: Set<number>; right: Set<number>; pairs: number[] }>()
  for (const e of level) {
    const root = find(node(e, 'l'))
    const g = groups.get(root) ?? { left: new Set<number>(), right: new Set<number>(), pairs: [] }
    g.left.add(c.edgeLeft[e])
    g.right.add(c.edgeRight[e])
    g.pairs.push(e)
    groups.set(root, g)
  }
  return [...groups.values()].map((g) => ({
    left: [...g.left].sort((a, b) => a - b),
    right: [...g.right].sort((a, b) => a - b),
    pairs: g.pairs,
  }))
}
