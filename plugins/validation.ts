// Phase 6, validation: the draft checked and tried on the samples; the user approves it (a card).
// Advances when approved.

import { type PhaseConfig, phasePlugin } from '../src/orchestrator/phases.js'

export default phasePlugin({
  name: 'validation',
  tools: ['validate_recipe', 'run_sample', 'build_recipe', 'load_scoped'],
  instructions:
    'Check the recipe draft with validate_recipe and try it on the scoped samples with run_sample. Report the counts and the unmatched records in plain words, then ask the user to approve the recipe on the validation card. If they want a rule changed, rebuild the draft with build_recipe and validate it again. If they want another scope, load it with load_scoped: that goes back to scoping and the examples start again.',
  prerequisites: { sessionFields: ['recipe_draft'] },
  contextInjections: ['recipe_draft', 'validation', 'last_run', 'artifacts'],
  advancesWhen: (s) => s.validation_approved,
  next: 'execution',
  back: ['scoping', 'demonstration', 'inference'],
  owns: ['validation', 'validation_approved'],
  clearsOnReturn: ['validation', 'validation_approved'],
  errorPolicy: { maxRetriesPerTool: 2, onExhausted: 'remove_tool' },
} satisfies PhaseConfig)
