// ascendingOrder: the same order as a comparator sort (ties by position), on floats with
// negatives, -0, infinities and many ties, on integers, and on the empty and one-element cases.

import t from 'tap'
import { ascendingOrder } from '../src/engine/data/order.js'
import { prng } from '../src/engine/data/prng.js'

const byComparator = (key: ArrayLike<number>) =>
  Uint32Array.from({ length: key.length }, (_, i) => i).sort((a, b) => key[a] - key[b] || a - b)

t.test('orders as a comparator sort does, equal values in position order', async (t) => {
  const random = prng(7)
  const floats = Float64Array.from({ length: 20_000 }, () => {
    const r = random()
    return r < 0.1 ? 0 : r < 0.15 ? -0 : Math.round((random() - 0.4) * 1e6) / 100
  })
  floats.set([Infinity, -Infinity, 1e300, -1e-300, 5e-324], 100)
  t.same(ascendingOrder(floats), byComparator(floats))
  const days = Int32Array.from(
    { length: 20_000 },
    () => 19_000 + Math.floor(random() * 400) - (random() < 0.01 ? 30_000 : 0),
  )
  t.same(ascendingOrder(days), byComparator(days))
  const same = new Float64Array(1000).fill(12.5)
  t.same(ascendingOrder(same), byComparator(same), 'all equal: positions unchanged')
  t.same(ascendingOrder(new Float64Array(0)), new Uint32Array(0))
  t.same(ascendingOrder([3]), Uint32Array.of(0))
  t.same(ascendingOrder([2, -1, 2, 0, -0, -1]), Uint32Array.of(1, 5, 3, 4, 0, 2))
})

t.test('NaN comes last', async (t) => {
  t.same(ascendingOrder([NaN, 1, -1]), Uint32Array.of(2, 1, 0))
})
