// A small bank-vs-invoices world whose every unmatched record has a known reason, and helpers to
// run it and read its exceptions through REST.

import type { FastifyInstance } from 'fastify'
import type { Recipe } from '../../src/recipes/schema.js'
import { waitForRun } from './runs.js'

export const bankHeader = 'txn_id,amount,txn_date,reference'
export const invoiceHeader = 'invoice_id,total_amount,invoice_date,ref,fee'

/** Day one: each line says why it is there. */
export const dayOne = {
  bank: [
    bankHeader,
    'T1,100.00,2024-03-10,R1', // matches I1
    'T2,100.00,2024-03-10,R2', // I2 is 97.00 with a stated fee of 3.00: fee_variance
    'T3,500.00,2024-03-10,R3', // I3 is 450.00: amount_outside_tolerance (10%)
    'T4,200.00,2024-03-10,R4', // I4 is dated ten days before: date_outside_window
    'T5,75.25,2024-03-09,R5', // no invoice: missing_counterpart
    'T6,300.00,2024-03-10,R6', // T6 and T7 tie for I6: one ambiguous match
    'T7,300.00,2024-03-10,R6',
    'T8,1000.00,2024-03-10,R8', // I8 is 995.00, no fee stated: within 1% → fee_variance
  ].join('\n'),
  invoices: [
    invoiceHeader,
    'I1,100.00,2024-03-09,R1,',
    'I2,97.00,2024-03-09,R2,3.00',
    'I3,450.00,2024-03-09,R3,',
    'I4,200.00,2024-02-29,R4,',
    'I5,60.00,2024-03-08,R9,', // no bank line: missing_counterpart
    'I6,300.00,2024-03-09,R6,',
    'I8,995.00,2024-03-09,R8,',
  ].join('\n'),
}

export const bankRecipe: Recipe = {
  name: 'bank-vs-invoices',
  left: { source: 'bank', key: ['txn_id'] },
  right: { source: 'invoices', key: ['invoice_id'] },
  passes: [
    {
      name: 'exact',
      pattern: '1:1',
      when: "l.reference = r.ref AND ABS(l.amount - r.total_amount) <= 0.01 AND r.invoice_date BETWEEN l.txn_date - INTERVAL '3 days' AND l.txn_date",
    },
  ],
}

export async function registerBankSources(app: FastifyInstance, bank = 'bank.csv', invoices = 'invoices.csv') {
  for (const [alias, path] of [
    ['bank', bank],
    ['invoices', invoices],
  ]) {
    const res = await app.inject({ method: 'POST', url: '/api/sources', payload: { alias, type: 'csv', path } })
    if (res.statusCode !== 201) throw new Error(res.body)
  }
}

export async function saveRecipe(app: FastifyInstance, recipe: Recipe = bankRecipe): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/api/recipes', payload: recipe })
  if (res.statusCode !== 201) throw new Error(res.body)
  return res.json().id
}

export async function completedRun(app: FastifyInstance, body: Record<string, unknown>) {
  const res = await app.inject({ method: 'POST', url: '/api/runs', payload: body })
  if (res.statusCode !== 202) throw new Error(res.body)
  return waitForRun(app, res.json().id)
}

export interface ExceptionItem {
  id: number
  run_id: string
  last_run_id: string | null
  side: string
  record_key: string
  reason: string
  status: string
  resolution: string | null
  resolution_detail: Record<string, unknown> | null
  amount: string | null
  amount_at_risk: string
  difference: string | null
  candidate_key: string | null
  record_date: string | null
  age_days: number
  match_id: string | null
  keys: { left: string[]; right: string[] } | null
  assignee: string | null
  version: number
  carry: boolean
}

/** Every exception matching the query, page after page. */
export async function allExceptions(app: FastifyInstance, query = '', headers = {}): Promise<ExceptionItem[]> {
  const out: ExceptionItem[] = []
  let cursor: string | null = null
  for (;;) {
    const sep = query ? '&' : ''
    const res: { statusCode: number; body: string; json(): unknown } = await app.inject({
      url: `/api/exceptions?${query}${sep}limit=500${cursor ? `&cursor=${cursor}` : ''}`,
      headers,
    })
    if (res.statusCode !== 200) throw new Error(res.body)
    const page = res.json() as { items: ExceptionItem[]; next_cursor: string | null }
    out.push(...page.items)
    cursor = page.next_cursor
    if (!cursor) return out
  }
}

export const byKey = (items: ExceptionItem[]) => Object.fromEntries(items.map((e) => [e.record_key, e]))
