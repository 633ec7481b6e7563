// Glossary roles: a workspace's business terms, honoured before any guess. A term naming a column
// on both sides links them; a term naming a role (amount, date, reference, key) fixes which column
// plays it, so "gross" → gross_amount and "amount" → gross_amount beat what the samples suggest.

import type { ColumnT, GlossaryT, MappingT } from './schemas.js'

export type GlossaryRole = 'amount' | 'date' | 'reference' | 'key'

const ROLE_WORDS: Record<string, GlossaryRole> = {
  amount: 'amount',
  total: 'amount',
  date: 'date',
  day: 'date',
  reference: 'reference',
  ref: 'reference',
  key: 'key',
  id: 'key',
  identifier: 'key',
}

export interface GlossaryRoles {
  /** Links the glossary makes: one term naming a column of a and a column of b. */
  mappings: MappingT[]
  /** The column that plays a role, per side. */
  roles: { a: Partial<Record<GlossaryRole, string>>; b: Partial<Record<GlossaryRole, string>> }
}

export function glossaryRoles(glossary: GlossaryT | undefined, schemaA: ColumnT[], schemaB: ColumnT[]): GlossaryRoles {
  const out: GlossaryRoles = { mappings: [], roles: { a: {}, b: {} } }
  const byTerm = new Map<string, { a?: string; b?: string }>()
  for (const t of glossary?.terms ?? []) {
    const schema = t.source === 'a' ? schemaA : schemaB
    if (!schema.some((c) => c.name === t.column)) continue
    const term = t.term.trim().toLowerCase()
    const entry = byTerm.get(term) ?? {}
    entry[t.source] = t.column
    byTerm.set(term, entry)
    const role = ROLE_WORDS[term]
    if (role) out.roles[t.source][role] = t.column
  }
  for (const [term, { a, b }] of byTerm)
    if (a && b) out.mappings.push({ field_a: a, field_b: b, confidence: 1, reason: `glossary: "${term}"` })
  return out
}

/** Glossary links first, then the given mappings on columns the glossary left free. */
export function withGlossary(mappings: MappingT[], g: GlossaryRoles): MappingT[] {
  const usedA = new Set(g.mappings.map((m) => m.field_a))
  const usedB = new Set(g.mappings.map((m) => m.field_b))
  const { a, b } = g.roles
  const forced: MappingT[] = []
  for (const role of ['amount', 'date', 'reference'] as const) {
    const ca = a[role]
    const cb = b[role]
    if (ca && cb && !usedA.has(ca) && !usedB.has(cb)) {
      forced.push({ field_a: ca, field_b: cb, confidence: 1, reason: `glossary: the ${role}` })
      usedA.add(ca)
      usedB.add(cb)
    }
  }
  return [...g.mappings, ...forced, ...mappings.filter((m) => !usedA.has(m.field_a) && !usedB.has(m.field_b))]
}
