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
          compiled = compiler(route)
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
   * until `stop()` (the app is closing). Throws what a schema's compiler threw.
   */
  async compileAll(): Promise<number> {
    let n = 0
    for (const compile of this.pending) {
      if (this.stopped) break
      compile()
      n++
      await nextTurn()
    }
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
