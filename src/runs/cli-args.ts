// The arguments of `concord reconcile`, apart from the command's modules: bin/concord.js reads them
// to start the command again with huge pages (hugePagesEnv), src/cli.ts before it loads the
// engine, to start the engine's helper threads early (warmForFiles).

import { statSync } from 'node:fs'
import { ConcordError } from '../errors.js'
import { RECONCILE_USAGE } from './usage.js'

export interface Args {
  left: string
  right: string
  recipe: string
  params: Record<string, string>
  lookups: Record<string, string>
  out?: string
  format: 'csv' | 'arrow'
  json: boolean
  workspace: string
}

export function parseArgs(argv: string[]): Args {
  const args: Partial<Args> & { params: Record<string, string>; lookups: Record<string, string> } = {
    params: {},
    lookups: {},
    format: 'csv',
    json: false,
    workspace: 'default',
  }
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]
    const value = () => {
      const v = argv[++i]
      if (v === undefined) throw usage(`${flag} needs a value`)
      return v
    }
    switch (flag) {
      case '--left':
        args.left = value()
        break
      case '--right':
        args.right = value()
        break
      case '--recipe':
        args.recipe = value()
        break
      case '--param': {
        const v = value()
        const eq = v.indexOf('=')
        if (eq <= 0) throw usage(`--param takes name=value, not "${v}"`)
        args.params[v.slice(0, eq)] = v.slice(eq + 1)
        break
      }
      case '--lookup': {
        const v = value()
        const eq = v.indexOf('=')
        if (eq <= 0 || eq === v.length - 1) throw usage(`--lookup takes name=FILE_OR_ALIAS, not "${v}"`)
        args.lookups[v.slice(0, eq)] = v.slice(eq + 1)
        break
      }
      case '--out':
        args.out = value()
        break
      case '--format': {
        const v = value()
        if (v !== 'csv' && v !== 'arrow') throw usage(`--format is csv or arrow, not "${v}"`)
        args.format = v
        break
      }
      case '--json':
        args.json = true
        break
      case '--workspace':
        args.workspace = value()
        break
      default:
        throw usage(`unknown option "${flag}"`)
    }
  }
  for (const required of ['left', 'right', 'recipe'] as const)
    if (!args[required]) throw usage(`--${required} is required`)
  return args as Args
}

function usage(message: string): ConcordError {
  return new ConcordError('usage', message, 2, RECONCILE_USAGE)
}

/** Files from this size on are taken to be large enough for the engine's helper threads. */
const WARM_MIN_BYTES = 4 * 1024 * 1024

/**
 * Starts the threads a large run will want — the engine's partitioning helper and, with `--out`
 * as CSV, the set writer's — when either side is a file of WARM_MIN_BYTES or more. Called before
 * the command's modules are loaded, so they boot on the core that loading leaves idle: booted when
 * the run needed them, they shared the cores with the partitioning of the sides, and the engine's
 * thread waited for the helper's side (1M × 1M, five alternated runs each: waits of 55–149 ms
 * became 7–71 ms, the command's wall median 2.24 → 2.11 s). Arguments it cannot read are left to
 * the command to report; an alias (not a file) warms nothing here.
 */
export async function warmForFiles(argv: string[]): Promise<{ partition: boolean; sets: boolean }> {
  const sides = largerSide(argv)
  if (!sides || sides.bytes < WARM_MIN_BYTES) return { partition: false, sets: false }
  const { args } = sides
  const { partitionHelper } = await import('../engine/match/partition-helper.js')
  partitionHelper()
  if (args.out === undefined || args.format !== 'csv') return { partition: true, sets: false }
  const { warmHelper } = await import('./write-sets.js')
  warmHelper(Number.POSITIVE_INFINITY)
  return { partition: true, sets: true }
}

/** A side's file from this size on runs the command with huge pages (hugePagesEnv). */
const HUGE_PAGES_MIN_BYTES = 16 * 1024 * 1024

/**
 * The environment `concord reconcile` started as `node bin/concord.js` starts itself again with so
 * that glibc's malloc backs large blocks with transparent huge pages —
 * `GLIBC_TUNABLES=glibc.malloc.hugetlb=1`, which `npm start`, the image and the `concord` command's
 * shebang line set, and which glibc reads only when a process starts. Writing fresh memory is much
 * of a large run's cost (see ARCHITECTURE.md, "memory"): 1M × 1M, four alternated runs each,
 * 2.71–2.85 s without, 2.27–2.41 s with. Starting again costs a second start of node (120–150 ms
 * to the second execve, strace), so only when a side is a file of HUGE_PAGES_MIN_BYTES or more;
 * null when the command runs as it is (another system, a tunable already chosen — by the shebang
 * line, by the caller, or by the started command's own check — or arguments the command will
 * refuse).
 */
export function hugePagesEnv(
  argv: string[],
  env: NodeJS.ProcessEnv,
  platform: NodeJS.Platform = process.platform,
): NodeJS.ProcessEnv | null {
  const tunables = env.GLIBC_TUNABLES ?? ''
  if (platform !== 'linux' || tunables.includes('glibc.malloc.hugetlb')) return null
  const sides = largerSide(argv)
  if (!sides || sides.bytes < HUGE_PAGES_MIN_BYTES) return null
  return { ...env, GLIBC_TUNABLES: tunables ? `${tunables}:glibc.malloc.hugetlb=1` : 'glibc.malloc.hugetlb=1' }
}

/**
 * The command's arguments and the size of its larger side's file (0 for an alias); null for
 * arguments the command will refuse (it reports them itself).
 */
function largerSide(argv: string[]): { args: Args; bytes: number } | null {
  let args: Args
  try {
    args = parseArgs(argv)
  } catch {
    return null
  }
  return { args, bytes: Math.max(fileSize(args.left), fileSize(args.right)) }
}

function fileSize(path: string): number {
  try {
    return statSync(path).size
  } catch {
    return 0
  }
}
