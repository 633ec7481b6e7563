// MatchBuilder.finish orders matches pass by pass (in the order passes ran) and within a pass by
// first left record. Runs of 1:1 pairs only are gathered array by array (skipping `pass` when the
// passes emitted their matches in the order they ran, and `ambiguous` when nothing is); runs with
// a group are copied. All must give the order a plain sort gives, with every field still on its
// match.

import fc from 'fast-check'
import t from 'tap'
import { MatchBuilder } from '../src/engine/explain/evidence.js'

interface Made {
  pass: number
  left: number[]
  right: number[]
  score: number
  ambiguous: boolean
}

// matches over distinct records, emitted in random order; `groups` adds some with two left records
const matchesArb = (groups: boolean) =>
  fc
    .record({
      size: fc.integer({ min: 0, max: 60 }),
      seed: fc.array(fc.integer({ min: 0, max: 1_000_000 }), { minLength: 200, maxLength: 200 }),
      passes: fc.integer({ min: 1, max: 3 }),
      // matches emitted pass after pass, in the order the passes ran (as reconcile does)
      inRunOrder: fc.boolean(),
      // some pairs flagged ambiguous (a tie of two records is a group, but the flag is per match)
      flagged: fc.boolean(),
    })
    .map(({ size, seed, passes, inRunOrder, flagged }) => {
      const leftFree = Array.from({ length: 200 }, (_, i) => i).sort((a, b) => seed[a] - seed[b])
      const rightFree = [...leftFree].reverse()
      const made: Made[] = []
      for (let k = 0; k < size; k++) {
        const two = groups && seed[k] % 4 === 0
        const left = two ? [leftFree.pop()!, leftFree.pop()!].sort((a, b) => a - b) : [leftFree.pop()!]
        const ambiguous = two || (flagged && seed[k + 3] % 5 === 0)
        made.push({ pass: seed[k + 1] % passes, left, right: [rightFree.pop()!], score: seed[k + 2] / 1e6, ambiguous })
      }
      // passes ran last first (see check): emitting in run order means the highest pass first
      if (inRunOrder) made.sort((a, b) => b.pass - a.pass)
      return { made, passes }
    })

const check = (groups: boolean) =>
  fc.assert(
    fc.property(matchesArb(groups), ({ made, passes }) => {
      const b = new MatchBuilder(200, 200)
      for (const m of made) {
        if (m.left.length === 1) b.pair(m.pass, m.left[0], m.right[0], m.score, m.ambiguous, m.left[0], m.right[0])
        else b.group(m.pass, m.left, m.right, m.score, m.ambiguous, m.left[0], m.right[0])
      }
      const passOrder = Array.from({ length: passes }, (_, n) => passes - 1 - n) // passes ran last first
      const set = b.finish(passOrder, 200)
      const want = [...made].sort(
        (a, b) => passOrder.indexOf(a.pass) - passOrder.indexOf(b.pass) || a.left[0] - b.left[0],
      )
      if (set.count !== want.length) return false
      return want.every((m, k) => {
        const left = [...set.leftRows.subarray(set.leftStart[k], set.leftStart[k + 1])]
        const right = [...set.rightRows.subarray(set.rightStart[k], set.rightStart[k + 1])]
        return (
          set.pass[k] === m.pass &&
          set.score[k] === m.score &&
          set.ambiguous[k] === (m.ambiguous ? 1 : 0) &&
          set.amountDelta[k] === m.left[0] &&
          set.daysDelta[k] === m.right[0] &&
          JSON.stringify(left) === JSON.stringify(m.left) &&
          JSON.stringify(right) === JSON.stringify(m.right)
        )
      })
    }),
    { numRuns: 300 },
  )

t.test('pairs only: gathered in order, every field travels with its match', async (t) => {
  t.doesNotThrow(() => check(false))
})

t.test('with groups: copied in order, groups keep their records', async (t) => {
  t.doesNotThrow(() => check(true))
})

t.test('a builder not sized from its tables grows past its first arrays', async (t) => {
  const b = new MatchBuilder()
  for (let k = 0; k < 5000; k++) b.pair(0, 4999 - k, k, 1, false, 0, 0)
  const set = b.finish([0], 5000)
  t.equal(set.count, 5000)
  t.same([set.leftRows[0], set.rightRows[0], set.leftRows[4999], set.rightRows[4999]], [0, 4999, 4999, 0])
})
