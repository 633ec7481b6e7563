// 1:1 assignment against brute force on small random candidate graphs (fast-check): the most
// matched records, then the largest total weight; ties are exactly the records some other optimal
// assignment pairs differently; `prefer` picks the optimal assignment whose pairs, in preference
// order, come first. Weights are any reals (negative too, as a probabilistic pass's match weights).

import fc from 'fast-check'
import t from 'tap'
import { type AssignmentReport, assignOneToOne } from '../src/engine/match/assign.js'
import { pairs as matchedPairs, partitionProblems, runRows } from './helpers/engine.js'

interface Graph {
  nl: number
  nr: number
  pairs: { i: number; j: number; w: number }[]
}

// few distinct weights, so ties are common; negative ones too
const graphArb: fc.Arbitrary<Graph> = fc
  .record({ nl: fc.integer({ min: 1, max: 5 }), nr: fc.integer({ min: 1, max: 5 }) })
  .chain(({ nl, nr }) =>
    fc
      .uniqueArray(
        fc.record({
          i: fc.nat(nl - 1),
          j: fc.nat(nr - 1),
          w: fc.constantFrom(-2.5, 0, 0.25, 0.5, 0.5, 1, 1, 1, 3.75),
        }),
        { selector: (p) => `${p.i},${p.j}`, minLength: 1, maxLength: nl * nr },
      )
      .map((pairs) => ({ nl, nr, pairs })),
  )

interface Outcome {
  pairs: [number, number][]
  ties: { left: number[]; right: number[] }[]
  passedOver: string[]
  report: AssignmentReport
}

function run(g: Graph, options: Parameters<typeof assignOneToOne>[7] = {}): Outcome {
  const weight = new Map(g.pairs.map((p) => [`${p.i},${p.j}`, p.w]))
  const out: Outcome = { pairs: [], ties: [], passedOver: [], report: undefined as never }
  out.report = assignOneToOne(
    Int32Array.from(g.pairs, (p) => p.i),
    Int32Array.from(g.pairs, (p) => p.j),
    g.pairs.length,
    (i, j) => weight.get(`${i},${j}`)!,
    new Uint8Array(g.nl).fill(1),
    new Uint8Array(g.nr).fill(1),
    {
      pair: (i, j) => out.pairs.push([i, j]),
      tie: (left, right) => out.ties.push({ left: [...left].sort(), right: [...right].sort() }),
      passedOver: (side, record, winner, partner) => out.passedOver.push(`${side}${record}:${winner}@${partner}`),
    },
    options,
  )
  return out
}

/** Every matching of the graph (each left record takes one free partner or none). */
function matchings(g: Graph): number[][] {
  const byLeft = Array.from({ length: g.nl }, (_, i) =>
    g.pairs.map((p, n) => (p.i === i ? n : -1)).filter((n) => n >= 0),
  )
  const out: number[][] = []
  const usedRight = new Uint8Array(g.nr)
  const walk = (i: number, chosen: number[]) => {
    if (i === g.nl) return void out.push([...chosen])
    walk(i + 1, chosen)
    for (const n of byLeft[i]) {
      const j = g.pairs[n].j
      if (usedRight[j]) continue
      usedRight[j] = 1
      chosen.push(n)
      walk(i + 1, chosen)
      chosen.pop()
      usedRight[j] = 0
    }
  }
  walk(0, [])
  return out
}

/** The optimal matchings: the most pairs, then the largest total weight (exact: weights are multiples of 1/4). */
function optimalMatchings(g: Graph): number[][] {
  const all = matchings(g)
  const most = Math.max(...all.map((m) => m.length))
  const total = (m: number[]) => m.reduce((a, n) => a + g.pairs[n].w, 0)
  const withMost = all.filter((m) => m.length === most)
  const best = Math.max(...withMost.map(total))
  return withMost.filter((m) => total(m) === best)
}

/** Records linked by pairs of some optimal matching, in groups of two or more pairs: the ties. */
function expectedTies(g: Graph, optimal: number[][]): { left: number[]; right: number[] }[] {
  const used = [...new Set(optimal.flat())]
  const parent = new Map<string, string>()
  const find = (x: string): string => (parent.get(x) === x ? x : find(parent.get(x)!))
  for (const n of used) {
    const [a, b] = [`l${g.pairs[n].i}`, `r${g.pairs[n].j}`]
    if (!parent.has(a)) parent.set(a, a)
    if (!parent.has(b)) parent.set(b, b)
    parent.set(find(a), find(b))
  }
  const groups = new Map<string, number[]>()
  for (const n of used) {
    const root = find(`l${g.pairs[n].i}`)
    groups.set(root, [...(groups.get(root) ?? []), n])
  }
  return [...groups.values()]
    .filter((pairs) => pairs.length > 1)
    .map((pairs) => ({
      left: [...new Set(pairs.map((n) => g.pairs[n].i))].sort(),
      right: [...new Set(pairs.map((n) => g.pairs[n].j))].sort(),
    }))
}

const key = (x: unknown) => JSON.stringify(x)
const sortedKeys = (xs: unknown[]) => xs.map(key).sort()

t.test('the left 100.00/99.10, right 100.00/100.90 example: two matches, not one', async (t) => {
  // closeness of amounts: 100.00–100.00 is the best pair, but taking it strands 99.10 and 100.90
  const g: Graph = {
    nl: 2,
    nr: 2,
    pairs: [
      { i: 0, j: 0, w: 1 },
      { i: 0, j: 1, w: 0.5 },
      { i: 1, j: 0, w: 0.6 },
    ],
  }
  const out = run(g)
  t.same(
    sortedKeys(out.pairs),
    sortedKeys([
      [0, 1],
      [1, 0],
    ]),
  )
  t.same(out.ties, [])
  t.match(out.report, { uncontested: 0, components: 1, exact: 1, greedy_fallback: 0, largest_component: 3 })
  // best-first (past the exact bound) keeps the old behaviour, and says so
  const greedy = run(g, { exactBudget: 0 })
  t.same(greedy.pairs, [[0, 0]])
  t.match(greedy.report, { components: 1, exact: 0, greedy_fallback: 1 })
})

t.test('a run: left 100.00 and 99.10, right 100.00 and 100.90, same customer, within 1.00', async (t) => {
  const e = runRows(
    [{ name: 'p', pattern: '1:1', when: 'l.customer = r.customer AND ABS(l.amount - r.amount) <= 1.00' }],
    [
      { id: 'L1', customer: 'C1', amount: '100.00' },
      { id: 'L2', customer: 'C1', amount: '99.10' },
    ],
    [
      { id: 'R1', customer: 'C1', amount: '100.00' },
      { id: 'R2', customer: 'C1', amount: '100.90' },
    ],
  )
  // best-first took L1–R1 (equal amounts) and stranded L2 and R2, 1.80 apart
  t.same(matchedPairs(e), ['L1|R2', 'L2|R1'])
  t.same(
    e.matches.map((m) => [m.deltas.amount, m.ambiguous]),
    [
      ['-0.90', false],
      ['-0.90', false],
    ],
  )
  t.same(partitionProblems(e, 2, 2), [])
  t.same(e.result.summary.passes[0].assignment, {
    uncontested: 0,
    components: 1,
    exact: 1,
    greedy_fallback: 0,
    largest_component: 3,
    ties_resolved: 0,
  })
})

t.test(
  'exact assignment matches brute force: most records, then best total, ties exactly the tradeable records',
  async (t) => {
    let seenTies = 0
    let seenStranding = 0
    fc.assert(
      fc.property(graphArb, (g) => {
        const optimal = optimalMatchings(g)
        const out = run(g)
        const ties = expectedTies(g, optimal)
        seenTies += ties.length
        if (key(sortedKeys(out.ties)) !== key(sortedKeys(ties)))
          throw new Error(`ties ${key(out.ties)} vs ${key(ties)}`)
        // clean pairs: in every optimal matching, and with the ties' best they make an optimal one
        const tied = new Set(ties.flatMap((x) => x.left))
        const inEvery = g.pairs
          .map((p, n) => n)
          .filter((n) => optimal.every((m) => m.includes(n)) && !tied.has(g.pairs[n].i))
          .map((n) => [g.pairs[n].i, g.pairs[n].j])
        if (key(sortedKeys(out.pairs)) !== key(sortedKeys(inEvery)))
          throw new Error(`pairs ${key(out.pairs)} vs ${key(inEvery)}`)
        // the greedy fallback is maximal but may match fewer
        const greedy = run(g, { exactBudget: 0 })
        const greedyMatched =
          greedy.pairs.length + greedy.ties.reduce((a, x) => a + Math.min(x.left.length, x.right.length), 0)
        if (greedyMatched < optimal[0].length) seenStranding++
      }),
      { numRuns: 400 },
    )
    t.ok(seenTies > 50, `the generator makes ties (${seenTies})`)
    t.ok(seenStranding > 5, `and graphs where best-first strands records (${seenStranding})`)
  },
)

t.test(
  'prefer: an optimal assignment, the first in preference order; the records left over name the preferred',
  async (t) => {
    // preference: by left record, then right record, descending (anything total will do)
    const prefer = (i1: number, j1: number, i2: number, j2: number) => i2 - i1 || j2 - j1
    const rank = (g: Graph, n: number) => -(g.pairs[n].i * 10 + g.pairs[n].j)
    let resolved = 0
    fc.assert(
      fc.property(graphArb, (g) => {
        const optimal = optimalMatchings(g)
        const out = run(g, { prefer })
        if (out.ties.length) throw new Error('prefer leaves no tie')
        const chosen = out.pairs.map(([i, j]) => g.pairs.findIndex((p) => p.i === i && p.j === j))
        const listed = (m: number[]) => m.map((n) => rank(g, n)).sort((a, b) => a - b)
        const first = optimal.map(listed).sort((a, b) => {
          for (let k = 0; k < a.length; k++) if (a[k] !== b[k]) return a[k] - b[k]
          return 0
        })[0]
        if (key(listed(chosen)) !== key(first)) throw new Error(`chose ${key(out.pairs)}`)
        resolved += out.report.ties_resolved
        // a record left over by prefer tied with the one matched to its partner
        for (const note of out.passedOver) {
          const [, side, record, winner, partner] = /^([lr])(\d+):(\d+)@(\d+)$/.exec(note)!.map(String)
          const has = (i: number, j: number) => out.pairs.some(([a, b]) => a === i && b === j)
          const ok = side === 'l' ? has(+winner, +partner) : has(+partner, +winner)
          if (!ok || out.pairs.some(([a, b]) => (side === 'l' ? a : b) === +record)) throw new Error(`note ${note}`)
        }
      }),
      { numRuns: 400 },
    )
    t.ok(resolved > 50, `ties were resolved (${resolved})`)
  },
)

/** The most pairs, then the largest total weight, by a plain min-cost flow (Bellman–Ford paths): a second opinion. */
function referenceOptimum(g: Graph): { pairs: number; weight: number } {
  const S = g.nl + g.nr
  const T = S + 1
  const arcs: { to: number; cap: number; cost: number; rev: number }[][] = Array.from({ length: T + 1 }, () => [])
  const add = (u: number, v: number, cost: number) => {
    arcs[u].push({ to: v, cap: 1, cost, rev: arcs[v].length })
    arcs[v].push({ to: u, cap: 0, cost: -cost, rev: arcs[u].length - 1 })
  }
  for (let i = 0; i < g.nl; i++) add(S, i, 0)
  for (let j = 0; j < g.nr; j++) add(g.nl + j, T, 0)
  for (const p of g.pairs) add(p.i, g.nl + p.j, -p.w)
  let pairs = 0
  let weight = 0
  for (;;) {
    const dist = new Array<number>(T + 1).fill(Infinity)
    const via = new Array<[number, number] | null>(T + 1).fill(null)
    dist[S] = 0
    for (let round = 0; round <= T; round++)
      for (let u = 0; u <= T; u++)
        if (dist[u] < Infinity)
          arcs[u].forEach((a, k) => {
            if (a.cap > 0 && dist[u] + a.cost < dist[a.to]) {
              dist[a.to] = dist[u] + a.cost
              via[a.to] = [u, k]
            }
          })
    if (dist[T] === Infinity) return { pairs, weight }
    for (let v = T; v !== S;) {
      const [u, k] = via[v]!
      arcs[u][k].cap--
      arcs[v][arcs[u][k].rev].cap++
      v = u
    }
    pairs++
    weight -= dist[T]
  }
}

t.test(
  'on larger random graphs, the assignment has the most pairs and the best total (against min-cost flow)',
  async (t) => {
    const larger = fc
      .record({
        nl: fc.integer({ min: 2, max: 25 }),
        nr: fc.integer({ min: 2, max: 25 }),
        density: fc.double({ min: 0.05, max: 0.6 }),
      })
      .chain(({ nl, nr, density }) =>
        fc
          .array(
            fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.constantFrom(-1.5, 0, 0.25, 0.5, 0.75, 1, 2)),
            {
              minLength: nl * nr,
              maxLength: nl * nr,
            },
          )
          .map((cells) => ({
            nl,
            nr,
            pairs: cells.flatMap(([keep, w], k) => (keep < density ? [{ i: Math.floor(k / nr), j: k % nr, w }] : [])),
          })),
      )
      .filter((g) => g.pairs.length > 0)
    let compared = 0
    fc.assert(
      fc.property(larger, (g) => {
        // prefer makes it one assignment, ties resolved, so its size and total can be compared
        const out = run(g, { prefer: (i1, j1, i2, j2) => i1 - i2 || j1 - j2 })
        const weight = new Map(g.pairs.map((p) => [`${p.i},${p.j}`, p.w]))
        const total = out.pairs.reduce((a, [i, j]) => a + weight.get(`${i},${j}`)!, 0)
        const best = referenceOptimum(g)
        if (out.pairs.length !== best.pairs || total !== best.weight)
          throw new Error(
            `${out.pairs.length} pairs weighing ${total}, the optimum is ${best.pairs} weighing ${best.weight}`,
          )
        compared++
      }),
      { numRuns: 150 },
    )
    t.equal(compared, 150)
  },
)

t.test(
  'a sale with three identical settlements is one tie of four; prefer takes one and notes the other two',
  async (t) => {
    const g: Graph = { nl: 1, nr: 3, pairs: [0, 1, 2].map((j) => ({ i: 0, j, w: 0.9 })) }
    t.same(run(g).ties, [{ left: [0], right: [0, 1, 2] }])
    const first = run(g, { prefer: (i1, j1, i2, j2) => j1 - j2 })
    t.same(first.pairs, [[0, 0]])
    t.same(first.passedOver.sort(), ['r1:0@0', 'r2:0@0'])
    // two identical invoices and two identical payments: one tie of four; prefer pairs them in order
    const square: Graph = { nl: 2, nr: 2, pairs: [0, 1].flatMap((i) => [0, 1].map((j) => ({ i, j, w: 1 }))) }
    t.same(run(square).ties, [{ left: [0, 1], right: [0, 1] }])
    t.same(
      sortedKeys(run(square, { prefer: (i1, j1, i2, j2) => i1 - i2 || j1 - j2 }).pairs),
      sortedKeys([
        [0, 0],
        [1, 1],
      ]),
    )
    // a path at one weight is no tie: only one assignment matches both left records
    const path: Graph = {
      nl: 2,
      nr: 2,
      pairs: [
        { i: 0, j: 0, w: 1 },
        { i: 0, j: 1, w: 1 },
        { i: 1, j: 1, w: 1 },
      ],
    }
    t.same(run(path).ties, [])
    t.same(
      sortedKeys(run(path).pairs),
      sortedKeys([
        [0, 0],
        [1, 1],
      ]),
    )
  },
)
