// `concord exceptions …`: work the exceptions of a running service from a shell, over its HTTP
// API (CONCORD_URL, CONCORD_API_KEY or --url, --api-key). Tables for people, --json for scripts.
// Exit codes: 0 done, 1 the service refused (its error and suggestion on stderr), 2 bad usage.
// Only node:util and fetch: nothing of the server is loaded.

import { parseArgs } from 'node:util'

export const EXCEPTIONS_USAGE = `usage: concord exceptions <command> [options]

commands:
  list                      the open queue (filters below), a page at a time
  show ID                   one exception: the record, why, comments and history
  assign ID NAME            assign it (--none to unassign)
  comment ID TEXT           add a comment
  resolve ID --as accepted|written_off --reason TEXT
  accept ID --reason TEXT   resolve as accepted
  write-off ID --reason TEXT
  match ID ID... [--adjustment AMOUNT --adjustment-reason TEXT] [--note TEXT]
                            match records by hand (left and right exceptions of one recipe)
  unmatch --run RUN_ID --match MATCH_ID --reason TEXT
                            undo an automatic match: its records become exceptions

every command: --url URL (CONCORD_URL, default http://127.0.0.1:3000), --api-key KEY
(CONCORD_API_KEY), --json (print the reply as JSON), --help. Changes take --version N to refuse a
stale one. concord exceptions <command> --help says more.`

const COMMON = `
  --url URL        the service (default: CONCORD_URL, else http://127.0.0.1:3000)
  --api-key KEY    an API key (default: CONCORD_API_KEY)
  --json           print the service's reply as JSON`

const HELP: Record<string, string> = {
  list: `usage: concord exceptions list [--run ID] [--recipe ID] [--reason R[,R…]] [--status open|resolved|all]
       [--side left|right|both] [--assignee NAME|-] [--age-min DAYS] [--age-max DAYS]
       [--amount-min X] [--amount-max X] [--sort created|amount|age] [--order desc|asc]
       [--limit N] [--cursor C] [--count]

Lists exceptions, open ones unless --status says otherwise; --cursor takes the next cursor the
previous page printed. Reasons: missing_counterpart, amount_outside_tolerance, fee_variance,
date_outside_window, duplicate, ambiguous, unmatched_by_operator, other.${COMMON}`,
  show: `usage: concord exceptions show ID

The exception, the record the run stored and why it is unmatched, its comments and history.${COMMON}`,
  assign: `usage: concord exceptions assign ID NAME [--version N]
       concord exceptions assign ID --none${COMMON}`,
  comment: `usage: concord exceptions comment ID TEXT${COMMON}`,
  resolve: `usage: concord exceptions resolve ID --as accepted|written_off --reason TEXT [--version N]${COMMON}`,
  accept: `usage: concord exceptions accept ID --reason TEXT [--version N]${COMMON}`,
  'write-off': `usage: concord exceptions write-off ID --reason TEXT [--version N]${COMMON}`,
  match: `usage: concord exceptions match ID ID... [--adjustment AMOUNT --adjustment-reason TEXT] [--note TEXT]

Matches the records of these exceptions (open, one recipe, left and right). Their sums must pass
the recipe's amount check, or --adjustment books the difference (left minus right).${COMMON}`,
  unmatch: `usage: concord exceptions unmatch --run RUN_ID --match MATCH_ID --reason TEXT

Undoes an automatic match of a run (once): its records become open exceptions.${COMMON}`,
}

export interface ExceptionsIO {
  stdout: Pick<NodeJS.WriteStream, 'write'>
  stderr: Pick<NodeJS.WriteStream, 'write'>
  env: Record<string, string | undefined>
}

class Usage extends Error {}

const OPTIONS = {
  url: { type: 'string' },
  'api-key': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  run: { type: 'string' },
  recipe: { type: 'string' },
  reason: { type: 'string' },
  status: { type: 'string' },
  side: { type: 'string' },
  assignee: { type: 'string' },
  'age-min': { type: 'string' },
  'age-max': { type: 'string' },
  'amount-min': { type: 'string' },
  'amount-max': { type: 'string' },
  sort: { type: 'string' },
  order: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  count: { type: 'boolean' },
  version: { type: 'string' },
  none: { type: 'boolean' },
  as: { type: 'string' },
  adjustment: { type: 'string' },
  'adjustment-reason': { type: 'string' },
  note: { type: 'string' },
  match: { type: 'string' },
} as const

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values']

export async function exceptionsCommand(
  argv: string[],
  io: ExceptionsIO = { stdout: process.stdout, stderr: process.stderr, env: process.env },
): Promise<number> {
  const [command, ...rest] = argv
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    io.stdout.write(`${EXCEPTIONS_USAGE}\n`)
    return 0
  }
  if (!(command in HELP)) {
    io.stderr.write(`concord exceptions: unknown command "${command}"\n\n${EXCEPTIONS_USAGE}\n`)
    return 2
  }
  let values: Values
  let positionals: string[]
  try {
    ;({ values, positionals } = parseArgs({ args: rest, options: OPTIONS, allowPositionals: true, strict: true }))
  } catch (err) {
    io.stderr.write(`concord exceptions ${command}: ${(err as Error).message}\n\n${HELP[command]}\n`)
    return 2
  }
  if (values.help) {
    io.stdout.write(`${HELP[command]}\n`)
    return 0
  }
  const base = (values.url ?? io.env.CONCORD_URL ?? 'http://127.0.0.1:3000').replace(/\/+$/, '')
  const key = values['api-key'] ?? io.env.CONCORD_API_KEY
  const call = async (method: string, path: string, body?: unknown): Promise<unknown> => {
    const res = await fetch(base + path, {
      method,
      headers: {
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(key ? { authorization: `Bearer ${key}` } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const reply = (await res.json()) as { error?: string; message?: string; suggestion?: string }
    if (!res.ok) throw new Refused(res.status, reply)
    return reply
  }
  try {
    const reply = await run(command, values, positionals, call)
    io.stdout.write(values.json ? `${JSON.stringify(reply, null, 2)}\n` : `${render(command, reply)}\n`)
    return 0
  } catch (err) {
    if (err instanceof Usage) {
      io.stderr.write(`concord exceptions ${command}: ${err.message}\n\n${HELP[command]}\n`)
      return 2
    }
    if (err instanceof Refused) {
      const r = err.reply
      io.stderr.write(
        `${r.error ?? `HTTP ${err.status}`}: ${r.message ?? ''}${r.suggestion ? `\n  ${r.suggestion}` : ''}\n`,
      )
      return 1
    }
    io.stderr.write(`concord exceptions ${command}: cannot reach ${base} (${(err as Error).message})\n`)
    return 1
  }
}

class Refused extends Error {
  constructor(
    readonly status: number,
    readonly reply: { error?: string; message?: string; suggestion?: string },
  ) {
    super(reply.message)
  }
}

function id(positionals: string[], at = 0): number {
  const text = positionals[at]
  if (!text || !/^\d+$/.test(text)) throw new Usage(`expected an exception id, got ${text ? `"${text}"` : 'nothing'}`)
  return Number(text)
}

function version(values: Values): { version?: number } {
  if (values.version === undefined) return {}
  if (!/^\d+$/.test(values.version)) throw new Usage('--version takes a number')
  return { version: Number(values.version) }
}

function required(values: Values, name: 'reason' | 'run' | 'match' | 'as'): string {
  const v = values[name]
  if (!v) throw new Usage(`--${name} is required`)
  return v
}

async function run(
  command: string,
  values: Values,
  positionals: string[],
  call: (method: string, path: string, body?: unknown) => Promise<unknown>,
): Promise<unknown> {
  switch (command) {
    case 'list': {
      const query = new URLSearchParams()
      const map: [keyof Values, string][] = [
        ['run', 'run_id'],
        ['recipe', 'recipe_id'],
        ['reason', 'reason'],
        ['status', 'status'],
        ['side', 'side'],
        ['assignee', 'assignee'],
        ['age-min', 'age_min'],
        ['age-max', 'age_max'],
        ['amount-min', 'amount_min'],
        ['amount-max', 'amount_max'],
        ['sort', 'sort'],
        ['order', 'order'],
        ['limit', 'limit'],
        ['cursor', 'cursor'],
      ]
      for (const [option, param] of map) if (values[option] !== undefined) query.set(param, String(values[option]))
      if (values.count) query.set('count', 'true')
      return call('GET', `/api/exceptions?${query}`)
    }
    case 'show':
      return call('GET', `/api/exceptions/${id(positionals)}`)
    case 'assign': {
      if (!values.none && positionals[1] === undefined) throw new Usage('give a name to assign to, or --none')
      return call('POST', `/api/exceptions/${id(positionals)}/assign`, {
        assignee: values.none ? null : positionals[1],
        ...version(values),
      })
    }
    case 'comment':
      if (!positionals[1]) throw new Usage('give the comment text')
      return call('POST', `/api/exceptions/${id(positionals)}/comments`, { text: positionals.slice(1).join(' ') })
    case 'resolve':
    case 'accept':
    case 'write-off': {
      const as = command === 'resolve' ? required(values, 'as') : command === 'accept' ? 'accepted' : 'written_off'
      if (as !== 'accepted' && as !== 'written_off') throw new Usage('--as is accepted or written_off')
      return call('POST', `/api/exceptions/${id(positionals)}/${as === 'accepted' ? 'accept' : 'write-off'}`, {
        reason: required(values, 'reason'),
        ...version(values),
      })
    }
    case 'match': {
      const ids = positionals.map((_, n) => id(positionals, n))
      if (ids.length < 2) throw new Usage('give at least two exception ids')
      if ((values.adjustment === undefined) !== (values['adjustment-reason'] === undefined))
        throw new Usage('--adjustment and --adjustment-reason go together')
      return call('POST', '/api/exceptions/match', {
        exception_ids: ids,
        ...(values.adjustment !== undefined
          ? { adjustment: { amount: values.adjustment, reason: values['adjustment-reason'] } }
          : {}),
        ...(values.note ? { note: values.note } : {}),
      })
    }
    case 'unmatch':
      return call('POST', '/api/exceptions/unmatch', {
        run_id: required(values, 'run'),
        match_id: required(values, 'match'),
        reason: required(values, 'reason'),
      })
  }
  throw new Usage(`unknown command ${command}`)
}

interface Item {
  id: number
  side: string
  record_key: string
  reason: string
  amount_at_risk: string
  age_days: number
  assignee: string | null
  status: string
  resolution: string | null
  version: number
}

function table(rows: string[][]): string {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)))
  // amounts and numbers right-aligned
  const right = new Set([0, 4, 5])
  return rows
    .map((r) =>
      r
        .map((cell, c) => (right.has(c) ? cell.padStart(widths[c]) : cell.padEnd(widths[c])))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
}

function itemRows(items: Item[]): string {
  return table([
    ['id', 'side', 'record', 'reason', 'at risk', 'age', 'assignee', 'status'],
    ...items.map((x) => [
      String(x.id),
      x.side,
      x.record_key,
      x.reason,
      x.amount_at_risk,
      `${x.age_days}d`,
      x.assignee ?? '-',
      x.resolution ?? x.status,
    ]),
  ])
}

function render(command: string, reply: unknown): string {
  if (command === 'list') {
    const page = reply as { items: Item[]; next_cursor: string | null; total?: number }
    if (!page.items.length) return 'no exceptions'
    const tail = [
      page.total !== undefined ? `${page.total} in all` : '',
      page.next_cursor ? `more: --cursor ${page.next_cursor}` : '',
    ].filter(Boolean)
    return [itemRows(page.items), ...tail].join('\n')
  }
  if (command === 'show') {
    const d = reply as {
      exception: Item & Record<string, unknown>
      evidence: { reason: string; record: Record<string, unknown> } | null
      history: { action: string; actor: string; created_at: string; detail: unknown }[]
    }
    const e = d.exception
    const lines = [
      itemRows([e]),
      '',
      `run ${e.run_id}${e.last_run_id ? ` (last seen by ${e.last_run_id})` : ''}, version ${e.version}`,
      `amount ${e.amount ?? '-'}, difference ${e.difference ?? '-'}, candidate ${e.candidate_key ?? '-'}`,
    ]
    if (d.evidence) lines.push(`why: ${d.evidence.reason}`, `record: ${JSON.stringify(d.evidence.record)}`)
    if (e.resolution_detail) lines.push(`resolution: ${JSON.stringify(e.resolution_detail)}`)
    for (const h of d.history) lines.push(`${h.created_at}  ${h.actor}  ${h.action}  ${JSON.stringify(h.detail)}`)
    return lines.join('\n')
  }
  if (command === 'match') {
    const m = reply as { match_group: string; exceptions: Item[]; difference: string | null }
    return `matched (group ${m.match_group}, difference ${m.difference ?? 'unknown'}):\n${itemRows(m.exceptions)}`
  }
  if (command === 'unmatch') {
    const u = reply as { exceptions: Item[] }
    return `open again:\n${itemRows(u.exceptions)}`
  }
  if (command === 'comment') return 'comment added'
  return itemRows([reply as Item])
}
