// Phase 3, scoping: which records of each side take part (a period, an account, …). Advances when
// both scoped samples hold rows.

import { type PhaseConfig, phasePlugin } from '../src/orchestrator/phases.js'

export default phasePlugin({
  name: 'scoping',
  tools: ['get_source_preview', 'load_scoped'],
  instructions:
    'Agree on the scope of each side: the period, accounts or other filters the user wants. Turn it into filter conditions and load each side with load_scoped (alias and conditions: column, op, value; dates as YYYY-MM-DD). If a scope comes back empty, say so and propose a wider one. Use get_source_preview when you need to see more of a source.',
  prerequisites: { sessionFields: ['schema_left', 'schema_right'] },
  contextInjections: ['schemas', 'samples', 'artifacts'],
  advancesWhen: (s) => (s.sample_left?.rows.length ?? 0) > 0 && (s.sample_right?.rows.length ?? 0) > 0,
  next: 'demonstration',
  back: ['intent'],
  owns: ['scope_left', 'scope_right', 'sample_left', 'sample_right'],
  clearsOnReturn: ['scope_left', 'scope_right', 'sample_left', 'sample_right'],
  errorPolicy: { maxRetriesPerTool: 2, onExhausted: 'remove_tool' },
} satisfies PhaseConfig)
