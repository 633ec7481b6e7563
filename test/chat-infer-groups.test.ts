// The chat agent's infer_rules tool hands infer_rules each confirmed record once, so pairs that
// share a record read as the group they are: three captures confirmed with one payout are N:1.

import t from 'tap'
import { AiService } from '../src/ai/service.js'
import { agentTool } from '../src/orchestrator/tools.js'
import type { SessionState } from '../src/orchestrator/session.js'

const captures = [
  { capture_id: 'C1', seller_id: 'S1', net_amount: '100.00' },
  { capture_id: 'C2', seller_id: 'S1', net_amount: '50.00' },
  { capture_id: 'C3', seller_id: 'S2', net_amount: '20.00' },
  { capture_id: 'C4', seller_id: 'S2', net_amount: '30.00' },
]
const payouts = [
  { payout_id: 'P1', seller_id: 'S1', amount: '149.51' },
  { payout_id: 'P2', seller_id: 'S2', amount: '49.51' },
]

t.test('confirmed pairs sharing a payout reach infer_rules as one group', async (t) => {
  const tool = agentTool('infer_rules')!
  const state = {
    schema_left: [
      { name: 'capture_id', type: 'string' },
      { name: 'seller_id', type: 'string' },
      { name: 'net_amount', type: 'decimal', scale: 2 },
    ],
    schema_right: [
      { name: 'payout_id', type: 'string' },
      { name: 'seller_id', type: 'string' },
      { name: 'amount', type: 'decimal', scale: 2 },
    ],
    sample_left: { rows: captures },
    sample_right: { rows: payouts },
    confirmed_pairs: [
      { left: captures[0], right: payouts[0] },
      { left: captures[1], right: payouts[0] },
      { left: captures[2], right: payouts[1] },
      { left: captures[3], right: payouts[1] },
    ],
  } as unknown as SessionState
  const app = { ai: new AiService({ mode: 'deterministic' }) }
  const outcome = await tool.run(app as never, 'default', state, {})
  const rules = outcome.result as { pattern: string; rules: { pattern?: string; aggregate?: { sum: string } }[] }
  t.equal(rules.pattern, 'N:1')
  t.match(rules.rules[0], { pattern: 'N:1', aggregate: { sum: 'SUM(l.net_amount) - 0.49' } })
})
