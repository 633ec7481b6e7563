// Wire schemas of the audit trail, shared by routes, the OpenAPI document and the client SDK.

import { Type } from 'typebox'
import { ENTITY_TYPES } from './service.js'

export const AuditEntrySchema = Type.Object(
  {
    seq: Type.Integer({ description: "the row's place in its workspace's chain, from 1" }),
    at: Type.String({ description: 'when, ISO 8601 UTC with milliseconds (as hashed)' }),
    actor: Type.String({ description: 'who: key:<key id>, bootstrap, open, system, chat:<session>, schedule:<id>…' }),
    action: Type.String({ description: 'what: source.created, recipe.updated, run.completed, key.revoked…' }),
    entity: Type.Object({ type: Type.Union(ENTITY_TYPES.map((t) => Type.Literal(t))), id: Type.String() }),
    before: Type.Unknown({ description: 'the entity before the change; null for a creation' }),
    after: Type.Unknown({ description: 'the entity after the change; null for a deletion' }),
    request_id: Type.Union([Type.String(), Type.Null()], { description: 'the request that made the change' }),
    prev_hash: Type.String({ description: "the previous row's hash (64 zeros for the first row)" }),
    hash: Type.String({ description: "SHA-256 over this row's content and prev_hash" }),
  },
  { $id: 'AuditEntry' },
)

export const AuditPageSchema = Type.Object(
  {
    entries: Type.Array(Type.Ref('AuditEntry')),
    next_cursor: Type.Union([Type.Integer(), Type.Null()], {
      description: 'pass as cursor (with the same order and filters) for the next page; null at the end',
    }),
  },
  { $id: 'AuditPage' },
)

export const AuditVerifySchema = Type.Object(
  {
    ok: Type.Boolean(),
    checked: Type.Integer({ description: 'rows checked and found linked and unchanged' }),
    head: Type.Union([Type.Object({ seq: Type.Integer(), hash: Type.String() }), Type.Null()], {
      description:
        "the chain's last row as the head records it: keep its hash elsewhere to detect a rewrite of the whole chain",
    }),
    first_broken: Type.Optional(
      Type.Object({
        seq: Type.Integer({ description: 'the first row that is missing, changed or unlinked' }),
        reason: Type.String(),
      }),
    ),
  },
  { $id: 'AuditVerify' },
)

export const auditWireSchemas = [AuditEntrySchema, AuditPageSchema, AuditVerifySchema]
