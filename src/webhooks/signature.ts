// How a delivery is signed, and how a receiver checks it. Every request carries the delivery id,
// the event, a timestamp (Unix seconds) and `v1=<hex HMAC-SHA256 of "<timestamp>.<body>">` under
// the subscription's secret. Signing the timestamp with the body lets a receiver refuse a replay:
// a captured request re-sent later carries an old timestamp it cannot re-sign.

import { createHmac, timingSafeEqual } from 'node:crypto'

export const DELIVERY_HEADERS = {
  id: 'x-concord-delivery',
  event: 'x-concord-event',
  timestamp: 'x-concord-timestamp',
  signature: 'x-concord-signature',
} as const

/** How old a delivery's timestamp may be before a receiver should refuse it. */
export const REPLAY_WINDOW_SECONDS = 300

export function sign(secret: string, timestamp: number, body: string): string {
  return `v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest('hex')}`
}

/**
 * What a receiver does: the signature matches (compared in constant time) and the timestamp is
 * within five minutes of its clock. Exported for tests and for receivers written in Node.
 */
export function verifyDelivery(opts: {
  secret: string
  body: string
  timestamp: string | undefined
  signature: string | undefined
  nowSeconds?: number
  toleranceSeconds?: number
}): { ok: true } | { ok: false; reason: string } {
  const ts = Number(opts.timestamp)
  if (!opts.timestamp || !Number.isInteger(ts)) return { ok: false, reason: 'no timestamp' }
  const now = opts.nowSeconds ?? Math.floor(Date.now() / 1000)
  if (Math.abs(now - ts) > (opts.toleranceSeconds ?? REPLAY_WINDOW_SECONDS))
    return { ok: false, reason: 'timestamp outside the replay window' }
  const expected = Buffer.from(sign(opts.secret, ts, opts.body))
  const given = Buffer.from(opts.signature ?? '')
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { ok: false, reason: 'signature does not match' }
  return { ok: true }
}
