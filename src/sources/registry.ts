// The connector registry: connectors/*.ts register themselves here; the sources service asks it
// for the connector of a source's type. Adding a source type is adding one connector file.

import fp from 'fastify-plugin'
import { ConcordError } from '../errors.js'
import type { SourceConnector } from './connector.js'

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
    const registry = new ConnectorRegistry()
    app.decorate('connectors', registry)
    app.addHook('onClose', () => registry.close())
  },
  { name: 'connectors' },
)
