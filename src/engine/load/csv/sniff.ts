// Delimiter detection and header names.

export type Delimiter = ',' | ';' | '\t'

/** The delimiter that splits the first lines into the most consistent, then the most, fields. */
export function sniffDelimiter(head: string): Delimiter {
  const lines = head.split(/\r?\n/).filter((l) => l.trim() !== '')
  if (lines.length > 1) lines.pop() // the last line of a sample may be cut short
  const sample = lines.slice(0, 20)
  let best: Delimiter = ','
  let bestScore = -1
  for (const d of [',', ';', '\t'] as Delimiter[]) {
    const counts = sample.map((l) => countOutsideQuotes(l, d))
    if (counts.length === 0 || counts[0] === 0) continue
    const consistent = counts.filter((c) => c === counts[0]).length
    const score = consistent * 1000 + counts[0]
    if (score > bestScore) {
      bestScore = score
      best = d
    }
  }
  return best
}

function countOutsideQuotes(line: string, d: string): number {
  let n = 0
  let quoted = false
  for (const ch of line) {
    if (ch === '"') quoted = !quoted
    else if (ch === d && !quoted) n++
  }
  return n
}

/** Trimmed header names; blanks become column_N, repeats get _2, _3 … */
export function headerNames(record: string[]): string[] {
  const seen = new Map<string, number>()
  return record.map((raw, i) => {
    const base = raw.trim() || `column_${i + 1}`
    const n = (seen.get(base) ?? 0) + 1
    seen.set(base, n)
    return n === 1 ? base : `${base}_${n}`
  })
}
