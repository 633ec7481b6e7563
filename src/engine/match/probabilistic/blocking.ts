// Blocking: which pairs a probabilistic pass weighs at all. Every rule is a cheap join — an
// equality (a hash join), a range (a band join) or shares_token(l.x, r.y[, cap]) (records whose
// texts share a token held by at most `cap` records on either side: a surname, not "REF") — and
// the candidates are the pairs any rule holds for. Rules are unioned without duplicates as splink
// does it: a pair a rule finds is kept only when no earlier rule holds for it, so each pair is
// found once and every rule's count is the pairs it adds.

import { type Expr, parsePredicate } from '../../../language/predicate.js'
import type { LookupSet } from '../../data/lookup.js'
import type { Table } from '../../data/table.js'
import { ExprCompiler } from '../../plan/compile.js'
import { planPass, sidesOf } from '../../plan/plan.js'
import { PairList } from '../join.js'
import { collectCandidates, preparePass } from '../pass.js'
import { prepareText, type PreparedText, Vocabulary } from '../text/prepared.js'

/** Tokens held by more records than this, on either side, do not block (unless the rule says). */
export const DEFAULT_TOKEN_CAP = 100

export interface BlockingReport {
  rule: string
  /** How the rule joins: hash keys, a band, or shared tokens. */
  join: 'hash' | 'band' | 'token'
  /** Candidate pairs this rule added (pairs an earlier rule holds for are not counted again). */
  pairs: number
  /** Token rules: tokens left out for being too common. */
  capped_tokens?: number
}

export interface Blocked {
  pairs: PairList
  reports: BlockingReport[]
}

interface TokenRule {
  left: Expr
  right: Expr
  cap: number
  /** The rule's other conjuncts, if any: checked on each pair. */
  rest: Expr[]
}

/** The top-level shares_token() conjunct of a rule, if it has one. */
function tokenRule(rule: Expr): TokenRule | undefined {
  const conjuncts = rule.kind === 'and' ? rule.args : [rule]
  const at = conjuncts.findIndex((c) => c.kind === 'call' && c.name === 'shares_token')
  if (at < 0) return undefined
  const call = conjuncts[at] as Extract<Expr, { kind: 'call' }>
  const [a, b, cap] = call.args
  const only = (e: Expr, side: 'l' | 'r') => {
    const s = sidesOf(e)
    return s.size === 1 && s.has(side)
  }
  const pair = only(a, 'l') && only(b, 'r') ? [a, b] : only(a, 'r') && only(b, 'l') ? [b, a] : undefined
  if (!pair) return undefined
  return {
    left: pair[0],
    right: pair[1],
    cap: cap?.kind === 'number' ? Number(cap.text) : DEFAULT_TOKEN_CAP,
    rest: conjuncts.filter((_, k) => k !== at),
  }
}

/** How a rule will join (undefined: it has no usable join), without data: validation and explain. */
export function blockingJoin(
  rule: string,
  types: (side: 'l' | 'r', column: string) => string | undefined,
): 'hash' | 'band' | 'token' | undefined {
  const expr = parsePredicate(rule)
  if (tokenRule(expr)) return 'token'
  const plan = planPass(expr, rule, types)
  return plan.keys.length ? 'hash' : plan.bands.length ? 'band' : undefined
}

/**
 * The candidate pairs of the free records (rows of the tables) under the rules, each pair once.
 */
export function blockedPairs(
  rules: string[],
  tables: { l: Table; r: Table },
  leftFree: Uint8Array,
  rightFree: Uint8Array,
  parallel: boolean,
  lookups?: LookupSet,
): Blocked {
  const schemas = { l: tables.l.columns, r: tables.r.columns, ...(lookups ? { lookups: lookups.schemas } : {}) }
  const compiler = new ExprCompiler(schemas, tables, lookups)
  const pairs = new PairList(Math.max(tables.l.length, tables.r.length) * 4)
  const reports: BlockingReport[] = []
  /** Whether an earlier rule holds for a pair: its pairs are already in. */
  const earlier: ((i: number, j: number) => boolean)[] = []
  const isNew = (i: number, j: number) => {
    for (let k = 0; k < earlier.length; k++) if (earlier[k](i, j)) return false
    return true
  }
  for (const [n, rule] of rules.entries()) {
    const expr = parsePredicate(rule)
    const before = pairs.length
    const token = tokenRule(expr)
    let report: BlockingReport
    if (token) {
      const join = new TokenJoin(token, compiler, tables)
      join.pairs(leftFree, rightFree, (i, j) => {
        if (isNew(i, j)) pairs.push(i, j)
      })
      earlier.push((i, j) => join.holds(i, j))
      report = { rule, join: 'token', pairs: 0, capped_tokens: join.capped }
    } else {
      const p = preparePass(-1, { name: `block_${n + 1}`, pattern: '1:1', when: rule }, tables, {}, undefined, {
        parallel,
        lookups,
      })
      collectCandidates(p, leftFree, rightFree, (i, j) => {
        if (isNew(i, j)) pairs.push(i, j)
      })
      earlier.push(compiler.build<(i: number, j: number) => boolean>('i, j', `${compiler.compile(expr).code} === true`))
      report = { rule, join: p.plan.keys.length ? 'hash' : 'band', pairs: 0 }
    }
    report.pairs = pairs.length - before
    reports.push(report)
  }
  return { pairs, reports }
}

/**
 * Records sharing a token that at most `cap` records hold on each side. A pair sharing several
 * such tokens is produced once: for the smallest token id they share.
 */
class TokenJoin {
  private readonly l: PreparedText
  private readonly r: PreparedText
  /** 1 for tokens too common to block on. */
  private readonly common: Uint8Array
  readonly capped: number
  private readonly rest: ((i: number, j: number) => boolean) | null

  constructor(rule: TokenRule, compiler: ExprCompiler, tables: { l: Table; r: Table }) {
    const vocabulary = new Vocabulary()
    const read = (e: Expr, side: 'l' | 'r', n: number) => {
      const f = compiler.build<(row: number) => string | null>(side === 'l' ? 'i' : 'j', compiler.compile(e).code)
      const out = new Array<string | null>(n)
      for (let row = 0; row < n; row++) out[row] = f(row)
      return out
    }
    this.l = prepareText(read(rule.left, 'l', tables.l.length), vocabulary)
    this.r = prepareText(read(rule.right, 'r', tables.r.length), vocabulary)
    const held = (p: PreparedText) => {
      const count = new Int32Array(vocabulary.size)
      for (let k = 0; k < p.tokens.length; k++) count[p.tokens[k]]++
      return count
    }
    const inLeft = held(this.l)
    const inRight = held(this.r)
    this.common = new Uint8Array(vocabulary.size)
    let capped = 0
    for (let t = 0; t < vocabulary.size; t++) {
      if (inLeft[t] > rule.cap || inRight[t] > rule.cap) {
        this.common[t] = 1
        capped++
      }
    }
    this.capped = capped
    this.rest = rule.rest.length
      ? compiler.build<(i: number, j: number) => boolean>(
          'i, j',
          rule.rest.map((e) => `${compiler.compile(e).code} === true`).join(' && '),
        )
      : null
  }

  /** The smallest token both rows hold that is not too common, or -1. */
  private firstShared(i: number, j: number): number {
    const a = this.l.tokens
    const b = this.r.tokens
    let x = this.l.tokenStart[i]
    const xe = this.l.tokenStart[i + 1]
    let y = this.r.tokenStart[j]
    const ye = this.r.tokenStart[j + 1]
    while (x < xe && y < ye) {
      if (a[x] === b[y]) {
        if (this.common[a[x]] === 0) return a[x]
        x++
        y++
      } else if (a[x] < b[y]) x++
      else y++
    }
    return -1
  }

  holds(i: number, j: number): boolean {
    return this.firstShared(i, j) >= 0 && (this.rest === null || this.rest(i, j))
  }

  pairs(leftFree: Uint8Array, rightFree: Uint8Array, emit: (i: number, j: number) => void): void {
    // right rows by token (free ones, tokens that block), as one CSR list
    const r = this.r
    const size = this.common.length
    const start = new Int32Array(size + 1)
    for (let j = 0; j < r.length; j++) {
      if (rightFree[j] === 0) continue
      for (let k = r.tokenStart[j]; k < r.tokenStart[j + 1]; k++)
        if (this.common[r.tokens[k]] === 0) start[r.tokens[k] + 1]++
    }
    for (let t = 0; t < size; t++) start[t + 1] += start[t]
    const rows = new Int32Array(start[size])
    const cursor = start.slice(0, size)
    for (let j = 0; j < r.length; j++) {
      if (rightFree[j] === 0) continue
      for (let k = r.tokenStart[j]; k < r.tokenStart[j + 1]; k++) {
        const t = r.tokens[k]
        if (this.common[t] === 0) rows[cursor[t]++] = j
      }
    }
    const l = this.l
    for (let i = 0; i < l.length; i++) {
      if (leftFree[i] === 0) continue
      for (let k = l.tokenStart[i]; k < l.tokenStart[i + 1]; k++) {
        const t = l.tokens[k]
        if (this.common[t] === 1) continue
        for (let n = start[t]; n < start[t + 1]; n++) {
          const j = rows[n]
          if (this.firstShared(i, j) === t && (this.rest === null || this.rest(i, j))) emit(i, j)
        }
      }
    }
  }
}
