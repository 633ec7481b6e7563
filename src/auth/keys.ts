// API keys and workspaces. A key is a random 256-bit token shown once; only its SHA-256 hash is
// stored. Each key belongs to a workspace and has a role: viewer (read), operator (run, chat, load),
// admin (keys, sources). The bootstrap key (CONCORD_ADMIN_KEY) is an admin of the default workspace
// that may also create workspaces.

import { createHash, randomBytes, randomUUID } from 'node:crypto'
import type { Kysely } from 'kysely'
import { type Attribution, type AuditService, SYSTEM } from '../audit/service.js'
import type { Database, Role } from '../db/schema.js'
import { ConcordError, notFound } from '../errors.js'

export const ROLES: Role[] = ['viewer', 'operator', 'admin']
export const roleRank = (r: Role) => ROLES.indexOf(r)

export interface Principal {
  workspace: string
  role: Role
  /** null for the bootstrap key and for open mode (no keys configured). */
  keyId: string | null
  /** May create workspaces (the bootstrap key, or open mode). */
  root: boolean
  /** Open mode: no key was needed (the audit trail tells it from the bootstrap key). */
  open?: true
}

export const hashKey = (key: string) => createHash('sha256').update(key).digest('hex')

export interface KeyView {
  id: string
  workspace: string
  name: string
  role: Role
  prefix: string
  created_at: string
  last_used_at: string | null
  revoked_at: string | null
}

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString())

/** A key's last use is written at most this often (a write on every request cost more than the request). */
const USE_RECORDED_EVERY_MS = 60_000
/** At most this many valid keys are remembered (sole writer); past it the memory starts again. */
const REMEMBERED_KEYS = 10_000

export class KeysService {
  private readonly bootstrapHash?: string
  /** Open mode as decided at start-up; it may end (the first key), never begin, while running. */
  private openMode = false
  /** Whether the service started in open mode (no key at all). */
  openAtStart = false
  /** Valid keys by hash, remembered only by the database's sole writer (see `sole`). */
  private readonly valid = new Map<string, Principal>()
  /** Revokes under way, and revokes ended: a lookup that overlaps one is not remembered. */
  private revoking = 0
  private revocations = 0
  /** When this process last wrote each key's last_used_at. */
  private readonly usedAt = new Map<string, number>()

  constructor(
    private readonly db: Kysely<Database>,
    bootstrapKey?: string,
    /** Key and workspace changes are appended to the audit trail with the change. */
    private readonly audit?: AuditService,
    /**
     * This process is the database's only writer (the embedded one: a second process is refused
     * its files), so every key is created and revoked here: a valid key is remembered until a
     * revoke, and open mode ends when this process creates the first key, where otherwise every
     * request asked the database (two statements per request on a single-connection database).
     */
    private readonly sole = false,
  ) {
    this.bootstrapHash = bootstrapKey ? hashKey(bootstrapKey) : undefined
  }

  /** Open mode: no bootstrap key and no key in the database. */
  async open(): Promise<boolean> {
    if (this.bootstrapHash) return false
    const any = await this.db
      .selectFrom('api_keys')
      .select('id')
      .where('revoked_at', 'is', null)
      .limit(1)
      .executeTakeFirst()
    return any === undefined
  }

  /**
   * Decides open mode once, when the service starts: the listen address depends on it (server.ts
   * refuses a non-loopback HOST in open mode), so revoking every key later must not open a
   * service that listens on other hosts.
   */
  async decideOpenMode(): Promise<boolean> {
    this.openMode = this.openAtStart = await this.open()
    return this.openMode
  }

  /** Whether a request without a key is served (as an admin of the default workspace). */
  async openNow(): Promise<boolean> {
    if (!this.openMode) return false
    // the first key created ends open mode for good, even if it is revoked later (as the sole
    // writer, `create` below ends it; another instance may create one at any time)
    if (!this.sole && !(await this.open())) this.openMode = false
    return this.openMode
  }

  async authenticate(key: string): Promise<Principal | null> {
    const hash = hashKey(key)
    if (this.bootstrapHash && hash === this.bootstrapHash)
      return { workspace: 'default', role: 'admin', keyId: null, root: true }
    let principal = this.valid.get(hash)
    if (!principal) {
      const revocations = this.revoking ? -1 : this.revocations
      const row = await this.db
        .selectFrom('api_keys')
        .select(['id', 'workspace_id', 'role'])
        .where('key_hash', '=', hash)
        .where('revoked_at', 'is', null)
        .executeTakeFirst()
      if (!row) return null
      principal = { workspace: row.workspace_id, role: row.role, keyId: row.id, root: false }
      if (this.sole && revocations === this.revocations) {
        if (this.valid.size >= REMEMBERED_KEYS) this.valid.clear()
        this.valid.set(hash, principal)
      }
    }
    await this.used(principal.keyId!)
    return principal
  }

  /** Records a key's use, to the minute. */
  private async used(id: string): Promise<void> {
    const now = Date.now()
    if (now - (this.usedAt.get(id) ?? -Infinity) < USE_RECORDED_EVERY_MS) return
    this.usedAt.set(id, now)
    await this.db
      .updateTable('api_keys')
      .set({ last_used_at: new Date(now) })
      .where('id', '=', id)
      .execute()
  }

  /** A new key; its secret is returned here and never again. */
  async create(
    workspace: string,
    name: string,
    role: Role,
    by: Attribution = SYSTEM,
  ): Promise<KeyView & { key: string }> {
    await this.workspace(workspace)
    const key = `ck_${randomBytes(32).toString('base64url')}`
    const id = randomUUID()
    const created = await this.db.transaction().execute(async (tx) => {
      const row = await tx
        .insertInto('api_keys')
        .values({ id, workspace_id: workspace, name, role, key_hash: hashKey(key), prefix: key.slice(0, 10) })
        .returningAll()
        .executeTakeFirstOrThrow()
      // the key's view (prefix, never the secret or its hash)
      await this.audit?.record(tx, {
        workspace,
        ...by,
        action: 'key.created',
        entity: { type: 'key', id },
        after: view(row),
      })
      return view(row)
    })
    this.openMode = false
    return { ...created, key }
  }

  async list(workspace: string): Promise<KeyView[]> {
    const rows = await this.db
      .selectFrom('api_keys')
      .selectAll()
      .where('workspace_id', '=', workspace)
      .orderBy('created_at')
      .execute()
    return rows.map(view)
  }

  async get(workspace: string, id: string): Promise<KeyView> {
    const row = await this.db
      .selectFrom('api_keys')
      .selectAll()
      .where('workspace_id', '=', workspace)
      .where('id', '=', id)
      .executeTakeFirst()
    if (!row) throw notFound('key', id, 'GET /api/keys lists the keys of your workspace')
    return view(row)
  }

  async revoke(workspace: string, id: string, by: Attribution = SYSTEM): Promise<KeyView> {
    // no lookup that overlaps the revoke is remembered, and what was remembered is forgotten
    this.revoking++
    try {
      return await this.revokeRow(workspace, id, by)
    } finally {
      this.revoking--
      this.revocations++
      this.valid.clear()
    }
  }

  private async revokeRow(workspace: string, id: string, by: Attribution): Promise<KeyView> {
    return this.db.transaction().execute(async (tx) => {
      const current = await tx
        .selectFrom('api_keys')
        .selectAll()
        .where('workspace_id', '=', workspace)
        .where('id', '=', id)
        .forUpdate()
        .executeTakeFirst()
      if (!current) throw notFound('key', id, 'GET /api/keys lists the keys of your workspace')
      const before = view(current)
      const row = await tx
        .updateTable('api_keys')
        .set({ revoked_at: new Date() })
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirstOrThrow()
      await this.audit?.record(tx, {
        workspace,
        ...by,
        action: 'key.revoked',
        entity: { type: 'key', id },
        before,
        after: view(row),
      })
      return view(row)
    })
  }

  async createWorkspace(name: string, by: Attribution = SYSTEM): Promise<{ id: string; name: string }> {
    const id = name
    if (!/^[a-z][a-z0-9_-]{0,62}$/.test(id))
      throw new ConcordError(
        'invalid_workspace',
        `"${name}" is not a valid workspace name`,
        400,
        'lowercase letters, digits, _ or -',
      )
    const exists = await this.db.selectFrom('workspaces').select('id').where('id', '=', id).executeTakeFirst()
    if (exists) throw new ConcordError('duplicate_workspace', `workspace "${name}" exists`, 409)
    await this.db.transaction().execute(async (tx) => {
      await tx.insertInto('workspaces').values({ id, name }).execute()
      // the new workspace's chain starts with its own creation
      await this.audit?.record(tx, {
        workspace: id,
        ...by,
        action: 'workspace.created',
        entity: { type: 'workspace', id },
        after: { id, name },
      })
    })
    return { id, name }
  }

  private async workspace(id: string): Promise<void> {
    const row = await this.db.selectFrom('workspaces').select('id').where('id', '=', id).executeTakeFirst()
    if (!row) throw notFound('workspace', id)
  }
}

function view(row: {
  id: string
  workspace_id: string
  name: string
  role: Role
  prefix: string
  created_at: Date
  last_used_at: Date | null
  revoked_at: Date | null
}): KeyView {
  return {
    id: row.id,
    workspace: row.workspace_id,
    name: row.name,
    role: row.role,
    prefix: row.prefix,
    created_at: iso(row.created_at)!,
    last_used_at: iso(row.last_used_at),
    revoked_at: iso(row.revoked_at),
  }
}
