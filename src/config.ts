// Configuration: every environment variable the service reads, typed and defaulted in one place.
// The README's configuration table lists the same variables.

import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { type Static, Type } from 'typebox'
import { Value } from 'typebox/value'
import { secretKey } from './sources/secrets.js'

const ConfigSchema = Type.Object({
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  HOST: Type.String({ default: '127.0.0.1' }),
  DATA_DIR: Type.String({ default: './data' }),
  DATABASE_URL: Type.Optional(Type.String({ minLength: 1 })),
  /** Where run results are kept; defaults to DATA_DIR/runs. */
  RUNS_DIR: Type.Optional(Type.String({ minLength: 1 })),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info' },
  ),
  /** Largest accepted upload (multipart file) in bytes. */
  MAX_UPLOAD_BYTES: Type.Integer({ minimum: 1, default: 512 * 1024 * 1024 }),
  /** Statement timeout for queries Concord runs against PostgreSQL sources. */
  SOURCE_STATEMENT_TIMEOUT_MS: Type.Integer({ minimum: 0, default: 300_000 }),
  /** Connections per PostgreSQL source database. */
  SOURCE_POOL_MAX: Type.Integer({ minimum: 1, default: 4 }),
  // source types from outside the tree: modules (absolute paths or file: URLs, comma-separated)
  // default-exporting a connector factory, loaded after connectors/ by the service, its run
  // workers and the CLI
  CONNECTOR_MODULES: Type.String({ default: '' }),
  /** The bootstrap admin key (default workspace, may create workspaces). Without it and without keys: open mode, loopback only. */
  CONCORD_ADMIN_KEY: Type.Optional(Type.String({ minLength: 16 })),
  /** 32 bytes (base64 or hex) that encrypt source passwords at rest (AES-256-GCM). */
  CONCORD_SECRET_KEY: Type.Optional(Type.String({ minLength: 1 })),
  /** Which implementation of the reasoning tools answers: auto = Claude when a key is set, else deterministic. */
  AI_MODE: Type.Union(
    ['auto', 'deterministic', 'llm'].map((m) => Type.Literal(m)),
    { default: 'auto' },
  ),
  ANTHROPIC_API_KEY: Type.Optional(Type.String({ minLength: 1 })),
  /** The Messages API base URL (without /v1), e.g. a proxy. */
  ANTHROPIC_BASE_URL: Type.Optional(Type.String({ minLength: 1 })),
  ANTHROPIC_MODEL: Type.String({ default: 'claude-sonnet-5' }),
  /** How long one model call may take. */
  AI_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 60_000 }),
  /** Retries of a model call answered 408/429/5xx (with backoff), before it counts as failed. */
  AI_MAX_RETRIES: Type.Integer({ minimum: 0, maximum: 10, default: 2 }),
  /** Requests a client (an API key, or an address without one) may make per minute; probes do not count. */
  RATE_LIMIT_PER_MINUTE: Type.Integer({ minimum: 1, default: 1200 }),
  /** Past this event-loop delay (ms) or heap use (bytes, 0 = off) requests get a 503 until it passes. */
  MAX_EVENT_LOOP_DELAY_MS: Type.Integer({ minimum: 0, default: 2000 }),
  MAX_HEAP_USED_BYTES: Type.Integer({ minimum: 0, default: 0 }),
  /** Model calls the chat agent may make in one turn before it stops and says so. */
  AGENT_LOOP_LIMIT: Type.Integer({ minimum: 1, maximum: 100, default: 12 }),
  /** How long a chat turn's hold on its session lasts unrenewed (it renews every third of it). */
  CHAT_LEASE_MS: Type.Integer({ minimum: 50, default: 60_000 }),
  /** How often a session's event stream reads the event table for turns run by other instances. */
  CHAT_EVENTS_POLL_MS: Type.Integer({ minimum: 20, default: 1000 }),
  /** Runs executed at the same time (each in its own worker thread); the rest wait in a queue. */
  RUN_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 64, default: 2 }),
  /** How often an instance says it lives; its runs are taken over after five beats of silence. */
  RUN_HEARTBEAT_MS: Type.Integer({ minimum: 50, default: 2000 }),
  /** Webhook receivers on private, loopback or link-local networks are refused unless this is true. */
  WEBHOOK_ALLOW_PRIVATE: Type.Boolean({ default: false }),
  /** Receivers allowed even on private networks: host names, addresses or CIDRs, comma-separated. */
  WEBHOOK_ALLOW_HOSTS: Type.String({ default: '' }),
  /** How long one delivery attempt may take (connect, send, response headers). */
  WEBHOOK_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 10_000 }),
  /** Attempts of one delivery before it is marked dead. */
  WEBHOOK_MAX_ATTEMPTS: Type.Integer({ minimum: 1, maximum: 100, default: 12 }),
  /** The first retry's delay; each next one doubles (with jitter), up to WEBHOOK_BACKOFF_MAX_MS. */
  WEBHOOK_BACKOFF_MS: Type.Integer({ minimum: 1, default: 10_000 }),
  WEBHOOK_BACKOFF_MAX_MS: Type.Integer({ minimum: 1, default: 3_600_000 }),
  /** How often the dispatcher looks for due deliveries. */
  WEBHOOK_POLL_MS: Type.Integer({ minimum: 10, default: 1000 }),
  /** Deliveries in flight at once per instance. */
  WEBHOOK_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 64, default: 4 }),
  /** Delivered and dead deliveries (and their attempts) are kept this many days for the delivery log. */
  WEBHOOK_RETENTION_DAYS: Type.Integer({ minimum: 1, default: 30 }),
  /**
   * An exception is a fee variance when its closest candidate failed only amount checks and the
   * difference is at most this share of the larger amount (or equals a fee the records state); 0: off.
   */
  /** How often an instance looks for due schedules (0: it never fires them; other instances may). */
  SCHEDULER_TICK_MS: Type.Integer({ minimum: 0, default: 15_000 }),
  EXCEPTION_FEE_SHARE: Type.String({ pattern: '^(0(\\.\\d+)?|1(\\.0+)?)$', default: '0.01' }),
})

export type EnvConfig = Static<typeof ConfigSchema>

export interface Config {
  port: number
  host: string
  /** Absolute path of the data folder: the embedded database, uploads, file sources. */
  dataDir: string
  databaseUrl?: string
  /** Absolute path of the run results folder. */
  runsDir: string
  logLevel: EnvConfig['LOG_LEVEL']
  maxUploadBytes: number
  sourceStatementTimeoutMs: number
  sourcePoolMax: number
  /** Connector modules from outside connectors/ (file: URLs). */
  connectorModules: string[]
  runConcurrency: number
  runHeartbeatMs: number
  /** Exact decimal text, 0..1 (src/exceptions/classify.ts). */
  exceptionFeeShare: string
  schedulerTickMs: number
  aiMode: 'auto' | 'deterministic' | 'llm'
  anthropicApiKey?: string
  anthropicBaseUrl?: string
  anthropicModel: string
  aiTimeoutMs: number
  aiMaxRetries: number
  agentLoopLimit: number
  chatLeaseMs: number
  chatEventsPollMs: number
  adminKey?: string
  secretKey?: Buffer
  rateLimitPerMinute: number
  maxEventLoopDelayMs: number
  maxHeapUsedBytes: number
  webhooks: WebhookConfig
}

export interface WebhookConfig {
  allowPrivate: boolean
  /** Host names (lowercase), addresses and CIDRs a receiver may be on even when private. */
  allowHosts: string[]
  timeoutMs: number
  maxAttempts: number
  backoffMs: number
  backoffMaxMs: number
  pollMs: number
  concurrency: number
  retentionDays: number
}

/** Reads the configuration from `env`; throws one readable error listing every bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const picked: Record<string, unknown> = {}
  for (const key of Object.keys(ConfigSchema.properties)) {
    const v = env[key]
    if (v !== undefined && v !== '') picked[key] = v
  }
  const withDefaults = Value.Default(ConfigSchema, Value.Convert(ConfigSchema, picked))
  if (!Value.Check(ConfigSchema, withDefaults)) {
    const problems = [...Value.Errors(ConfigSchema, withDefaults)].map(
      (e) => `${e.instancePath.slice(1) || 'config'}: ${e.message}`,
    )
    throw new Error(`invalid configuration: ${problems.join('; ')}`)
  }
  const c = withDefaults as EnvConfig
  return {
    port: c.PORT,
    host: c.HOST,
    dataDir: resolve(c.DATA_DIR),
    databaseUrl: c.DATABASE_URL,
    runsDir: resolve(c.RUNS_DIR ?? join(c.DATA_DIR, 'runs')),
    logLevel: c.LOG_LEVEL,
    maxUploadBytes: c.MAX_UPLOAD_BYTES,
    sourceStatementTimeoutMs: c.SOURCE_STATEMENT_TIMEOUT_MS,
    sourcePoolMax: c.SOURCE_POOL_MAX,
    connectorModules: c.CONNECTOR_MODULES.split(',')
      .map((m) => m.trim())
      .filter(Boolean)
      .map((m) => (m.startsWith('file:') ? m : pathToFileURL(resolve(m)).href)),
    runConcurrency: c.RUN_CONCURRENCY,
    runHeartbeatMs: c.RUN_HEARTBEAT_MS,
    exceptionFeeShare: c.EXCEPTION_FEE_SHARE,
    schedulerTickMs: c.SCHEDULER_TICK_MS,
    aiMode: c.AI_MODE as Config['aiMode'],
    anthropicApiKey: c.ANTHROPIC_API_KEY,
    anthropicBaseUrl: c.ANTHROPIC_BASE_URL,
    anthropicModel: c.ANTHROPIC_MODEL,
    aiTimeoutMs: c.AI_TIMEOUT_MS,
    aiMaxRetries: c.AI_MAX_RETRIES,
    agentLoopLimit: c.AGENT_LOOP_LIMIT,
    chatLeaseMs: c.CHAT_LEASE_MS,
    chatEventsPollMs: c.CHAT_EVENTS_POLL_MS,
    adminKey: c.CONCORD_ADMIN_KEY,
    secretKey: secretKey(c.CONCORD_SECRET_KEY),
    rateLimitPerMinute: c.RATE_LIMIT_PER_MINUTE,
    maxEventLoopDelayMs: c.MAX_EVENT_LOOP_DELAY_MS,
    maxHeapUsedBytes: c.MAX_HEAP_USED_BYTES,
    webhooks: {
      allowPrivate: c.WEBHOOK_ALLOW_PRIVATE,
      allowHosts: c.WEBHOOK_ALLOW_HOSTS.split(',')
        .map((h) => h.trim().toLowerCase())
        .filter(Boolean),
      timeoutMs: c.WEBHOOK_TIMEOUT_MS,
      maxAttempts: c.WEBHOOK_MAX_ATTEMPTS,
      backoffMs: c.WEBHOOK_BACKOFF_MS,
      backoffMaxMs: c.WEBHOOK_BACKOFF_MAX_MS,
      pollMs: c.WEBHOOK_POLL_MS,
      concurrency: c.WEBHOOK_CONCURRENCY,
      retentionDays: c.WEBHOOK_RETENTION_DAYS,
    },
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
  }
}
