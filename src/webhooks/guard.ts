// Receivers on private networks are refused: a webhook URL is a request the service makes on a
// caller's behalf, and pointed at 127.0.0.1, 10.x or 169.254.169.254 it would reach what only
// the service's own network should (SSRF). A URL is checked when a subscription is saved, by
// resolving its host, and again at every delivery inside the connection's own DNS lookup — the
// address checked is the address connected to, so a name that re-resolves to a private address
// later (DNS rebinding) is refused then. WEBHOOK_ALLOW_PRIVATE / WEBHOOK_ALLOW_HOSTS let chosen
// receivers through (tests, an internal hook relay).

import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { BlockList, isIP, type LookupFunction } from 'node:net'
import type { WebhookConfig } from '../config.js'
import { ConcordError } from '../errors.js'

/** Loopback, private, link-local, carrier-grade NAT, multicast, reserved and unspecified ranges. */
const PRIVATE = new BlockList()
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  PRIVATE.addSubnet(net, prefix, 'ipv4')
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  PRIVATE.addSubnet(net, prefix, 'ipv6')

const family = (address: string) => (isIP(address) === 6 ? 'ipv6' : 'ipv4')

export class ReceiverGuard {
  private readonly allowedNets = new BlockList()
  private readonly allowedNames = new Set<string>()

  constructor(private readonly config: Pick<WebhookConfig, 'allowPrivate' | 'allowHosts'>) {
    for (const entry of config.allowHosts) {
      const [address, bits] = entry.split('/')
      if (isIP(address)) {
        const max = isIP(address) === 6 ? 128 : 32
        this.allowedNets.addSubnet(address, bits === undefined ? max : Number(bits), family(address))
      } else this.allowedNames.add(entry)
    }
  }

  /** Why an address may not be connected to for `host`, or null when it may. */
  refusal(host: string, address: string): string | null {
    if (this.config.allowPrivate || this.allowedNames.has(host.toLowerCase())) return null
    // IPv4-mapped IPv6 (::ffff:127.0.0.1) matches the IPv4 rules too (BlockList checks both)
    if (!PRIVATE.check(address, family(address))) return null
    if (this.allowedNets.check(address, family(address))) return null
    return host === address
      ? `${address} is a private, loopback or link-local address`
      : `${host} resolves to ${address}, a private, loopback or link-local address`
  }

  /**
   * Checks a subscription's URL: http(s), no credentials in it, and a host that resolves, only to
   * addresses a receiver may be on. Throws a 400 saying what to change.
   */
  async checkUrl(text: string): Promise<URL> {
    let url: URL
    try {
      url = new URL(text)
    } catch {
      throw new ConcordError(
        'invalid_webhook_url',
        `"${text}" is not a URL`,
        400,
        'e.g. https://hooks.example.com/concord',
      )
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      throw new ConcordError('invalid_webhook_url', `a webhook URL is http or https, not ${url.protocol}`, 400)
    if (url.username || url.password)
      throw new ConcordError(
        'invalid_webhook_url',
        'a webhook URL may not carry credentials',
        400,
        'the receiver authenticates deliveries by their signature (x-concord-signature)',
      )
    const host = hostOf(url)
    let addresses: LookupAddress[]
    try {
      addresses = await resolve(host)
    } catch (err) {
      throw new ConcordError(
        'webhook_host_unresolvable',
        `the webhook host ${host} does not resolve: ${(err as Error).message}`,
        400,
        'check the host name',
      )
    }
    for (const { address } of addresses) {
      const why = this.refusal(host, address)
      if (why)
        throw new ConcordError(
          'webhook_url_refused',
          `receivers on private networks are refused: ${why}`,
          400,
          'use a public receiver, or allow it with WEBHOOK_ALLOW_HOSTS (hosts or CIDRs) or WEBHOOK_ALLOW_PRIVATE=true',
        )
    }
    return url
  }

  /**
   * The DNS lookup a delivery's connection uses: every address the host resolves to is checked,
   * and the connection goes to a checked one. An IP literal never reaches a lookup: checkAddress.
   */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    dnsLookup(hostname, { all: true, family: options.family ?? 0, hints: options.hints }, (err, addresses) => {
      if (err) return callback(err, '', 0)
      for (const { address } of addresses) {
        const why = this.refusal(hostname, address)
        if (why) return callback(Object.assign(new Error(`refused: ${why}`), { code: 'ERECEIVERREFUSED' }), '', 0)
      }
      if (options.all) return (callback as (e: null, a: LookupAddress[]) => void)(null, addresses)
      callback(null, addresses[0].address, addresses[0].family)
    })
  }

  /** For a URL whose host is an IP literal (no lookup happens): the refusal, or null. */
  literalRefusal(url: URL): string | null {
    const host = hostOf(url)
    return isIP(host) ? this.refusal(host, host) : null
  }
}

/** The URL's host without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1')
}

function resolve(host: string): Promise<LookupAddress[]> {
  if (isIP(host)) return Promise.resolve([{ address: host, family: isIP(host) }])
  return new Promise((ok, fail) =>
    dnsLookup(host, { all: true }, (err, addresses) => (err ? fail(err) : ok(addresses))),
  )
}
