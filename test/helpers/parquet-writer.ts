// hyparquet-writer for tests. Its modules import hyparquet's internals through the package's
// "./src/*.js" export pattern, which tap's TypeScript loader (a ts-node fork) cannot resolve, so
// the writer is bundled with esbuild into one module (in the test's temporary folder) and loaded
// from there.

import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { build } from 'esbuild'

type WriteBuffer = (options: {
  columnData: { name: string; data: unknown[] }[]
  schema?: Record<string, unknown>[]
  rowGroupSize?: number
  statistics?: boolean
}) => ArrayBuffer

let loaded: Promise<WriteBuffer> | undefined

export function parquetWriter(): Promise<WriteBuffer> {
  loaded ??= (async () => {
    const dir = await mkdtemp(join(tmpdir(), 'concord-parquet-writer-'))
    const outfile = join(dir, 'writer.mjs')
    await build({
      stdin: { contents: "export { parquetWriteBuffer } from 'hyparquet-writer'", resolveDir: process.cwd() },
      bundle: true,
      format: 'esm',
      platform: 'node',
      outfile,
      logLevel: 'silent',
    })
    const mod = (await import(pathToFileURL(outfile).href)) as { parquetWriteBuffer: WriteBuffer }
    return mod.parquetWriteBuffer
  })()
  return loaded
}

/** A Parquet file of `columns` with the given schema (root added), `rowGroupSize` rows per group. */
export async function parquetFile(
  columns: { name: string; data: unknown[] }[],
  schema: Record<string, unknown>[],
  rowGroupSize?: number,
): Promise<Buffer> {
  const write = await parquetWriter()
  return Buffer.from(
    write({ columnData: columns, schema: [{ name: 'root', num_children: schema.length }, ...schema], rowGroupSize }),
  )
}
