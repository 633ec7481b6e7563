// The vocabulary the deterministic tools share: how a column name breaks into words, which words
// mean the same in reconciliation (amount/total/paid_amount…), and how close two names are.
// A workspace glossary's synonym groups extend the built-in ones; they never replace them.

import type { ColumnType } from '../engine/data/types.js'
import type { GlossaryT } from './schemas.js'

/**
 * Groups of names that mean the same. A group entry is a single word (matched against each word
 * of a name) or a whole name such as paid_amount (matched against the whole column name).
 */
export const SYNONYM_GROUPS: readonly (readonly string[])[] = [
  ['amount', 'total', 'paid_amount', 'gross_amount', 'value', 'sum', 'amt'],
  [
    'date',
    'day',
    'posted_at',
    'booking_date',
    'occurred_at',
    'settlement_date',
    'payment_date',
    'invoice_date',
    'transaction_date',
    'txn_date',
    'created_at',
  ],
  ['ref', 'reference', 'reference_number', 'invoice_id', 'id'],
  ['customer', 'payer', 'client', 'account'],
  ['name', 'title', 'label'],
  ['currency', 'ccy', 'currency_code'],
]

/** Words that say little alone: an "id" shared by two names is weak evidence that they match. */
const WEAK_WORDS: ReadonlySet<string> = new Set(['id', 'code', 'number', 'no', 'nr', 'num', 'key', 'at'])

/** snake_case, camelCase, kebab-case and spaces, as lower-case words. */
export function nameWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean)
}

/** The canonical form of a name: its words joined by _, so postedAt and posted_at compare equal. */
export const canonicalName = (name: string) => nameWords(name).join('_')

export class Vocabulary {
  private readonly wordGroup = new Map<string, number>()
  private readonly nameGroup = new Map<string, number>()

  constructor(glossary?: GlossaryT) {
    const groups = [...SYNONYM_GROUPS, ...(glossary?.synonyms ?? [])]
    groups.forEach((group, g) => {
      for (const entry of group) {
        const canonical = canonicalName(entry)
        const target = canonical.includes('_') ? this.nameGroup : this.wordGroup
        // a glossary group that reuses a built-in word joins that word's group
        if (!target.has(canonical)) target.set(canonical, g)
        this.nameGroup.set(canonical, this.nameGroup.get(canonical) ?? g)
      }
    })
  }

  /** The synonym group of a whole name (paid_amount → the amount group), if any. */
  groupOfName(name: string): number | undefined {
    return this.nameGroup.get(canonicalName(name))
  }

  /** A word's meaning: its synonym group, or the word itself. */
  private sense(word: string): string {
    const g = this.wordGroup.get(word) ?? this.wordGroup.get(word.replace(/s$/, ''))
    return g === undefined ? word : `#${g}`
  }

  /**
   * How alike two names are, 0..1: 1 for the same name, 0.9 for two names of one synonym group,
   * otherwise the weighted share of word meanings they have in common (weak words count less).
   */
  nameScore(a: string, b: string): number {
    const ca = canonicalName(a)
    const cb = canonicalName(b)
    if (ca === cb) return 1
    const ga = this.groupOfName(ca)
    if (ga !== undefined && ga === this.groupOfName(cb)) return 0.9
    const senses = (words: string[]) => new Map(words.map((w) => [this.sense(w), WEAK_WORDS.has(w) ? 0.4 : 1]))
    const sa = senses(nameWords(a))
    const sb = senses(nameWords(b))
    let shared = 0
    for (const [s, w] of sa) if (sb.has(s)) shared += Math.min(w, sb.get(s) ?? 0)
    const total = (m: Map<string, number>) => [...m.values()].reduce((x, y) => x + y, 0)
    const whole = Math.max(total(sa), total(sb))
    return whole === 0 ? 0 : Math.round((800 * shared) / whole) / 1000
  }
}

export type TypeFamily = 'number' | 'time' | 'string' | 'boolean'

export function typeFamily(type: ColumnType): TypeFamily {
  if (type === 'integer' || type === 'decimal' || type === 'float') return 'number'
  if (type === 'date' || type === 'timestamp') return 'time'
  return type === 'boolean' ? 'boolean' : 'string'
}

/**
 * 1 when values of the two types compare directly (decimal~integer~float, date~timestamp), 0.3
 * for ids kept as numbers on one side and text on the other, null when they never match.
 */
export function typeCompatibility(a: ColumnType, b: ColumnType): number | null {
  const fa = typeFamily(a)
  const fb = typeFamily(b)
  if (fa === fb) return 1
  if ((fa === 'string' && fb === 'number') || (fa === 'number' && fb === 'string')) return 0.3
  return null
}
