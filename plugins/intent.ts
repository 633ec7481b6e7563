// Phase 2, intent: which two sources to reconcile. The first source previewed is the left side,
// the second the right. Advances when both schemas are loaded.

import { type PhaseConfig, phasePlugin } from '../src/orchestrator/phases.js'

export default phasePlugin({
  name: 'intent',
  tools: ['list_sources', 'get_source_preview'],
  instructions:
    'Agree with the user on the two sources to reconcile. Preview the left source first with get_source_preview, then the right one: the first preview becomes the left side. If the user names a source that is not in the list, say so and show the list again with list_sources.',
  prerequisites: { sessionFields: ['sources_list'] },
  contextInjections: ['sources', 'schemas', 'artifacts'],
  advancesWhen: (s) => s.schema_left !== null && s.schema_right !== null,
  next: 'scoping',
  back: ['greeting'],
  owns: ['left_alias', 'right_alias', 'schema_left', 'schema_right'],
  clearsOnReturn: [],
  errorPolicy: { maxRetriesPerTool: 2, onExhausted: 'remove_tool' },
} satisfies PhaseConfig)
