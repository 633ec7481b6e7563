// String distance, used to suggest the column a user probably meant.

export function levenshtein(a: string, b: string): number {
  if (a === b) return 0
  if (a.length === 0) return b.length
  if (b.length === 0) return a.length
  let prev = new Array<number>(b.length + 1)
  let cur = new Array<number>(b.length + 1)
  for (let j = 0; j <= b.length; j++) prev[j] = j
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i
    const ca = a.charCodeAt(i - 1)
    for (let j = 1; j <= b.length; j++) {
      const cost = ca === b.charCodeAt(j - 1) ? 0 : 1
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    }
    ;[prev, cur] = [cur, prev]
  }
  return prev[b.length]
}

/**
 * Up to `max` candidates closest to `name` (case-insensitive), nearest first: the plausible typos
 * when there are some, otherwise simply the nearest, so a suggestion is never empty.
 */
export function nearestNames(name: string, candidates: readonly string[], max = 3): string[] {
  const target = name.toLowerCase()
  const ranked = candidates
    .map((c) => {
      const lower = c.toLowerCase()
      const contains = lower.includes(target) || target.includes(lower)
      return { c, d: levenshtein(target, lower) - (contains ? 2 : 0) }
    })
    .sort((x, y) => x.d - y.d || x.c.localeCompare(y.c))
  const close = ranked.filter((x) => x.d <= Math.max(2, Math.floor(target.length / 3)))
  return (close.length ? close : ranked).slice(0, max).map((x) => x.c)
}
