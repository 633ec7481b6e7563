// A stable argsort of numbers without a comparator. `Uint32Array.prototype.sort` with a comparator
// calls back into JavaScript n log n times: ordering 250,000 exceptions by age or amount took
// ~45 ms of the event loop the first time a list was sorted that way. A radix sort over each
// number's bits, arranged so that they order as the numbers do, takes four linear passes.

const LITTLE_ENDIAN = new Uint32Array(new Float64Array([1]).buffer)[1] === 0x3ff00000
const HI = LITTLE_ENDIAN ? 1 : 0
const LO = 1 - HI

/**
 * The positions of `key` in ascending order of their values, equal values in position order (as
 * `(a, b) => key[a] - key[b] || a - b` would sort them; -0 and 0 are equal, NaN comes last).
 */
export function ascendingOrder(key: ArrayLike<number>): Uint32Array {
  const n = key.length
  const bits = new Float64Array(n)
  for (let i = 0; i < n; i++) bits[i] = key[i] === 0 ? 0 : key[i]
  // IEEE 754 bits order as the numbers do once negatives are inverted and positives get the sign bit
  const words = new Uint32Array(bits.buffer)
  for (let i = 0; i < n; i++) {
    const hi = words[2 * i + HI]
    if (hi & 0x80000000) {
      words[2 * i + HI] = ~hi
      words[2 * i + LO] = ~words[2 * i + LO]
    } else words[2 * i + HI] = hi | 0x80000000
  }
  let order = new Uint32Array(n)
  for (let i = 0; i < n; i++) order[i] = i
  let spare = new Uint32Array(n)
  const counts = new Uint32Array(0x10001)
  // least significant 16 bits first; each pass is stable, so ties keep position order
  for (const [word, shift] of [
    [LO, 0],
    [LO, 16],
    [HI, 0],
    [HI, 16],
  ]) {
    counts.fill(0)
    for (let i = 0; i < n; i++) counts[((words[2 * i + word] >>> shift) & 0xffff) + 1]++
    // a pass where every number has the same digit changes nothing
    if (n === 0 || counts.includes(n)) continue
    for (let d = 1; d <= 0x10000; d++) counts[d] += counts[d - 1]
    for (let i = 0; i < n; i++) {
      const at = order[i]
      spare[counts[(words[2 * at + word] >>> shift) & 0xffff]++] = at
    }
    ;[order, spare] = [spare, order]
  }
  return order
}
