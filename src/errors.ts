// Errors are values with codes at the boundaries: every error reply is
// `{ error: code, message, suggestion? }` with the HTTP status carried by the error.

export class ConcordError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status = 400,
    readonly suggestion?: string,
    /** Structured detail for the reply, e.g. the `issues` of an invalid recipe. */
    readonly details?: Record<string, unknown>,
  ) {
    super(message)
    this.name = 'ConcordError'
  }

  toJSON(): { error: string; message: string; suggestion?: string } & Record<string, unknown> {
    const body = { error: this.code, message: this.message, ...this.details }
    return this.suggestion === undefined ? body : { ...body, suggestion: this.suggestion }
  }
}

export function notFound(what: string, id: string, suggestion?: string): ConcordError {
  return new ConcordError(`${what}_not_found`, `no ${what} named "${id}"`, 404, suggestion)
}
