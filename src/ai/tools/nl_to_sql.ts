// nl_to_sql: a matching rule in words as a predicate of the recipe language.

import { type Static, Type } from 'typebox'
import { ConcordError } from '../../errors.js'
import { parsePredicate, PredicateError } from '../../language/predicate.js'
import { TypeChecker } from '../../language/types.js'
import { ColumnFinder } from '../columns.js'
import { KNOWN_PHRASES, PhraseError, RulePhrases } from '../rule-phrases.js'
import { Glossary, Mapping, TableSchema } from '../schemas.js'
import type { AiTool } from '../types.js'

const input = Type.Object(
  {
    text: Type.String({ minLength: 1 }),
    schema_a: TableSchema,
    schema_b: TableSchema,
    mappings: Type.Optional(Type.Array(Mapping)),
    glossary: Type.Optional(Glossary),
  },
  { additionalProperties: false },
)

const output = Type.Object({
  sql: Type.String({ description: 'a predicate over l. (source a) and r. (source b) columns' }),
  explanation: Type.String(),
})

type Input = Static<typeof input>

/** Clauses are separated by "and", commas and semicolons; each becomes one conjunct. */
export function clauses(text: string): string[] {
  return text
    .split(/\s*(?:[,;&]|\band\b)\s*/i)
    .map((c) => c.trim())
    .filter(Boolean)
}

export function writeRule(i: Input): Static<typeof output> {
  const phrases = new RulePhrases(new ColumnFinder(i))
  const conditions = []
  const problems: string[] = []
  for (const clause of clauses(i.text)) {
    try {
      conditions.push(phrases.read(clause))
    } catch (err) {
      if (!(err instanceof PhraseError)) throw err
      problems.push(err.message)
    }
  }
  // a rule that silently drops a clause would match more than the user asked for
  if (problems.length || !conditions.length)
    throw new ConcordError(
      'cannot_parse',
      `nl_to_sql: ${problems.join('; ') || 'no clause in the text'}`,
      422,
      `phrases it reads: ${KNOWN_PHRASES.join(', ')}; join them with "and", commas or semicolons`,
    )
  return {
    sql: conditions.map((c) => c.sql).join(' AND '),
    explanation: conditions.map((c) => c.reads).join('; '),
  }
}

/** The parser, then the type checker against both schemas: the rule must be one a recipe accepts. */
export function ruleProblems(sql: string, i: Input): string[] {
  let expr
  try {
    expr = parsePredicate(sql)
  } catch (err) {
    return [err instanceof PredicateError ? err.message : String(err)]
  }
  const withNulls = (s: Input['schema_a']) => s.map((c) => ({ ...c, nullable: c.nullable ?? true }))
  const checker = new TypeChecker({ l: withNulls(i.schema_a), r: withNulls(i.schema_b) })
  const type = checker.check(expr)
  const problems = checker.issues.map((x) => `${x.message}${x.suggestion ? ` (${x.suggestion})` : ''}`)
  if (!problems.length && type.kind !== 'boolean')
    problems.push(`the predicate is a ${type.kind} value, not a condition`)
  return problems
}

export const nlToSql: AiTool<typeof input, typeof output> = {
  name: 'nl_to_sql',
  description:
    'Turns a matching rule in words ("within 7 days", "amount within 1%", "same reference ignoring case") into a predicate of the recipe language over l. and r. columns.',
  input,
  output,
  prompt:
    "You write one boolean predicate in PostgreSQL syntax over two records: l (source a) and r (source b), e.g. UPPER(TRIM(l.reference)) = UPPER(TRIM(r.ref)) AND ABS(l.amount - r.total) <= 0.01 AND r.day BETWEEN l.day - INTERVAL '3 days' AND l.day. Only l. and r. columns that exist; functions: ABS ROUND LOWER UPPER TRIM SUBSTRING REPLACE COALESCE DATE_TRUNC.",
  deterministic: writeRule,
  check: (out, i) => ruleProblems(out.sql, i),
}
