// Source credentials at rest. A connection string's password is never stored as text: it is either
// encrypted with AES-256-GCM under CONCORD_SECRET_KEY, or not stored at all because the source
// names an environment variable that holds it (`password_env`). The full connection string exists
// only in memory, when a connector connects.

import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { ConcordError } from '../errors.js'

const ALGORITHM = 'aes-256-gcm'

/** The 32-byte key from its base64 or hex text, or undefined without one. */
export function secretKey(text: string | undefined): Buffer | undefined {
  if (!text) return undefined
  const key = /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64')
  if (key.length !== 32)
    throw new Error('CONCORD_SECRET_KEY must be 32 bytes, as 64 hex digits or base64 (openssl rand -base64 32)')
  return key
}

export function encrypt(key: Buffer, plain: string): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv(ALGORITHM, key, iv)
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
  return `v1.${iv.toString('base64')}.${cipher.getAuthTag().toString('base64')}.${body.toString('base64')}`
}

export function decrypt(key: Buffer, sealed: string): string {
  const [version, iv, tag, body] = sealed.split('.')
  if (version !== 'v1' || !iv || !tag || !body) throw new Error('not a sealed secret')
  const decipher = createDecipheriv(ALGORITHM, key, Buffer.from(iv, 'base64'))
  decipher.setAuthTag(Buffer.from(tag, 'base64'))
  return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8')
}

/**
 * Connection-string query parameters that carry a secret: node-postgres takes `password` (over the
 * userinfo one) and `sslpassword` (the client key's passphrase) from the query string, so they are
 * sealed and redacted like the userinfo password. Matched without case, to redact generously.
 */
const SECRET_PARAMS = new Set(['password', 'sslpassword'])

/** `password_env` may only name variables meant for it: any other (CONCORD_ADMIN_KEY, ANTHROPIC_API_KEY, …) would be sent to a database of the caller's choosing. */
export const PASSWORD_ENV_PREFIX = 'CONCORD_SOURCE_'

export function checkPasswordEnv(name: string): void {
  if (!name.startsWith(PASSWORD_ENV_PREFIX) || name.length === PASSWORD_ENV_PREFIX.length)
    throw new ConcordError(
      'password_env_not_allowed',
      `password_env may only name an environment variable starting with ${PASSWORD_ENV_PREFIX}, not "${name}"`,
      400,
      `put the password in e.g. ${PASSWORD_ENV_PREFIX}LEDGER_PASSWORD and name that`,
    )
}

interface Split {
  /** The connection string without any secret (userinfo password, secret query parameters). */
  bare: string
  password?: string
  /** Secret query parameters by their name as written. */
  params: Record<string, string>
}

function split(conn: string): Split {
  let url: URL
  try {
    url = new URL(conn)
  } catch {
    return { bare: conn, params: {} }
  }
  const password = url.password ? decodeURIComponent(url.password) : undefined
  url.password = ''
  const params: Record<string, string> = {}
  for (const name of [...url.searchParams.keys()])
    if (SECRET_PARAMS.has(name.toLowerCase())) {
      params[name] = url.searchParams.get(name)!
      url.searchParams.delete(name)
    }
  return { bare: url.toString(), password: password || undefined, params }
}

function join(bare: string, password: string | undefined, params: Record<string, string>): string {
  let url: URL
  try {
    url = new URL(bare)
  } catch {
    return bare // not a URL: the connector answers source_unreachable
  }
  url.password = password ? encodeURIComponent(password) : ''
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value)
  return url.toString()
}

/** Every secret in a connection string (for scrubbing messages); empty when it has none. */
export function connectionSecrets(conn: string): string[] {
  const { password, params } = split(conn)
  return [password, ...Object.values(params)].filter((s): s is string => !!s)
}

/** The connection string with every secret shown as ***: safe to return or log. */
export function redactConnection(conn: string): string {
  let url: URL
  try {
    url = new URL(conn)
  } catch {
    return 'postgresql://***'
  }
  if (url.password) url.password = '***'
  for (const name of [...url.searchParams.keys()])
    if (SECRET_PARAMS.has(name.toLowerCase())) url.searchParams.set(name, '***')
  return url.toString()
}

/**
 * A source config as it may be stored: the secrets taken out of `connection_string` and sealed
 * (the password may instead be left to `password_env`). Configs without a connection string pass
 * as they are.
 */
export function sealConfig(config: Record<string, unknown>, key: Buffer | undefined): Record<string, unknown> {
  const conn = config.connection_string
  if (typeof conn !== 'string') return config
  const { password_enc: _stale, params_enc: _staleParams, ...rest } = config
  const { bare, password: userinfo, params } = split(conn)
  // with password_env the environment gives the password, wherever the string put one
  const byEnv = typeof config.password_env === 'string'
  if (byEnv) for (const name of Object.keys(params)) if (name.toLowerCase() === 'password') delete params[name]
  const password = byEnv ? undefined : userinfo
  if (!password && Object.keys(params).length === 0) return { ...rest, connection_string: bare }
  if (!key)
    throw new ConcordError(
      'secret_key_required',
      'a connection string with a password can only be stored encrypted, and CONCORD_SECRET_KEY is not set',
      400,
      'set CONCORD_SECRET_KEY (openssl rand -base64 32), or give password_env: the name of an environment variable holding the password',
    )
  return {
    ...rest,
    connection_string: bare,
    ...(password ? { password_enc: encrypt(key, password) } : {}),
    ...(Object.keys(params).length ? { params_enc: encrypt(key, JSON.stringify(params)) } : {}),
  }
}

function unseal(key: Buffer | undefined, sealed: string): string {
  if (!key)
    throw new ConcordError(
      'secret_unavailable',
      'the source password is encrypted and CONCORD_SECRET_KEY is not set',
      502,
      'set the key it was stored with',
    )
  try {
    return decrypt(key, sealed)
  } catch {
    throw new ConcordError(
      'secret_unavailable',
      'the source password cannot be decrypted with CONCORD_SECRET_KEY',
      502,
      'set the key it was stored with',
    )
  }
}

/** The config a connector needs, with the secrets back in the connection string (memory only). */
export function openConfig(config: Record<string, unknown>, key: Buffer | undefined): Record<string, unknown> {
  const conn = config.connection_string
  if (typeof conn !== 'string') return config
  const { password_enc, params_enc, password_env, ...rest } = config
  // a registration's string still holds its secrets; a stored one holds none and has them sealed
  const inline = split(conn)
  let password = inline.password
  const params = { ...inline.params }
  if (typeof password_env === 'string') {
    checkPasswordEnv(password_env)
    password = process.env[password_env]
    if (password === undefined)
      throw new ConcordError(
        'secret_unavailable',
        `the environment variable ${password_env} (the source's password) is not set`,
        502,
        `set ${password_env} in the service's environment`,
      )
    for (const name of Object.keys(params)) if (name.toLowerCase() === 'password') delete params[name]
  } else if (typeof password_enc === 'string') password = unseal(key, password_enc)
  if (typeof params_enc === 'string') Object.assign(params, JSON.parse(unseal(key, params_enc)) as object)
  return {
    ...rest,
    ...(typeof password_env === 'string' ? { password_env } : {}),
    connection_string: join(inline.bare, password, params),
  }
}
