// The ground truth of the shared datasets (../shared/datasets/README.md), one judge per dataset:
// the true links between rows of its two files. Accuracy tests score a run's claimed links
// against them (test/ai-rules.test.ts, test/helpers/wizard.ts).

import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { jsonValue } from '../../src/engine/data/builder.js'
import type { Table } from '../../src/engine/data/table.js'
import { loadCsv } from '../../src/engine/load/csv/index.js'
import { loadJson } from '../../src/engine/load/json.js'
import { datasetsDir } from './datasets.js'

export interface DatasetFile {
  /** Inside the datasets folder. */
  path: string
  type: 'csv' | 'json'
  /** The column naming each row (what truth files and lookups use). */
  id: string
}

/** True links between left and right rows, numbered from 0 in file order. */
export class Links {
  private readonly set = new Set<string>()
  private readonly ofLeft = new Map<number, number[]>()
  private readonly ofRight = new Map<number, number[]>()

  constructor(readonly pairs: readonly (readonly [left: number, right: number])[]) {
    for (const [l, r] of pairs) {
      this.set.add(`${l}|${r}`)
      this.ofLeft.set(l, [...(this.ofLeft.get(l) ?? []), r])
      this.ofRight.set(r, [...(this.ofRight.get(r) ?? []), l])
    }
  }

  get size(): number {
    return this.set.size
  }

  has(left: number, right: number): boolean {
    return this.set.has(`${left}|${right}`)
  }

  partnersOfLeft(left: number): readonly number[] {
    return this.ofLeft.get(left) ?? []
  }

  partnersOfRight(right: number): readonly number[] {
    return this.ofRight.get(right) ?? []
  }

  /** The same links seen from the other side. */
  flipped(): Links {
    return new Links(this.pairs.map(([l, r]) => [r, l] as const))
  }
}

export interface Truth {
  left: Table
  right: Table
  links: Links
}

export interface Judge {
  /** What the truth is read from, in a line (for reports). */
  basis: string
  left: DatasetFile
  right: DatasetFile
  load(): Promise<Truth>
}

export async function loadFile(file: DatasetFile): Promise<Table> {
  const path = join(datasetsDir, file.path)
  return file.type === 'json' ? loadJson(path) : (await loadCsv(path)).table
}

/** A column's values as strings, row by row. */
export function cells(table: Table, name: string): string[] {
  const n = table.columns.findIndex((c) => c.name === name)
  if (n < 0) throw new Error(`no column "${name}"`)
  const col = table.data[n]
  return Array.from({ length: table.length }, (_, i) => String(jsonValue(col, i)))
}

/** Row numbers by id; an id given twice is a broken truth, not something to score around. */
function rowsById(table: Table, column: string): Map<string, number> {
  const ids = cells(table, column)
  const rows = new Map(ids.map((id, i) => [id, i]))
  if (rows.size !== ids.length) throw new Error(`ids in "${column}" are not unique`)
  return rows
}

/** A judge whose truth is a CSV of (left id, right id) links, one per line after a header. */
function linkFileJudge(folder: string, left: DatasetFile, right: DatasetFile): Judge {
  return {
    basis: `${folder}/truth.csv`,
    left,
    right,
    async load() {
      const [l, r] = await Promise.all([loadFile(left), loadFile(right)])
      const [lRows, rRows] = [rowsById(l, left.id), rowsById(r, right.id)]
      const lines = (await readFile(join(datasetsDir, folder, 'truth.csv'), 'utf8')).trim().split(/\r?\n/)
      const [header, ...body] = lines
      if (header.trim() !== `${left.id},${right.id}`) throw new Error(`${folder}/truth.csv: header ${header}`)
      const pairs = body.map((line) => {
        const [a, b] = line.trim().split(',')
        const pair = [lRows.get(a), rRows.get(b)] as const
        if (pair[0] === undefined || pair[1] === undefined) throw new Error(`${folder}/truth.csv: unknown ${line}`)
        return pair as readonly [number, number]
      })
      return { left: l, right: r, links: new Links(pairs) }
    },
  }
}

/** transfers/: sent vs received bank transfers, 1:1, 8,843 links in truth.csv. */
export const transfersJudge = linkFileJudge(
  'transfers',
  { path: 'transfers/sent.csv', type: 'csv', id: 'sent_id' },
  { path: 'transfers/received.csv', type: 'csv', id: 'received_id' },
)

/** payouts/: card captures vs payouts, N:1 (one truth line per capture), 2,210 links. */
export const payoutsJudge = linkFileJudge(
  'payouts',
  { path: 'payouts/captures.csv', type: 'csv', id: 'capture_id' },
  { path: 'payouts/payouts.csv', type: 'csv', id: 'payout_id' },
)

/**
 * acquirer-settlement's truth, from the `scenario` columns and the README's suggested rules (same
 * order_id + authorization_code; or same order_id, amount within 0.05, settled 0..4 days after):
 * a settlement row's true partner is the ledger sale of its order_id when the settlement is
 * exact_order_and_authorization_match, settlement_lag_candidate (same order and authorization,
 * settled later), amount_tolerance_candidate (0.03 off: within 0.05) or fee_variance_candidate
 * (gross equal, the fee differs). It has none when it is amount_mismatch_outside_tolerance (7.25
 * off: outside 0.05), duplicate_settlement_candidate (a second and third settlement of an order
 * already settled) or acquirer_only_settlement; chargebacks and ledger-only rows have none.
 * 785 links, one per ledger sale that has a true settlement.
 */
export const acquirerJudge: Judge = {
  basis: 'acquirer-settlement scenario columns',
  left: { path: 'acquirer-settlement/ledger-midaz.csv', type: 'csv', id: 'ledger_tx_id' },
  right: { path: 'acquirer-settlement/acquirer-settlement.json', type: 'json', id: 'acquirer_tx_id' },
  async load() {
    const [ledger, settlement] = await Promise.all([loadFile(this.left), loadFile(this.right)])
    const lScenario = cells(ledger, 'scenario')
    const rScenario = cells(settlement, 'scenario')
    const MATCHABLE = new Set([
      'exact_order_and_authorization_match',
      'settlement_lag_candidate',
      'amount_tolerance_candidate',
      'fee_variance_candidate',
    ])
    const saleOf = new Map<string, number>()
    cells(ledger, 'order_id').forEach((o, i) => {
      if (lScenario[i] === 'ledger_sale_candidate') saleOf.set(o, i)
    })
    const pairs: [number, number][] = []
    cells(settlement, 'order_id').forEach((o, j) => {
      const sale = saleOf.get(o)
      if (MATCHABLE.has(rScenario[j]) && sale !== undefined) pairs.push([sale, j])
    })
    return { left: ledger, right: settlement, links: new Links(pairs) }
  },
}

/**
 * kalla's truth: a payment's invoice is the one its reference_number names, exactly or with a
 * -PARTn suffix (a split: the parts together pay it), in the same currency. INV-2024-002-DUP is
 * a likely duplicate payment (README), not a match; ADVANCE-001, the blank reference, MISC-001,
 * the EUR payment INT-ORDER-001 (no invoice of that reference in any currency) and UNKNOWN-n name
 * no invoice. One link per payment that has an invoice.
 */
export function kallaJudge(folder: 'kalla' | 'kalla/generated'): Judge {
  return {
    basis: `${folder}: reference_number names the invoice`,
    left: { path: `${folder}/invoices.csv`, type: 'csv', id: 'invoice_id' },
    right: { path: `${folder}/payments.csv`, type: 'csv', id: 'payment_id' },
    async load() {
      const [invoices, payments] = await Promise.all([loadFile(this.left), loadFile(this.right)])
      const invoiceIds = cells(invoices, 'invoice_id')
      const iCurrency = cells(invoices, 'currency')
      const pCurrency = cells(payments, 'currency')
      const pairs: [number, number][] = []
      cells(payments, 'reference_number').forEach((ref, j) => {
        const i = invoiceIds.indexOf(ref.replace(/-PART\d+$/, ''))
        if (i >= 0 && iCurrency[i] === pCurrency[j]) pairs.push([i, j])
      })
      return { left: invoices, right: payments, links: new Links(pairs) }
    },
  }
}

/**
 * kalla/generated's own count (stats.json), which its judge must agree with: 30 exact + 7 within
 * tolerance + 2 invoices paid in 2 parts = every payment but the 5 right-only ones; every invoice
 * but the 11 left-only ones is paid.
 */
export async function kallaGeneratedStatsProblems(truth: Truth): Promise<string[]> {
  const stats = JSON.parse(await readFile(join(datasetsDir, 'kalla/generated/stats.json'), 'utf8'))
  const problems: string[] = []
  const links = truth.links.size
  const paidInvoices = new Set(truth.links.pairs.map(([l]) => l)).size
  if (links !== stats.exact_matches + stats.tolerance_matches + 2 * stats.duplicates)
    problems.push(
      `${links} links, stats say ${stats.exact_matches} + ${stats.tolerance_matches} + 2 × ${stats.duplicates}`,
    )
  if (links !== stats.total_payments - stats.orphan_right)
    problems.push(`${links} links, stats say ${stats.total_payments} - ${stats.orphan_right} paying payments`)
  if (paidInvoices !== stats.total_invoices - stats.orphan_left)
    problems.push(`${paidInvoices} paid invoices, stats say ${stats.total_invoices} - ${stats.orphan_left}`)
  return problems
}
