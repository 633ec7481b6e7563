// Phase 4, demonstration: the user shows what a match is by confirming pairs the agent proposes
// (cards). Advances at three confirmed pairs.

import { type PhaseConfig, phasePlugin } from '../src/orchestrator/phases.js'

export default phasePlugin({
  name: 'demonstration',
  tools: ['propose_match', 'load_scoped'],
  instructions:
    'Ask the user to confirm examples of matching records. Call propose_match to show candidate pairs from the two samples as cards the user confirms or rejects; three confirmed pairs are needed. Do not confirm pairs yourself. If the user wants another scope, load it with load_scoped: that starts the examples again.',
  prerequisites: { sessionFields: ['sample_left', 'sample_right'] },
  contextInjections: ['samples', 'proposals', 'confirmed_pairs', 'artifacts'],
  advancesWhen: (s) => s.confirmed_pairs.length >= 3,
  next: 'inference',
  back: ['scoping'],
  owns: ['proposals', 'confirmed_pairs'],
  clearsOnReturn: ['proposals', 'confirmed_pairs'],
  errorPolicy: { maxRetriesPerTool: 2, onExhausted: 'remove_tool' },
} satisfies PhaseConfig)
