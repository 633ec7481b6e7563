// Phase 1, greeting: find out what sources exist. Advances once the source list is known.

import type { PhaseConfig } from '../src/orchestrator/phases.js'

export default {
  name: 'greeting',
  tools: ['list_sources'],
  instructions:
    'Greet the user briefly and find out which sources are registered with list_sources, so you can ask which two they want to reconcile. Do not guess source names.',
  prerequisites: { sessionFields: [] },
  contextInjections: ['sources', 'artifacts'],
  advancesWhen: (s) => s.sources_list !== null,
  next: 'intent',
  back: [],
  owns: ['sources_list'],
  errorPolicy: { maxRetriesPerTool: 2, onExhausted: 'remove_tool' },
} satisfies PhaseConfig
