// The phrases nl_to_sql understands, one clause each ("same reference ignoring case", "amount
// within 1%", "up to 4 days after"), written as conditions of the recipe language (DESIGN §2).
// Day windows are BETWEEN … INTERVAL ranges because the planner turns those into band joins.

import type { ColumnFinder } from './columns.js'
import type { TypeFamily } from './language.js'
import type { ColumnT } from './schemas.js'

export const KNOWN_PHRASES = [
  'same <column> [ignoring case]',
  'same day',
  'amount within 0.05',
  'within 5 cents',
  'amount within 1%',
  'within 7 days',
  'up to 4 days before|after',
  'similar names',
]

export interface Condition {
  sql: string
  /** The clause as the tool read it. */
  reads: string
}

/** A clause the grammar does not know, or one whose columns are missing; the words say which. */
export class PhraseError extends Error {}

/** "1" percent → "0.01", "5" cents → "0.05": the decimal text shifted two places, exact. */
export function hundredth(text: string): string {
  const [int, frac = ''] = text.split('.')
  const digits = `${int.padStart(3, '0')}${frac}`
  const whole = digits.slice(0, digits.length - frac.length - 2).replace(/^0+(?=\d)/, '')
  const rest = digits.slice(digits.length - frac.length - 2).replace(/0+$/, '')
  return rest ? `${whole}.${rest}` : whole
}

const DATE_WORDS = /^(?:dates?|days?)$/

export class RulePhrases {
  constructor(private readonly finder: ColumnFinder) {}

  /** The columns a word means on both sides, or a PhraseError naming the missing side. */
  private pair(word: string, families?: TypeFamily[]): [ColumnT, ColumnT] {
    const a = this.finder.find('a', word, families)
    const b = this.finder.find('b', word, families)
    if (!a || !b)
      throw new PhraseError(`no column for "${word}" on source ${!a ? 'a' : 'b'}${!a && !b ? ' nor b' : ''}`)
    return [a, b]
  }

  /** A date or timestamp column as whole days: timestamps are cast so a lag counts calendar days. */
  private day(side: 'l' | 'r', col: ColumnT): string {
    return col.type === 'timestamp' ? `CAST(${side}.${col.name} AS date)` : `${side}.${col.name}`
  }

  read(clause: string): Condition {
    const c = clause
      .toLowerCase()
      .replace(/^(?:the|with|both|a|an|have|has)\s+/, '')
      .trim()
    let m: RegExpExecArray | null
    if ((m = /^(?:same|equal|matching|identical)\s+(.+?)(\s+(?:ignoring case|case[- ]insensitive(?:ly)?))?$/.exec(c)))
      return this.same(m[1], !!m[2], clause)
    if ((m = /^(?:(.+?)\s+)?within\s+(\d+(?:\.\d+)?)\s*(%|percent|per cent|cents?|days?)?$/.exec(c)))
      return this.within(m[1], m[2], m[3] ?? '', clause)
    if ((m = /^(?:(.+?)\s+)?up to\s+(\d+)\s+days?\s+(before|after|later|earlier)$/.exec(c)))
      return this.lag(m[1], m[2], m[3], clause)
    if ((m = /^similar\s+(.+)$/.exec(c))) {
      const [a, b] = this.pair(m[1].replace(/s$/, ''), ['string'])
      return {
        sql: `similarity(LOWER(l.${a.name}), LOWER(r.${b.name})) >= 0.5`,
        reads: `${clause}: ${a.name} and ${b.name} alike (similarity at least 0.5)`,
      }
    }
    throw new PhraseError(`cannot read "${clause.trim()}"`)
  }

  private same(word: string, ignoreCase: boolean, clause: string): Condition {
    if (DATE_WORDS.test(word)) {
      const [a, b] = this.pair('date', ['time'])
      return { sql: `${this.day('l', a)} = ${this.day('r', b)}`, reads: `${clause}: ${a.name} and ${b.name} same day` }
    }
    const [a, b] = this.pair(word.replace(/\s+/g, '_'))
    const text = a.type === 'string' && b.type === 'string'
    const sql = ignoreCase && text ? `UPPER(TRIM(l.${a.name})) = UPPER(TRIM(r.${b.name}))` : `l.${a.name} = r.${b.name}`
    return { sql, reads: `${clause}: ${a.name} = ${b.name}${ignoreCase && text ? ', ignoring case and spaces' : ''}` }
  }

  private within(word: string | undefined, n: string, unit: string, clause: string): Condition {
    if (unit.startsWith('day')) {
      const [a, b] = this.pair(word && !DATE_WORDS.test(word) ? word : 'date', ['time'])
      const l = this.day('l', a)
      return {
        sql: `${this.day('r', b)} BETWEEN ${l} - INTERVAL '${n} days' AND ${l} + INTERVAL '${n} days'`,
        reads: `${clause}: ${b.name} at most ${n} days from ${a.name}`,
      }
    }
    const [a, b] = this.pair(word ?? 'amount', ['number'])
    const diff = `ABS(l.${a.name} - r.${b.name})`
    if (unit === '%' || unit.startsWith('per'))
      return {
        sql: `${diff} <= ${hundredth(n)} * ABS(l.${a.name})`,
        reads: `${clause}: ${a.name} and ${b.name} differ by at most ${n}% of ${a.name}`,
      }
    const tolerance = unit.startsWith('cent') ? hundredth(n) : n
    return {
      sql: `${diff} <= ${tolerance}`,
      reads: `${clause}: ${a.name} and ${b.name} differ by at most ${tolerance}`,
    }
  }

  private lag(word: string | undefined, n: string, direction: string, clause: string): Condition {
    const [a, b] = this.pair(word && !DATE_WORDS.test(word) ? word : 'date', ['time'])
    const l = this.day('l', a)
    const after = direction === 'after' || direction === 'later'
    const range = after ? `${l} AND ${l} + INTERVAL '${n} days'` : `${l} - INTERVAL '${n} days' AND ${l}`
    return {
      sql: `${this.day('r', b)} BETWEEN ${range}`,
      reads: `${clause}: ${b.name} 0 to ${n} days ${after ? 'after' : 'before'} ${a.name}`,
    }
  }
}
