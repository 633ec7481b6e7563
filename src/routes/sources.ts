// /api/sources: thin routes over the sources service.

import { randomUUID } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { mkdir, rm } from 'node:fs/promises'
import { basename, extname, join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import '@fastify/multipart'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Readable } from 'node:stream'
import { RecordBatchStreamWriter } from 'apache-arrow'
import { Type } from 'typebox'
import { attributionOf } from '../audit/service.js'
import { ConcordError } from '../errors.js'
import { arrowBatches, arrowSchema } from '../engine/data/arrow.js'
import type { Table } from '../engine/data/table.js'
import { Alias, ScopeSet } from '../sources/schemas.js'
import { IdempotencyHeaders } from '../idempotency.js'
import type { ConnectorRegistry } from '../sources/registry.js'
import { scopeOwner } from '../sources/service.js'

const errors = { 400: Type.Ref('ErrorReply'), 404: Type.Ref('ErrorReply'), 502: Type.Ref('ErrorReply') }
const AliasParams = Type.Object({ alias: Type.String() })

/** Aborts when the client goes away before the reply is sent, so long loads stop early. */
function clientSignal(request: FastifyRequest, reply: FastifyReply): AbortSignal {
  const ac = new AbortController()
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) ac.abort(new ConcordError('client_closed', 'the client closed the request', 499))
  })
  request.raw.once('aborted', () => ac.abort())
  return ac.signal
}

const routes: FastifyPluginAsyncTypebox = async (app) => {
  const connectorTypes = app.connectors.types()
  const RegisterBody = Type.Object(
    {
      alias: Alias,
      type: Type.String({ description: `source type: ${connectorTypes.join(', ')}` }),
    },
    {
      additionalProperties: true,
      description:
        'The alias, the type, and the settings of that type: csv/json take `path` (inside the data folder); ' +
        'postgres takes `connection_string`, `table` and optionally `schema`. A CSV or JSON file can also be ' +
        'uploaded as multipart/form-data with fields `alias`, `type` (optional: from the file extension) and `file`.',
    },
  )

  app.post(
    '/api/sources',
    {
      schema: {
        tags: ['sources'],
        summary: 'Register a source',
        headers: IdempotencyHeaders,
        body: RegisterBody,
        response: { 201: Type.Ref('Source'), 409: Type.Ref('ErrorReply'), 413: Type.Ref('ErrorReply'), ...errors },
      },
      config: { role: 'admin', idempotent: true },
      // A multipart upload becomes a file in the workspace's upload folder and a `path` before validation.
      preValidation: async (request) => {
        if (request.isMultipart())
          request.body = (await receiveUpload(
            request,
            app.sources.uploadDir(request.principal.workspace),
            app.connectors,
          )) as typeof request.body
      },
      // Whatever refused it (validation, the connector, a duplicate alias), a refused upload leaves no file.
      onSend: async (request, reply) => {
        const uploaded = (request as { uploadedFile?: string }).uploadedFile
        if (uploaded && reply.statusCode !== 201) await rm(uploaded, { force: true })
      },
    },
    async (request, reply) => {
      const { alias, type, ...config } = request.body
      const source = await app.sources.register(
        request.principal.workspace,
        { alias, type, config },
        attributionOf(request),
      )
      return reply.code(201).send(source)
    },
  )

  app.get(
    '/api/sources',
    { schema: { tags: ['sources'], summary: 'List sources', response: { 200: Type.Ref('SourceList') } } },
    async (request) => ({ sources: await app.sources.list(request.principal.workspace) }),
  )

  app.get(
    '/api/sources/:alias',
    {
      schema: {
        tags: ['sources'],
        summary: 'A source and its columns with inferred types',
        params: AliasParams,
        response: { 200: Type.Ref('Source'), ...errors },
      },
    },
    async (request) => app.sources.get(request.principal.workspace, request.params.alias),
  )

  app.delete(
    '/api/sources/:alias',
    {
      schema: {
        tags: ['sources'],
        summary: 'Delete a source (and its uploaded file and scoped table)',
        params: AliasParams,
        response: { 204: Type.Null(), ...errors },
      },
      config: { role: 'admin' },
    },
    async (request, reply) => {
      await app.sources.remove(request.principal.workspace, request.params.alias, attributionOf(request))
      return reply.code(204).send(null)
    },
  )

  app.get(
    '/api/sources/:alias/preview',
    {
      schema: {
        tags: ['sources'],
        summary: 'The first rows of a source',
        params: AliasParams,
        querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 20 })) }),
        response: { 200: Type.Ref('PreviewReply'), ...errors },
      },
    },
    async (request, reply) =>
      app.sources.preview(
        request.principal.workspace,
        request.params.alias,
        request.query.limit ?? 20,
        clientSignal(request, reply),
      ),
  )

  app.post(
    '/api/sources/:alias/load-scoped',
    {
      schema: {
        tags: ['sources'],
        summary: 'Load the rows in scope into the engine (kept for later runs)',
        params: AliasParams,
        body: Type.Ref('LoadScopedBody'),
        response: { 200: Type.Ref('LoadScopedReply'), ...errors },
      },
    },
    async (request, reply) => {
      const body = request.body as { conditions?: []; limit?: number; preview?: number; scope_set?: string }
      return app.sources.loadScoped(
        request.principal.workspace,
        request.params.alias,
        body,
        clientSignal(request, reply),
        body.scope_set ? scopeOwner(body.scope_set) : '',
      )
    },
  )

  app.get(
    '/api/sources/:alias/scoped',
    {
      schema: {
        tags: ['sources'],
        summary:
          'The loaded scoped table as an Arrow IPC stream (application/vnd.apache.arrow.stream), for other tools',
        params: AliasParams,
        querystring: Type.Object({ scope_set: Type.Optional(ScopeSet) }),
        response: { 200: Type.String({ description: 'the Arrow IPC stream' }), ...errors },
      },
    },
    async (request, reply) => {
      const ws = request.principal.workspace
      const { alias } = request.params
      await app.sources.source(ws, alias) // 404 for an unknown source
      const scope_set = request.query.scope_set
      const loaded = app.sources.engine(ws, scope_set ? scopeOwner(scope_set) : '').get(alias)
      if (!loaded)
        throw new ConcordError(
          'scope_not_loaded',
          `no scoped table is loaded for "${alias}"${scope_set ? ` in scope set "${scope_set}"` : ''}`,
          409,
          `load one with POST /api/sources/${alias}/load-scoped`,
        )
      return reply
        .type('application/vnd.apache.arrow.stream')
        .header('content-disposition', `attachment; filename="${alias}-scoped.arrows"`)
        .send(arrowStream(loaded.table))
    },
  )
}

/**
 * A table as an Arrow IPC stream, a record batch at a time with a turn of the event loop between
 * batches. Each batch is made when it is written (strings, dates and floats as views of the
 * loaded arrays, data/arrow.ts), so a large scope is never converted whole on the event loop.
 */
function arrowStream(table: Table): Readable {
  const writer = new RecordBatchStreamWriter()
  const out = writer.toNodeStream()
  void (async () => {
    try {
      writer.reset(undefined, arrowSchema(table))
      for (const batch of arrowBatches(table)) {
        writer.write(batch)
        await new Promise((next) => setImmediate(next))
      }
      writer.finish()
    } catch (err) {
      out.destroy(err as Error)
    }
  })()
  return out as unknown as Readable
}

/** Streams the multipart `file` into the upload folder; returns the registration body. */
async function receiveUpload(
  request: FastifyRequest,
  uploadDir: string,
  connectors: ConnectorRegistry,
): Promise<Record<string, unknown>> {
  const fields: Record<string, string> = {}
  let saved: string | undefined
  let filename = ''
  await mkdir(uploadDir, { recursive: true })
  try {
    for await (const part of request.parts()) {
      if (part.type === 'file') {
        if (saved) throw new ConcordError('invalid_upload', 'upload one file per source', 400)
        filename = part.filename
        const ext = extname(filename).toLowerCase()
        saved = join(uploadDir, `${randomUUID()}${ext}`)
        await pipeline(part.file, createWriteStream(saved))
        if (part.file.truncated) {
          throw new ConcordError(
            'payload_too_large',
            `the file is larger than the upload limit`,
            413,
            'raise MAX_UPLOAD_BYTES or register the file by path',
          )
        }
      } else {
        fields[part.fieldname] = String(part.value)
      }
    }
  } catch (err) {
    if (saved) await rm(saved, { force: true })
    throw err
  }
  if (!saved)
    throw new ConcordError(
      'invalid_upload',
      'the multipart request has no file part',
      400,
      'send the file in a part named "file"',
    )
  ;(request as { uploadedFile?: string }).uploadedFile = saved
  const ext = extname(filename).toLowerCase().replace('.', '')
  // the connector that takes files with this extension (connectors declare theirs)
  const type = fields.type ?? connectors.typeForExtension(ext) ?? ext
  return { alias: fields.alias, type, path: join('uploads', basename(uploadDir), basename(saved)) }
}

export default routes
