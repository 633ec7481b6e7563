// Columnar storage. Layouts follow Apache Arrow (validity per row, Utf8 as offsets + bytes,
// Date32 as days since the epoch) so a table converts to an Arrow table without copying the
// bulk of its data (see arrow.ts). Numbers live in typed arrays so hot loops never touch objects.
//
// Exactness: a decimal column keeps scaled integer units in a Float64Array (214.16 at scale 2
// is 21416). Every integer below 2^53 is exact in a float64, and loaders refuse (keep as string)
// values that would not fit, so decimal arithmetic on units never drifts.

export interface StringColumn {
  type: 'string'
  length: number
  /** 1 = value present, 0 = NULL; null when the column has no NULLs. */
  valid: Uint8Array | null
  /** length + 1 offsets into `data` (UTF-8 bytes), as in Arrow's Utf8 layout. */
  offsets: Int32Array
  data: Uint8Array
}

export interface NumericColumn {
  type: 'integer' | 'float' | 'timestamp'
  length: number
  valid: Uint8Array | null
  /** integer: the value; float: the value; timestamp: milliseconds since the epoch, UTC. */
  values: Float64Array
}

export interface DecimalColumn {
  type: 'decimal'
  length: number
  valid: Uint8Array | null
  /** Scaled integer units: value = units / 10^scale. */
  values: Float64Array
  scale: number
}

export interface DateColumn {
  type: 'date'
  length: number
  valid: Uint8Array | null
  /** Days since 1970-01-01. */
  values: Int32Array
}

export interface BooleanColumn {
  type: 'boolean'
  length: number
  valid: Uint8Array | null
  values: Uint8Array
}

export type Column = StringColumn | NumericColumn | DecimalColumn | DateColumn | BooleanColumn

export function isNull(col: Column, row: number): boolean {
  return col.valid !== null && col.valid[row] === 0
}

const utf8 = new TextDecoder()
export function stringAt(col: StringColumn, row: number): string {
  return utf8.decode(col.data.subarray(col.offsets[row], col.offsets[row + 1]))
}

/** Keeps only the rows listed in `rows` (in that order). */
export function takeColumn(col: Column, rows: Int32Array): Column {
  const n = rows.length
  let valid: Uint8Array | null = null
  if (col.valid) {
    valid = new Uint8Array(n)
    for (let i = 0; i < n; i++) valid[i] = col.valid[rows[i]]
  }
  if (col.type === 'string') {
    const offsets = new Int32Array(n + 1)
    let size = 0
    for (let i = 0; i < n; i++) size += col.offsets[rows[i] + 1] - col.offsets[rows[i]]
    const data = new Uint8Array(size)
    let at = 0
    for (let i = 0; i < n; i++) {
      const s = col.offsets[rows[i]]
      const e = col.offsets[rows[i] + 1]
      data.set(col.data.subarray(s, e), at)
      at += e - s
      offsets[i + 1] = at
    }
    return { type: 'string', length: n, valid, offsets, data }
  }
  const src = col.values
  const values = new (src.constructor as new (n: number) => typeof src)(n)
  for (let i = 0; i < n; i++) values[i] = src[rows[i]]
  return { ...col, length: n, valid, values } as Column
}
