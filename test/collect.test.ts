// collectGarbage (src/runs/collect.ts), which `concord reconcile` calls before it writes a large
// run's result sets: it runs a full collection — an object nothing holds any more is gone after it.

import t from 'tap'
import { collectGarbage } from '../src/runs/collect.js'

t.test('a full collection', async (t) => {
  let held: { bytes: Uint8Array } | null = { bytes: new Uint8Array(8 << 20) }
  const ref = new WeakRef(held)
  held = null
  // a WeakRef keeps its target alive until the job that read it ends
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(collectGarbage(), true, 'offered by this Node')
  t.equal(ref.deref(), undefined, 'the unreachable object was collected')
  t.equal(collectGarbage(), true, 'again, with the same function')
})
