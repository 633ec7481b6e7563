// Forward-only migrations, in order. A new migration is a new file added to this list.
import type { Migration } from 'kysely/migration'
import * as sources from './001-sources.js'
import * as recipes from './002-recipes.js'
import * as runs from './003-runs.js'
import * as sessions from './004-sessions.js'
import * as workspaces from './005-workspaces.js'
import * as sessionLease from './006-session-lease.js'
import * as runOwners from './007-run-owners.js'
import * as idempotency from './008-idempotency.js'
import * as audit from './011-audit.js'
import * as webhooks from './012-webhooks.js'
import * as exceptions from './009-exceptions.js'
import * as schedules from './010-schedules.js'
import * as exceptionSets from './013-exception-sets.js'

export const migrations: Record<string, Migration> = {
  '001-sources': sources,
  '002-recipes': recipes,
  '003-runs': runs,
  '004-sessions': sessions,
  '005-workspaces': workspaces,
  '006-session-lease': sessionLease,
  '007-run-owners': runOwners,
  '008-idempotency': idempotency,
  '011-audit': audit,
  '012-webhooks': webhooks,
  '009-exceptions': exceptions,
  '010-schedules': schedules,
  '013-exception-sets': exceptionSets,
}
