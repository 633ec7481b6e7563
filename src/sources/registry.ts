// The connector registry: every file in connectors/ default-exports a factory that builds its
// SourceConnector, and the registry loads them all, so adding a source type is adding one file —
// in the tree, or anywhere CONNECTOR_MODULES names. Nothing else in the core knows a source type.
// The service, the run workers and the CLI each load their own registry the same way.

import { readdir } from 'node:fs/promises'
import type { FastifyBaseLogger } from 'fastify'
import fp from 'fastify-plugin'
import { ConcordError } from '../errors.js'
import type { PushdownEngine, Source, SourceConnector } from './connector.js'

/** What a connector factory may use: the service's settings that concern sources. */
export interface ConnectorContext {
  dataDir: string
  statementTimeoutMs: number
  poolMax: number
  /** Connector modules from outside connectors/ (file: URLs, CONNECTOR_MODULES), loaded after it. */
  modules?: string[]
  log?: FastifyBaseLogger
}

export type ConnectorFactory = (ctx: ConnectorContext) => SourceConnector

const CONNECTORS_DIR = new URL('../../connectors/', import.meta.url)

/** A registry with every connector in connectors/, in file-name order. */
export async function loadConnectors(ctx: ConnectorContext): Promise<ConnectorRegistry> {
  const registry = new ConnectorRegistry()
  const files = (await readdir(CONNECTORS_DIR)).filter((f) => /\.(ts|js)$/.test(f) && !f.endsWith('.d.ts')).sort()
  const modules = [...files.map((f) => new URL(f, CONNECTORS_DIR).href), ...(ctx.modules ?? [])]
  for (const url of modules) {
    const mod = (await import(url)) as { default?: ConnectorFactory }
    if (typeof mod.default !== 'function') throw new Error(`${url} must default-export a connector factory`)
    registry.register(mod.default(ctx))
  }
  return registry
}

export class ConnectorRegistry {
  private readonly byType = new Map<string, SourceConnector>()

  register(connector: SourceConnector): void {
    if (this.byType.has(connector.type)) throw new Error(`connector "${connector.type}" registered twice`)
    this.byType.set(connector.type, connector)
  }

  get(type: string): SourceConnector {
    const c = this.byType.get(type)
    if (!c) {
      throw new ConcordError(
        'unknown_source_type',
        `no connector for source type "${type}"`,
        400,
        `use one of ${this.types().join(', ')}`,
      )
    }
    return c
  }

  types(): string[] {
    return [...this.byType.keys()].sort()
  }

  all(): SourceConnector[] {
    return [...this.byType.values()]
  }

  /** The source type whose connector takes files with this extension (lower case, no dot). */
  typeForExtension(ext: string): string | undefined {
    return this.all().find((c) => c.extensions?.includes(ext))?.type
  }

  /** Every file extension some connector takes. */
  extensions(): string[] {
    return this.all().flatMap((c) => c.extensions ?? [])
  }

  /**
   * The engine `name` as the connector of `source`'s type offers it (a run asks its left source's
   * connector); pushdown_unavailable naming the types that do offer it, when that one does not.
   */
  pushdownEngine(source: Pick<Source, 'alias' | 'type'>, name: string): PushdownEngine {
    const offered = this.get(source.type).pushdown
    if (offered?.engine === name) return offered
    const offering = this.all().flatMap((c) => (c.pushdown?.engine === name ? [c.type] : []))
    throw new ConcordError(
      'pushdown_unavailable',
      `engine "${name}" needs both sources to be ${offering.join(' or ') || 'of a type that offers it'} sources ("${source.alias}" is ${source.type})`,
      400,
      'use engine "memory" (the message says what the other engine needs)',
    )
  }

  async close(): Promise<void> {
    await Promise.all(this.all().map((c) => c.close?.()))
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    connectors: ConnectorRegistry
  }
}

export default fp(
  async (app) => {
    const registry = await loadConnectors({
      dataDir: app.config.dataDir,
      statementTimeoutMs: app.config.sourceStatementTimeoutMs,
      poolMax: app.config.sourcePoolMax,
      modules: app.config.connectorModules,
      log: app.log,
    })
    app.decorate('connectors', registry)
    app.addHook('onClose', () => registry.close())
  },
  { name: 'connectors' },
)
