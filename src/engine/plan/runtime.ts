// Null-aware helpers called by compiled predicate code (SQL three-valued logic: NULL is `null`).
// Kept tiny so V8 inlines them into the generated loops.

import { levenshtein } from '../../language/similarity.js'

type V = number | string | boolean | null

export const runtime = {
  /** Scales decimal units (or an integer) by 10^k; NULL stays NULL. */
  mul: (x: number | null, f: number): number | null => (x === null ? null : x * f),
  add: (a: number | null, b: number | null): number | null => (a === null || b === null ? null : a + b),
  sub: (a: number | null, b: number | null): number | null => (a === null || b === null ? null : a - b),
  times: (a: number | null, b: number | null): number | null => (a === null || b === null ? null : a * b),
  div: (a: number | null, b: number | null): number | null => (a === null || b === null || b === 0 ? null : a / b),
  mod: (a: number | null, b: number | null): number | null => (a === null || b === null || b === 0 ? null : a % b),
  neg: (a: number | null): number | null => (a === null ? null : -a),
  abs: (a: number | null): number | null => (a === null ? null : Math.abs(a)),
  eq: (a: V, b: V): boolean | null => (a === null || b === null ? null : a === b),
  ne: (a: V, b: V): boolean | null => (a === null || b === null ? null : a !== b),
  lt: (a: V, b: V): boolean | null => (a === null || b === null ? null : a < b),
  le: (a: V, b: V): boolean | null => (a === null || b === null ? null : a <= b),
  gt: (a: V, b: V): boolean | null => (a === null || b === null ? null : a > b),
  ge: (a: V, b: V): boolean | null => (a === null || b === null ? null : a >= b),
  /** String ordering by code point (the C collation the filters use), not UTF-16 units. */
  scmp: (a: string | null, b: string | null): number | null =>
    a === null || b === null ? null : codepointCompare(a, b),
  not: (a: boolean | null): boolean | null => (a === null ? null : !a),
  isNull: (a: V): boolean => a === null,
  upper: (s: string | null) => (s === null ? null : s.toUpperCase()),
  lower: (s: string | null) => (s === null ? null : s.toLowerCase()),
  // PostgreSQL's trim removes spaces only (not tabs or newlines): so does the engine
  trim: (s: string | null) => (s === null ? null : s.replace(/^ +| +$/g, '')),
  ltrim: (s: string | null) => (s === null ? null : s.replace(/^ +/, '')),
  rtrim: (s: string | null) => (s === null ? null : s.replace(/ +$/, '')),
  length: (s: string | null) => (s === null ? null : [...s].length),
  concat: (a: V, b: V): string | null => (a === null || b === null ? null : String(a) + String(b)),
  substring: (s: string | null, from: number | null, len?: number | null): string | null => {
    if (s === null || from === null || len === null) return null
    const chars = [...s]
    const start = Math.max(from, 1)
    const end = len === undefined ? chars.length + 1 : from + len
    return chars.slice(start - 1, Math.max(start - 1, end - 1)).join('')
  },
  replace: (s: string | null, a: string | null, b: string | null) =>
    s === null || a === null || b === null ? null : s.split(a).join(b),
  regexpReplace: (s: string | null, re: RegExp, b: string | null) =>
    s === null || b === null ? null : s.replace(re, b.replace(/\\(\d)/g, '$$$1')),
  like: (s: string | null, re: RegExp): boolean | null => (s === null ? null : re.test(s)),
  coalesce: (...xs: V[]): V => {
    for (const x of xs) if (x !== null) return x
    return null
  },
  greatest: (...xs: V[]): V => {
    let best: V = null
    for (const x of xs) if (x !== null && (best === null || order(x, best) > 0)) best = x
    return best
  },
  least: (...xs: V[]): V => {
    let best: V = null
    for (const x of xs) if (x !== null && (best === null || order(x, best) < 0)) best = x
    return best
  },
  /** ROUND half away from zero (as PostgreSQL's numeric), on units: divide by 10^k. */
  roundUnits: (x: number | null, f: number): number | null =>
    x === null ? null : Math.sign(x) * Math.round(Math.abs(x) / f),
  roundFloat: (x: number | null, digits: number): number | null =>
    x === null ? null : Math.round(x * 10 ** digits) / 10 ** digits,
  similarity: (a: string | null, b: string | null): number | null =>
    a === null || b === null ? null : trigramSimilarity(a, b),
  levenshtein: (a: string | null, b: string | null): number | null =>
    a === null || b === null ? null : levenshtein(a, b),
  dateTrunc: (unit: string, days: number | null): number | null => (days === null ? null : truncDays(unit, days)),
  tsTrunc: (unit: string, ms: number | null): number | null =>
    ms === null ? null : truncDays(unit, Math.floor(ms / 86_400_000)) * 86_400_000,
  /** A date as a timestamp (its midnight UTC). */
  dayMs: (d: number | null): number | null => (d === null ? null : d * 86_400_000),
}

export type Runtime = typeof runtime

/** Strings by code point (the C collation), everything else by value. */
function order(a: number | string | boolean, b: number | string | boolean): number {
  if (typeof a === 'string' && typeof b === 'string') return codepointCompare(a, b)
  return a > b ? 1 : a < b ? -1 : 0
}

function codepointCompare(a: string, b: string): number {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)!
    const y = b.codePointAt(i)!
    if (x !== y) return x - y
    if (x > 0xffff) i++
  }
  return a.length - b.length
}

function truncDays(unit: string, days: number): number {
  const d = new Date(days * 86_400_000)
  const y = d.getUTCFullYear()
  const m = d.getUTCMonth()
  switch (unit) {
    case 'day':
      return days
    case 'week':
      return days - ((d.getUTCDay() + 6) % 7) // ISO weeks start on Monday
    case 'month':
      return Date.UTC(y, m, 1) / 86_400_000
    case 'quarter':
      return Date.UTC(y, m - (m % 3), 1) / 86_400_000
    default:
      return Date.UTC(y, 0, 1) / 86_400_000
  }
}

/**
 * How many trigram similarities have been computed, process-wide: a test holds the engine to
 * computing one per pair that needs it (candidate checks, scores and evidence share it).
 */
export const similarityComputed = { count: 0 }

/** pg_trgm's similarity: shared trigrams over the union, words padded with two leading and one trailing space. */
export function trigramSimilarity(a: string, b: string): number {
  similarityComputed.count++
  const ta = trigrams(a)
  const tb = trigrams(b)
  if (ta.size === 0 && tb.size === 0) return 0
  let shared = 0
  for (const t of ta) if (tb.has(t)) shared++
  return shared / (ta.size + tb.size - shared)
}

function trigrams(s: string): Set<string> {
  const out = new Set<string>()
  for (const word of s.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (!word) continue
    const padded = `  ${word} `
    const chars = [...padded]
    for (let i = 0; i + 3 <= chars.length; i++) out.add(chars.slice(i, i + 3).join(''))
  }
  return out
}
