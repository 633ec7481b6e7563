// The reconcile command's usage text, on its own: `concord --help` prints it without loading the
// engine, the database or the server.

export const RECONCILE_USAGE = `usage: concord reconcile --left FILE_OR_ALIAS --right FILE_OR_ALIAS --recipe recipe.json
                         [--lookup name=FILE_OR_ALIAS ...] [--param name=value ...]
                         [--out DIR] [--format csv|arrow] [--json] [--workspace ID]

  --left, --right  a CSV or JSON file, or the alias of a registered source
  --workspace      the workspace whose sources the aliases name (default: default)
  --recipe         the recipe (JSON); its left and right sources are bound to --left and --right
  --lookup         the file or alias for one of the recipe's lookups (repeatable); a lookup not
                   given reads the registered source its declaration names
  --param          a value for one of the recipe's parameters (repeatable)
  --out DIR        write matches, ambiguous (held for review), unmatched-left and unmatched-right
                   files into DIR
  --format         csv (default) or arrow, for --out
  --json           print the summary as JSON instead of a table`
