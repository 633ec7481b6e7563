// Phase 1, greeting: find out what sources exist. Advances once the source list is known.

import { type PhaseConfig, phasePlugin } from '../src/orchestrator/phases.js'

export default phasePlugin({
  name: 'greeting',
  tools: ['list_sources'],
  instructions:
    'Greet the user briefly and find out which sources are registered with list_sources, so you can ask which two they want to reconcile. Do not guess source names.',
  prerequisites: { sessionFields: [] },
  contextInjections: ['sources', 'artifacts'],
  advancesWhen: (s) => s.sources_list !== null,
  next: 'intent',
  back: [],
  // the source list is a fact about the workspace, not the user's work: refreshing it later
  // (list_sources in intent) never sends the session back
  owns: [],
  clearsOnReturn: [],
  errorPolicy: { maxRetriesPerTool: 2, onExhausted: 'remove_tool' },
} satisfies PhaseConfig)
