// mulberry32: a small, fast, seeded generator. The engine samples with it (the rows a band choice
// probes, the random pairs a probabilistic pass learns u from) and the bench generators write data
// with it: the same sequence on every machine, so seeded runs repeat exactly.

export function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
