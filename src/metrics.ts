// Prometheus metrics at /metrics: request latency, run durations and throughput, the chat agent's
// events by reason code, model calls; and the process's own (memory, event loop, GC). One registry
// per app, so tests that build many apps do not share counters.

import fp from 'fastify-plugin'
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'

export class Metrics {
  readonly registry = new Registry()
  readonly requestSeconds = new Histogram({
    name: 'concord_http_request_duration_seconds',
    help: 'HTTP request latency',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  })
  readonly runSeconds = new Histogram({
    name: 'concord_run_duration_seconds',
    help: 'Run duration, from start to finish, by outcome and engine',
    labelNames: ['status', 'engine', 'mode'],
    buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
    registers: [this.registry],
  })
  readonly runRowsPerSecond = new Histogram({
    name: 'concord_run_rows_per_second',
    help: 'Records (both sides) matched per second of a completed run',
    labelNames: ['engine'],
    buckets: [1e3, 1e4, 5e4, 1e5, 2.5e5, 5e5, 1e6, 2.5e6, 5e6],
    registers: [this.registry],
  })
  readonly runRows = new Counter({
    name: 'concord_run_rows_total',
    help: 'Records processed by completed runs',
    labelNames: ['side'],
    registers: [this.registry],
  })
  readonly runsActive = new Gauge({
    name: 'concord_runs_active',
    help: 'Runs executing now',
    registers: [this.registry],
  })
  readonly agentEvents = new Counter({
    name: 'concord_agent_events_total',
    help: "The chat agent's events by type and reason code",
    labelNames: ['type', 'reason'],
    registers: [this.registry],
  })
  readonly aiCalls = new Counter({
    name: 'concord_ai_tool_calls_total',
    help: 'Reasoning tool calls by tool and the engine that answered (or the error)',
    labelNames: ['tool', 'engine'],
    registers: [this.registry],
  })

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'concord_' })
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Metrics
  }
}

export default fp(
  async (app) => {
    const metrics = new Metrics()
    app.decorate('metrics', metrics)
    app.addHook('onResponse', async (request, reply) => {
      const route = request.routeOptions.url ?? 'unmatched'
      metrics.requestSeconds.observe(
        { method: request.method, route, status: String(reply.statusCode) },
        reply.elapsedTime / 1000,
      )
    })
    app.get('/metrics', { schema: { hide: true } }, async (_request, reply) =>
      reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()),
    )
  },
  { name: 'metrics' },
)
