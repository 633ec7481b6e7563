// buildApp: the whole service as one Fastify instance. Third-party plugins first, then the
// database and services, then connectors and routes. Tests build it and call inject().

import multipart from '@fastify/multipart'
import rateLimit from '@fastify/rate-limit'
import underPressure from '@fastify/under-pressure'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
  LogController,
} from 'fastify'
import { destination } from 'pino'
import type { Config } from './config.js'
import { isDatabaseUnavailable, type ServiceDatabase } from './db/connect.js'
import dbPlugin from './db/plugin.js'
import { ConcordError } from './errors.js'
import idempotency from './idempotency.js'
import metrics from './metrics.js'
import { loopGauge } from './pressure.js'
import { CompileOnUse } from './compile-on-use.js'
import { loadFilesOffThread } from './sources/load-thread.js'
import { buildSerializer } from './serializer.js'
import ai from './ai/service.js'
import auth, { isProbe, rateLimitKey } from './auth/plugin.js'
import { phaseRegistry, shippedPhases } from './orchestrator/phases.js'
import chat from './orchestrator/service.js'
import { AGENT_TOOLS } from './orchestrator/tools.js'
import recipes from './recipes/service.js'
import { recipeWireSchemas } from './recipes/schema.js'
import aiRoutes from './routes/ai.js'
import chatRoutes from './routes/chat.js'
import healthRoutes from './routes/health.js'
import keyRoutes from './routes/keys.js'
import recipeRoutes from './routes/recipes.js'
import reportRoutes from './routes/report.js'
import runRoutes from './routes/runs.js'
import type { ExceptionAging } from './runs/report/report.js'
import { runWireSchemas } from './runs/schema.js'
import runs from './runs/service.js'
import exceptions from './exceptions/service.js'
import { exceptionWireSchemas } from './exceptions/schema.js'
import exceptionRoutes from './routes/exceptions.js'
import schedules from './schedules/service.js'
import { scheduleWireSchemas } from './schedules/schema.js'
import scheduleRoutes from './routes/schedules.js'
import sourceRoutes from './routes/sources.js'
import connectors from './sources/registry.js'
import { sharedSchemas } from './sources/schemas.js'
import sources from './sources/service.js'
import { findNul, typeboxValidator } from './validation.js'
import audit from './audit/service.js'
import { auditWireSchemas } from './audit/schema.js'
import auditRoutes from './routes/audit.js'
import webhookRoutes from './routes/webhooks.js'
import webhooks from './webhooks/service.js'
import { webhookWireSchemas } from './webhooks/schema.js'

export interface AppOptions {
  config: Config
  /** Share an open database (tests); otherwise the app opens and closes its own. */
  database?: ServiceDatabase
  /** The service's database, already opening (`concord serve`); the app closes it. */
  openingDatabase?: Promise<ServiceDatabase>
  logger?: FastifyServerOptions['logger']
  /** The run report's exception aging (src/runs/report/report.ts); without it the report says none are recorded. */
  exceptionAging?: ExceptionAging
}

/**
 * One log line per request, when it completes, naming its method and URL: Fastify's two (incoming
 * at info, then completed) cost the service's thread about a tenth of a short request's time
 * under load (a CPU profile of the exceptions list). The incoming line stays at debug.
 */
class OneLinePerRequest extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    if (!this.isLogDisabled(request)) request.log.debug({ req: request }, 'incoming request')
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return
    const line = { method: request.method, url: request.url, res: reply, responseTime: reply.elapsedTime }
    if (error) reply.log.error({ ...line, err: error }, 'request errored')
    else reply.log.info(line, 'request completed')
  }
}

export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  // reply serializers and request validators compile when first used (src/compile-on-use.ts)
  const compilers = new CompileOnUse()
  const app = Fastify({
    // lines are written by a libuv thread, those that arrive meanwhile joined into one write;
    // pino's default writes each line on the service's thread, a system call per line (about 5%
    // of the thread under load in a CPU profile of the exceptions list). Flushed at exit.
    logger: opts.logger ?? { level: opts.config.logLevel, stream: destination({ dest: 1, sync: false }) },
    // a caller's own x-request-id (safe characters only) ties its logs to ours; otherwise a new one
    genReqId: (req) => {
      const given = req.headers['x-request-id']
      return typeof given === 'string' && /^[\w.:-]{1,128}$/.test(given) ? given : crypto.randomUUID()
    },
    logController: new OneLinePerRequest({ requestIdLogLabel: 'request_id' }),
    bodyLimit: 10 * 1024 * 1024,
    // opening the database may take longer than Fastify's 10 s for a plugin: an embedded one
    // recovering after a crash on a busy machine, a PostgreSQL slow to accept; start-up waits
    pluginTimeout: 120_000,
    schemaController: {
      compilersFactory: {
        buildSerializer: (shared?: unknown, options?: Parameters<typeof buildSerializer>[1]) =>
          compilers.wrap(buildSerializer(shared, options)),
      },
    },
  }).withTypeProvider<TypeBoxTypeProvider>()

  app.decorate('config', opts.config)
  // large source files are parsed on a thread of their own, not on the event loop
  loadFilesOffThread()
  app.decorate('compilers', compilers)
  app.addHook('onClose', async () => compilers.stop())
  const schemas = [
    ...sharedSchemas,
    ...recipeWireSchemas,
    ...runWireSchemas,
    ...auditWireSchemas,
    ...webhookWireSchemas,
    ...exceptionWireSchemas,
    ...scheduleWireSchemas,
  ]
  for (const schema of schemas) app.addSchema(schema)
  app.setValidatorCompiler(compilers.wrap(typeboxValidator(schemas)))
  app.setErrorHandler(errorHandler)
  // every reply names its request, so a caller can quote it and an operator find its log lines
  app.addHook('onRequest', async (request, reply) => {
    void reply.header('x-request-id', request.id)
  })
  // before any route sees it: a NUL in a filter value, a column name or a predicate is a 400 of its own
  app.addHook('preValidation', async (request) => {
    const at = findNul(request.params, 'path') ?? findNul(request.query, 'query') ?? findNul(request.body, 'body')
    if (at)
      throw new ConcordError(
        'nul_character',
        `${at} contains a NUL character (U+0000)`,
        400,
        'remove it: no column name, value or predicate may contain U+0000 (PostgreSQL text cannot hold it)',
      )
  })
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({
      error: 'route_not_found',
      message: `no route ${request.method} ${request.url}`,
      suggestion: 'see /docs for the API',
    }),
  )

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Concord',
        version: '0.1.0',
        description: 'Reconciliation service: match the records of two sources and explain every match and every miss.',
      },
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'an API key: Authorization: Bearer <key>' },
        },
      },
      security: [{ apiKey: [] }],
      tags: [
        { name: 'sources', description: 'Register sources and load scoped tables' },
        { name: 'recipes', description: 'Save, version, validate and explain reconciliation recipes' },
        { name: 'runs', description: 'Run recipes as background jobs; page and export their results' },
        { name: 'exceptions', description: 'What runs left unmatched: classified, assigned, resolved' },
        { name: 'schedules', description: 'Recipes run on a cron expression, with rolling parameters' },
        { name: 'ai', description: 'Stateless reasoning tools: mappings, filters, proposals, rules, recipes' },
        { name: 'chat', description: 'The chat agent: turns, sessions, events, phases' },
        { name: 'access', description: 'API keys and workspaces' },
        { name: 'audit', description: 'The hash-chained audit trail of every change, and its verification' },
        {
          name: 'webhooks',
          description: 'Subscriptions to run and exception events, signed and retried; delivery logs',
        },
        { name: 'ops', description: 'Health and readiness' },
      ],
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
  })
  await app.register(swaggerUi, { routePrefix: '/docs' })
  await app.register(metrics)
  // overload and abuse: a 503 while the event loop or memory is saturated, a 429 past the rate.
  // The loop is measured from onReady on (src/pressure.ts): start-up work is not load.
  const loop = loopGauge(opts.config.maxEventLoopDelayMs)
  app.addHook('onReady', async () => loop.start())
  app.addHook('onClose', async () => loop.stop())
  await app.register(underPressure, {
    maxHeapUsedBytes: opts.config.maxHeapUsedBytes,
    healthCheck: async () => loop.healthy(),
    healthCheckInterval: 1000,
    retryAfter: 5,
    // probes answer even now: an orchestrator must see the process alive and read its metrics
    pressureHandler: async (request, reply) => {
      if (isProbe(request)) return
      void reply.header('retry-after', '5')
      throw new Overloaded()
    },
  })
  await app.register(rateLimit, {
    max: opts.config.rateLimitPerMinute,
    timeWindow: '1 minute',
    keyGenerator: rateLimitKey,
    allowList: isProbe,
    errorResponseBuilder: (_request, context) =>
      new ConcordError('rate_limited', `more than ${context.max} requests a minute`, 429, `retry in ${context.after}`),
  })
  await app.register(multipart, { limits: { fileSize: opts.config.maxUploadBytes, files: 1, fields: 10 } })

  await app.register(dbPlugin, { database: opts.database, opening: opts.openingDatabase })
  // the audit trail and the webhook outbox before every service that records into them
  await app.register(audit)
  await app.register(webhooks)
  await app.register(auth)
  await app.register(idempotency)
  await app.register(connectors)
  await app.register(sources)
  await app.register(recipes)
  await app.register(runs)
  await app.register(exceptions)
  await app.register(schedules)
  await app.register(ai)
  // the chat agent's phases: each a plugin registering its PhaseConfig (plugins/); the graph is
  // checked when the app is ready, after any phase a caller registers on top
  await app.register(phaseRegistry, { tools: () => AGENT_TOOLS.map((t) => t.name) })
  for (const phase of await shippedPhases()) await app.register(phase)
  await app.register(chat)

  await app.register(healthRoutes)
  await app.register(sourceRoutes)
  await app.register(recipeRoutes)
  await app.register(runRoutes)
  await app.register(reportRoutes, {
    // none open (a dry or sample run, everything matched or resolved): the section says so
    exceptionAging:
      opts.exceptionAging ??
      (async (ws, id) => {
        const buckets = await app.exceptions.agingForRun(ws, id)
        return buckets.some((b) => b.count > 0) ? buckets : null
      }),
  })
  await app.register(exceptionRoutes)
  await app.register(scheduleRoutes)
  await app.register(aiRoutes)
  await app.register(chatRoutes)
  await app.register(keyRoutes)
  await app.register(auditRoutes)
  await app.register(webhookRoutes)
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())
  return app
}

/** under-pressure's error: a 503 in the service's error shape. */
class Overloaded extends ConcordError {
  constructor() {
    super('overloaded', 'the service is overloaded right now', 503, 'retry in a few seconds')
  }
}

const FASTIFY_ERRORS: Record<string, { status: number; error: string; suggestion: string }> = {
  FST_ERR_CTP_INVALID_JSON_BODY: {
    status: 400,
    error: 'invalid_json',
    suggestion: 'send a JSON document (check quotes, commas and brackets)',
  },
  FST_ERR_CTP_EMPTY_JSON_BODY: {
    status: 400,
    error: 'invalid_json',
    suggestion: 'send a JSON body, or no content-type header when there is none',
  },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    status: 415,
    error: 'unsupported_media_type',
    suggestion: 'send application/json (or multipart/form-data to upload a file)',
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: {
    status: 400,
    error: 'invalid_request',
    suggestion: 'the content-length header must match the body',
  },
}

type ValidationIssue = NonNullable<FastifyError['validation']>[number]

/**
 * One line per wrong field. A value outside a list of literals (an op, a pattern, an export
 * format) fails each literal and then the union: said once, with the values it may take.
 */
export function validationMessage(where: string, issues: ValidationIssue[]): string {
  const byPath = new Map<string, ValidationIssue[]>()
  for (const issue of issues) {
    const path = `${where}${issue.instancePath || ''}`
    byPath.set(path, [...(byPath.get(path) ?? []), issue])
  }
  const lines: string[] = []
  for (const [path, group] of byPath) {
    const allowed = group.flatMap((i) => {
      if (i.keyword !== 'const' || !i.params) return []
      // the whole list when the validator could read it from the schema (validation.ts)
      if (Array.isArray(i.params.allowedValues)) return i.params.allowedValues.map(String)
      return 'allowedValue' in i.params ? [String(i.params.allowedValue)] : []
    })
    if (allowed.length > 1 || (allowed.length && group.some((i) => i.keyword === 'anyOf'))) {
      lines.push(`${path} must be one of: ${[...new Set(allowed)].join(', ')}`)
      continue
    }
    for (const message of new Set(group.filter((i) => i.keyword !== 'anyOf').map((i) => i.message)))
      lines.push(`${path} ${message}`)
    if (group.every((i) => i.keyword === 'anyOf')) lines.push(`${path} ${group[0].message}`)
  }
  return lines.join('; ')
}

function errorHandler(
  this: FastifyInstance,
  err: FastifyError | ConcordError,
  request: { log: FastifyInstance['log'] },
  reply: { code(n: number): { send(b: unknown): unknown } },
) {
  if (err instanceof ConcordError) {
    if (err.status >= 500) request.log.warn({ code: err.code, msg: err.message }, 'request failed')
    return reply.code(err.status).send(err.toJSON())
  }
  const e = err as FastifyError
  if (e.validation) {
    return reply.code(400).send({
      error: 'invalid_request',
      message: validationMessage(e.validationContext ?? 'request', e.validation),
      suggestion: 'see /docs for the request schema',
    })
  }
  // Fastify's own refusals of a body it cannot read, under the names the API documents
  const known = FASTIFY_ERRORS[e.code]
  if (known)
    return reply.code(known.status).send({ error: known.error, message: e.message, suggestion: known.suggestion })
  if (e.code === 'FST_REQ_FILE_TOO_LARGE' || e.statusCode === 413) {
    return reply
      .code(413)
      .send({ error: 'payload_too_large', message: e.message, suggestion: 'send a smaller body or file' })
  }
  if (e.statusCode && e.statusCode < 500) {
    return reply.code(e.statusCode).send({ error: (e.code ?? 'bad_request').toLowerCase(), message: e.message })
  }
  if (isDatabaseUnavailable(err)) {
    request.log.warn({ msg: e.message }, 'service database unavailable')
    return reply.code(503).send({
      error: 'database_unavailable',
      message: `the service database is not answering: ${e.message}`,
      suggestion: 'retry shortly; GET /ready turns 200 when the database is back',
    })
  }
  request.log.error({ err }, 'unexpected error')
  return reply
    .code(500)
    .send({ error: 'internal_error', message: 'an unexpected error occurred; the request id is in the logs' })
}
