// The expression compiler's lazy mode (the exceptions classifier's: few rows of large tables read)
// compares two text columns for equality on their UTF-8 bytes, decoding nothing. It must agree
// with the eager mode, which decodes the columns, on every pair: equal, unequal, of different
// lengths, non-ASCII, empty and NULL.

import t from 'tap'
import { tableFromRows } from '../src/engine/load/json.js'
import { ExprCompiler } from '../src/engine/plan/compile.js'
import { parsePredicate } from '../src/language/predicate.js'

const values = ['REF-1', 'REF-10', 'ref-1', 'Ärger→1', 'Ärger→2', ' ', null, 'REF-1']
const l = tableFromRows(values.map((v, k) => ({ k, a: v })))
const r = tableFromRows([...values].reverse().map((v, k) => ({ k, b: v })))
const tables = { l, r }
const schemas = { l: l.columns, r: r.columns }

for (const when of ['l.a = r.b', 'l.a <> r.b', 'l.a = r.b AND l.k < r.k', 'l.a = l.a']) {
  t.test(when, async (t) => {
    const eager = new ExprCompiler(schemas, tables)
    const lazy = new ExprCompiler(schemas, tables, undefined, true)
    const code = (c: ExprCompiler) => c.compile(parsePredicate(when)).code
    t.match(code(lazy), /eqBytes/, 'the lazy mode compares bytes')
    t.notMatch(code(eager), /eqBytes/, 'the eager mode compares decoded strings')
    const fn = (c: ExprCompiler) => c.build<(i: number, j: number) => boolean | null>('i, j', code(c))
    const [a, b] = [fn(eager), fn(lazy)]
    let equal = 0
    for (let i = 0; i < l.length; i++)
      for (let j = 0; j < r.length; j++) {
        t.equal(b(i, j), a(i, j), `rows ${i}, ${j}`)
        if (a(i, j) === true) equal++
      }
    t.ok(equal > 0, `${equal} pairs hold`)
  })
}
