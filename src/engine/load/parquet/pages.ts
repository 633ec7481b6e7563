// A flat column chunk's pages decoded one at a time and handed to a sink with their definition
// levels. hyparquet's own read assembles every page of an OPTIONAL column value by value into a
// growing JS array (its assembleLists), which took a third of a 1M-row load; for a flat column the
// definition levels alone say which rows are NULL, so the pages go straight to the engine's
// builders instead. hyparquet still parses page headers and decodes every encoding (its
// internals, reached by file URL: tap's TypeScript loader cannot resolve the package's
// "./src/*.js" export pattern, Node can).
//
// Compression: ZSTD, GZIP and BROTLI through node:zlib (native; zstd from Node 22.15), the rest
// (and ZSTD on an older Node) through hyparquet and hyparquet-compressors (JavaScript).

import * as zlib from 'node:zlib'
import type { CompressionCodec, Compressors, DataReader, DecodedArray, PageHeader } from 'hyparquet'
import type { ColumnDecoder } from 'hyparquet/src/types.js'

type Column = typeof import('hyparquet/src/column.js')
type DataPage = typeof import('hyparquet/src/datapage.js')
type Plain = typeof import('hyparquet/src/plain.js')
type Convert = typeof import('hyparquet/src/convert.js')

interface Internals {
  parquetHeader: Column['parquetHeader']
  readDataPage: DataPage['readDataPage']
  readDataPageV2: DataPage['readDataPageV2']
  decompressPage: DataPage['decompressPage']
  readPlain: Plain['readPlain']
  convert: Convert['convert']
  convertWithDictionary: Convert['convertWithDictionary']
  defaultParsers: Convert['DEFAULT_PARSERS']
  compressors: Compressors
}

let loaded: Promise<Internals> | undefined

async function load(): Promise<Internals> {
  const base = import.meta.resolve('hyparquet')
  const at = <T>(file: string) => import(new URL(file, base).href) as Promise<T>
  const [column, datapage, plain, convert, js] = await Promise.all([
    at<Column>('./column.js'),
    at<DataPage>('./datapage.js'),
    at<Plain>('./plain.js'),
    at<Convert>('./convert.js'),
    import('hyparquet-compressors'),
  ])
  const native = zlib as typeof zlib & { zstdDecompressSync?: (b: Uint8Array) => Buffer }
  const compressors: Compressors = {
    ...js.compressors,
    GZIP: (input) => zlib.gunzipSync(input),
    BROTLI: (input) => zlib.brotliDecompressSync(input),
    ...(native.zstdDecompressSync ? { ZSTD: (input: Uint8Array) => native.zstdDecompressSync!(input) } : {}),
  }
  // hyparquet's own Snappy decoder: no wasm to start for a file that may not use it
  delete compressors.SNAPPY
  return {
    parquetHeader: column.parquetHeader,
    readDataPage: datapage.readDataPage,
    readDataPageV2: datapage.readDataPageV2,
    decompressPage: datapage.decompressPage,
    readPlain: plain.readPlain,
    convert: convert.convert,
    convertWithDictionary: convert.convertWithDictionary,
    defaultParsers: convert.DEFAULT_PARSERS,
    compressors,
  }
}

export function parquetInternals(): Promise<Internals> {
  loaded ??= load()
  return loaded
}

/** Where a page's rows go: `values` hold the non-NULL ones; `levels` (empty: none NULL) say which. */
export interface PageSink {
  page(values: DecodedArray, levels: number[], rows: number): void
}

/**
 * Decodes the pages of one flat column chunk (`bytes`: the chunk from its first page) into `sink`
 * until `rows` rows have been given. `decoder.element` decides how values arrive: without
 * annotations, as the physical type stores them.
 */
export function readChunkPages(
  internals: Internals,
  bytes: Uint8Array,
  decoder: ColumnDecoder,
  maxDefinitionLevel: number,
  rows: number,
  sink: PageSink,
): void {
  const { parquetHeader, readDataPage, readDataPageV2, decompressPage, readPlain, convert, convertWithDictionary } =
    internals
  const reader: DataReader = { view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), offset: 0 }
  const codec: CompressionCodec = decoder.codec
  let dictionary: DecodedArray | undefined
  let given = 0
  while (given < rows && reader.offset < bytes.length - 1) {
    const header: PageHeader = parquetHeader(reader)
    const compressed = bytes.subarray(reader.offset, reader.offset + header.compressed_page_size)
    reader.offset += header.compressed_page_size
    if (compressed.length !== header.compressed_page_size) throw new Error('parquet page runs past its column chunk')
    const uncompressed = Number(header.uncompressed_page_size)
    if (header.type === 'DICTIONARY_PAGE') {
      const page = decompressPage(compressed, uncompressed, codec, decoder.compressors)
      const view = { view: new DataView(page.buffer, page.byteOffset, page.byteLength), offset: 0 }
      const entries = header.dictionary_page_header!.num_values
      dictionary = convert(readPlain(view, decoder.type, entries, decoder.element.type_length), decoder)
    } else if (header.type === 'DATA_PAGE') {
      const daph = header.data_page_header!
      const page = decompressPage(compressed, uncompressed, codec, decoder.compressors)
      const { definitionLevels, dataPage } = readDataPage(page, daph, decoder)
      const values = convertWithDictionary(dataPage, dictionary, daph.encoding, decoder)
      given += put(sink, values, definitionLevels ?? [], daph.num_values, maxDefinitionLevel, rows - given)
    } else if (header.type === 'DATA_PAGE_V2') {
      const daph = header.data_page_header_v2!
      const { definitionLevels, dataPage } = readDataPageV2(compressed, header, decoder)
      const values = convertWithDictionary(dataPage, dictionary, daph.encoding, decoder)
      given += put(sink, values, definitionLevels ?? [], daph.num_values, maxDefinitionLevel, rows - given)
    }
    // index pages carry nothing to read
  }
  if (given < rows) throw new Error(`parquet column chunk ends after ${given} of ${rows} rows`)
}

function put(
  sink: PageSink,
  values: DecodedArray,
  levels: number[],
  count: number,
  maxDefinitionLevel: number,
  room: number,
): number {
  if (levels.length > 0 && levels.length !== count) throw new Error('parquet page: definition levels do not cover it')
  // with no level below the maximum, hyparquet returns no levels: every value is present
  const rows = Math.min(count, room)
  if (levels.length === 0 || maxDefinitionLevel === 0) {
    if (values.length < rows) throw new Error('parquet page holds fewer values than rows')
    sink.page(values, [], rows)
  } else {
    sink.page(values, rows < count ? levels.slice(0, rows) : levels, rows)
  }
  return rows
}
