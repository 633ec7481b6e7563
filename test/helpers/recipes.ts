// Recipes shared by the tests over the real datasets (../shared/datasets): the same rules give
// the same counts in the engine, through REST and from the command line.

import type { Recipe } from '../../src/recipes/schema.js'

/** kalla/generated: invoices vs payments; the two "duplicates" are invoices paid in two parts. */
export const kallaRecipe: Recipe = {
  name: 'invoices-vs-payments',
  left: { source: 'invoices', key: ['invoice_id'] },
  right: { source: 'payments', key: ['payment_id'] },
  passes: [
    { name: 'exact', pattern: '1:1', when: 'l.invoice_id = r.reference_number AND l.amount = r.paid_amount' },
    {
      name: 'tolerance',
      pattern: '1:1',
      when: 'l.invoice_id = r.reference_number AND ABS(l.amount - r.paid_amount) <= l.amount * 0.02',
    },
    {
      // found as groups, never double-matched
      name: 'split',
      pattern: '1:N',
      when: "l.customer_id = r.payer_id AND r.reference_number LIKE l.invoice_id || '-PART%'",
      aggregate: { sum: 'r.paid_amount', equals: 'l.amount', tolerance: 0.01, max_group: 4 },
    },
  ],
}

/** acquirer-settlement: the dataset's suggested rules. */
export const acquirerRecipe: Recipe = {
  name: 'ledger-vs-acquirer',
  left: { source: 'ledger', key: ['ledger_tx_id'] },
  right: { source: 'settlement', key: ['acquirer_tx_id'] },
  passes: [
    { name: 'exact', pattern: '1:1', when: 'l.order_id = r.order_id AND l.authorization_code = r.authorization_code' },
    {
      name: 'tolerance',
      pattern: '1:1',
      when: "l.order_id = r.order_id AND ABS(l.amount - r.gross_amount) <= 0.05 AND r.settlement_date BETWEEN CAST(l.occurred_at AS date) AND CAST(l.occurred_at AS date) + INTERVAL '4 days'",
    },
  ],
}
