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

function withPassword(conn: string, password: string | undefined): string {
  const url = new URL(conn)
  url.password = password ? encodeURIComponent(password) : ''
  return url.toString()
}

function passwordOf(conn: string): string | undefined {
  try {
    const p = new URL(conn).password
    return p ? decodeURIComponent(p) : undefined
  } catch {
    return undefined
  }
}

/**
 * A source config as it may be stored: the password taken out of `connection_string` and sealed
 * (or left to `password_env`). Configs without a connection string pass as they are.
 */
export function sealConfig(config: Record<string, unknown>, key: Buffer | undefined): Record<string, unknown> {
  const conn = config.connection_string
  if (typeof conn !== 'string') return config
  const password = passwordOf(conn)
  const { password_enc: _stale, ...rest } = config
  if (!password || config.password_env) return { ...rest, connection_string: withPassword(conn, undefined) }
  if (!key)
    throw new ConcordError(
      'secret_key_required',
      'a connection string with a password can only be stored encrypted, and CONCORD_SECRET_KEY is not set',
      400,
      'set CONCORD_SECRET_KEY (openssl rand -base64 32), or give password_env: the name of an environment variable holding the password',
    )
  return { ...rest, connection_string: withPassword(conn, undefined), password_enc: encrypt(key, password) }
}

/** The config a connector needs, with the password back in the connection string (memory only). */
export function openConfig(config: Record<string, unknown>, key: Buffer | undefined): Record<string, unknown> {
  const conn = config.connection_string
  if (typeof conn !== 'string') return config
  const { password_enc, password_env, ...rest } = config
  let password: string | undefined
  if (typeof password_env === 'string') {
    password = process.env[password_env]
    if (password === undefined)
      throw new ConcordError(
        'secret_unavailable',
        `the environment variable ${password_env} (the source's password) is not set`,
        502,
        `set ${password_env} in the service's environment`,
      )
  } else if (typeof password_enc === 'string') {
    if (!key)
      throw new ConcordError(
        'secret_unavailable',
        'the source password is encrypted and CONCORD_SECRET_KEY is not set',
        502,
        'set the key it was stored with',
      )
    try {
      password = decrypt(key, password_enc)
    } catch {
      throw new ConcordError(
        'secret_unavailable',
        'the source password cannot be decrypted with CONCORD_SECRET_KEY',
        502,
        'set the key it was stored with',
      )
    }
  }
  return {
    ...rest,
    ...(typeof password_env === 'string' ? { password_env } : {}),
    connection_string: password ? withPassword(conn, password) : conn,
  }
}
