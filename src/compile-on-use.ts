// Reply serializers and request validators compiled when a route first uses them, not at start.
// Fastify compiles every route's schemas while the app gets ready; with ~100 routes that was
// ~0.8 s of fast-json-stringify (a CPU profile of `concord serve` to /ready) in every start, and
// in every app a test builds, for routes most starts never serve before an idle moment. A route's
// first request compiles what it needs (a few milliseconds; the largest reply ~50 ms), and
// `concord serve` compiles the rest in the background once it listens, one per turn of the loop.

import { setImmediate as nextTurn } from 'node:timers/promises'

export class CompileOnUse {
  private readonly pending = new Set<() => unknown>()
  private stopped = false

  /** A compiler whose output compiles itself on first call. */
  wrap<R, A extends unknown[], O>(compiler: (route: R) => (...args: A) => O): (route: R) => (...args: A) => O {
    return (route) => {
      let compiled: ((...args: A) => O) | undefined
      const compile = () => {
        if (!compiled) {
          try {
            compiled = compiler(route)
          } catch (err) {
            // as Fastify said it at ready(): which route's schema it was
            const { method, url } = (route ?? {}) as { method?: string; url?: string }
            throw new Error(`the schema of ${method ?? ''} ${url ?? ''} does not compile: ${String(err)}`, {
              cause: err,
            })
          }
          this.pending.delete(compile)
        }
        return compiled
      }
      this.pending.add(compile)
      return (...args) => compile()(...args)
    }
  }

  /** How many compilers have not run yet. */
  get waiting(): number {
    return this.pending.size
  }

  /**
   * Compiles everything not yet used, one per turn of the loop so requests are served between,
   * until `stop()` (the app is closing). A schema that does not compile is skipped (its route's
   * requests get the error) and, once the rest are compiled, thrown with any others.
   */
  async compileAll(): Promise<number> {
    let n = 0
    const failed: unknown[] = []
    for (const compile of [...this.pending]) {
      if (this.stopped) break
      if (!this.pending.has(compile)) continue // a request compiled it meanwhile
      try {
        compile()
        n++
      } catch (err) {
        failed.push(err)
      }
      await nextTurn()
    }
    if (failed.length) throw new AggregateError(failed, `${failed.length} route schemas do not compile`)
    return n
  }

  stop(): void {
    this.stopped = true
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The app's not yet compiled serializers and validators. */
    compilers: CompileOnUse
  }
}
