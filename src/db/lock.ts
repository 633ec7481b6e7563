// One process per embedded database. PGlite keeps its files in the data folder and assumes it is
// alone with them: a second `concord serve` (or `concord reconcile` resolving an alias) opening
// the same folder ran migrations against a live database. The holder writes `db.lock` beside the
// folder (exclusive create) naming itself; a second opener is refused with that name, and a lock
// whose process is gone from this host (a crash, SIGKILL) is taken over.

import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs'
import { hostname } from 'node:os'
import { basename } from 'node:path'
import { ConcordError } from '../errors.js'

interface Holder {
  pid: number
  host: string
  command: string
  since: string
}

export interface DatabaseLock {
  release(): void
}

export function lockEmbedded(dir: string): DatabaseLock {
  const path = `${dir}.lock`
  const me: Holder = {
    pid: process.pid,
    host: hostname(),
    command: [basename(process.argv[1] ?? 'node'), ...process.argv.slice(2)].join(' '),
    since: new Date().toISOString(),
  }
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(path, 'wx')
      writeSync(fd, JSON.stringify(me))
      closeSync(fd)
      break
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      let holder = readHolder(path)
      if (!holder) {
        // perhaps created this instant and not written yet: look again before calling it stale
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100)
        holder = readHolder(path)
      }
      if (holder && (holder.host !== me.host || alive(holder.pid)) && attempt < 3)
        throw new ConcordError(
          'database_in_use',
          `the embedded database in ${dir} is in use by process ${holder.pid} on ${holder.host} ` +
            `(${holder.command}, since ${holder.since})`,
          409,
          'stop that process first, or give this one its own DATA_DIR; several instances share a database through DATABASE_URL (PostgreSQL)',
        )
      // a lock left by a process that is gone (or half-written): take it over; if another
      // process takes it first, the next attempt reads that one
      if (attempt >= 3) throw err
      try {
        unlinkSync(path)
      } catch {
        // already gone
      }
    }
  }
  let held = true
  const release = () => {
    if (!held) return
    held = false
    process.off('exit', release)
    // only our own lock: never one a later holder wrote after taking over
    if (readHolder(path)?.pid === me.pid)
      try {
        unlinkSync(path)
      } catch {
        // already gone
      }
  }
  process.on('exit', release)
  return { release }
}

function readHolder(path: string): Holder | null {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Holder
  } catch {
    return null
  }
}

function alive(pid: number): boolean {
  if (pid === process.pid) return true
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    // EPERM: it exists, owned by someone else
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}
