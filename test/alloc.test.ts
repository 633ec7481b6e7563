// Large arrays sized for huge pages (src/engine/data/alloc.ts): the bytes asked of the allocator
// make a mapping of whole 2 MiB pages when that costs at most an eighth more, and the array a
// caller gets is exactly as long as asked, zeroed, whichever buffer holds it.

import t from 'tap'
import { largeArray, largeSharedArray, roomFor } from '../src/engine/data/alloc.js'
import { isShared, sharedArray } from '../src/engine/data/shared.js'

const MiB = 1024 * 1024

t.test('rounds a large block up to whole huge pages only when that is cheap', async (t) => {
  t.equal(roomFor(4_000_000), 4 * MiB - 64, 'a million Int32: to 4 MiB, less room for the header')
  t.equal(roomFor(8_000_000), 8 * MiB - 64, 'a million Float64: to 8 MiB')
  t.equal(roomFor(1_000_000), 1_000_000, 'a million bytes: rounding to 2 MiB would double it')
  t.equal(roomFor(2_600_000), 2_600_000, '2.6 MB: 4 MiB would be half as much again')
  t.equal(roomFor(4 * MiB - 64), 4 * MiB - 64, 'already a whole number of pages')
  t.equal(roomFor(4 * MiB - 63), 4 * MiB - 63, 'one byte over: 6 MiB would cost half as much again')
  t.equal(roomFor(64 * MiB + 1), 66 * MiB - 64, 'large: the last page is a small part of it')
  t.equal(roomFor(0), 0)
  t.equal(roomFor(100), 100)
})

t.test('an array is as long as asked, zeroed, in ordinary or shared memory', async (t) => {
  const a = largeArray(Int32Array, 1_000_000)
  t.equal(a.length, 1_000_000)
  t.equal(a.byteOffset, 0)
  t.equal(a.buffer.byteLength, 4 * MiB - 64, 'in a buffer with the rounded room')
  t.ok(
    a.every((x) => x === 0),
    'zeroed',
  )
  a.fill(7)
  t.equal(new Int32Array(a.buffer)[1_000_000], 0, 'the room after it is not the array')
  t.notOk(isShared(a))
  const s = largeSharedArray(Float64Array, 1_000_000)
  t.equal(s.length, 1_000_000)
  t.ok(isShared(s))
  const small = sharedArray(Uint8Array, 10)
  t.equal(small.buffer.byteLength, 10, 'a small one is exactly its size')
  t.equal(sharedArray(Int32Array, 1_000_000).buffer.byteLength, 4 * MiB - 64, 'sharedArray sizes the same way')
})
