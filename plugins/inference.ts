// Phase 5, inference: rules from the confirmed pairs, assembled into a recipe draft. Advances when
// a draft exists.

import { type PhaseConfig, phasePlugin } from '../src/orchestrator/phases.js'

export default phasePlugin({
  name: 'inference',
  tools: ['infer_rules', 'build_recipe', 'load_scoped'],
  instructions:
    'Infer the matching rules from the confirmed pairs with infer_rules, explain them in plain words, then assemble the recipe draft with build_recipe. If the user wants a rule changed, pass the changed rules to build_recipe. If they want another scope, load it with load_scoped: that goes back to scoping and the examples start again.',
  prerequisites: { sessionFields: ['confirmed_pairs'] },
  contextInjections: ['schemas', 'confirmed_pairs', 'rules', 'recipe_draft', 'artifacts'],
  advancesWhen: (s) => s.recipe_draft !== null,
  next: 'validation',
  back: ['scoping', 'demonstration'],
  owns: ['rules', 'recipe_draft'],
  clearsOnReturn: ['recipe_draft'],
  errorPolicy: { maxRetriesPerTool: 2, onExhausted: 'remove_tool' },
} satisfies PhaseConfig)
