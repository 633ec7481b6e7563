// Phase 7, execution: the approved recipe runs on the full scopes. Terminal.

import { type PhaseConfig, phasePlugin } from '../src/orchestrator/phases.js'

export default phasePlugin({
  name: 'execution',
  tools: ['run_full', 'run_sample', 'show_exceptions'],
  instructions:
    'Run the approved recipe on the full scopes with run_full and report the outcome: matches per pass, unmatched on each side, amounts. ' +
    'What the full run could not match became exceptions: when the user asks what is left to work, or after a run with unmatched records, call show_exceptions and explain the reasons and the largest amounts at risk (the user sees the card). ' +
    'Offer to run again with run_sample or run_full if the user asks.',
  prerequisites: { sessionFields: ['recipe_draft', 'validation_approved'] },
  contextInjections: ['recipe_draft', 'last_run', 'artifacts'],
  advancesWhen: () => false,
  back: ['scoping', 'demonstration', 'inference', 'validation'],
  owns: ['last_run'],
  clearsOnReturn: [],
  errorPolicy: { maxRetriesPerTool: 2, onExhausted: 'remove_tool' },
} satisfies PhaseConfig)
