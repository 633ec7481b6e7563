// The file sources' cache of loaded files: a file read again unchanged is not loaded again, and a
// file that changed is loaded again and its older table dropped at once.

import { utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { FileCache } from '../src/sources/files.js'

t.test('a changed file replaces its older entry; other files stay', async (t) => {
  const dir = t.testdir({ 'a.csv': 'id\n1\n', 'b.csv': 'id\n2\n' })
  const loads: string[] = []
  const load = async (path: string) => {
    loads.push(path)
    return `loaded ${loads.length}`
  }
  const cache = new FileCache<string>(4)
  const a = join(dir, 'a.csv')
  const b = join(dir, 'b.csv')
  t.equal(await cache.get(a, load), 'loaded 1')
  t.equal(await cache.get(b, load), 'loaded 2')
  t.equal(await cache.get(a, load), 'loaded 1', 'unchanged: served from the cache')
  t.equal(loads.length, 2)

  writeFileSync(a, 'id\n1\n3\n')
  const later = new Date(Date.now() + 5000)
  utimesSync(a, later, later)
  t.equal(await cache.get(a, load), 'loaded 3', 'changed: loaded again')
  t.equal(cache.size, 2, 'the older version of a.csv is gone, b.csv stays')
  t.equal(await cache.get(b, load), 'loaded 2')
  t.equal(loads.length, 3)
})
