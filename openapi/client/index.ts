// A typed client for Concord's REST API, generated from openapi/openapi.json
// (`npm run openapi` regenerates schema.d.ts) and driven by openapi-fetch.
//
//   const concord = createConcordClient('http://127.0.0.1:3000')
//   const { data, error } = await concord.GET('/api/sources/{alias}', { params: { path: { alias: 'bank' } } })

import createClient, { type Client, type ClientOptions } from 'openapi-fetch'
import type { components, paths } from './schema.js'

export type ConcordClient = Client<paths>
export type Schemas = components['schemas']

export function createConcordClient(baseUrl: string, options: Omit<ClientOptions, 'baseUrl'> = {}): ConcordClient {
  return createClient<paths>({ baseUrl, ...options })
}
