// Typed arrays in shared memory. Another thread can read a SharedArrayBuffer without a copy and
// without the array leaving this one, so columns and key hashes are allocated here when a helper
// thread may read them (partition-helper.ts). Reads and writes cost the same as in an ArrayBuffer.

// Large ones are sized for huge pages (alloc.ts).

import { largeSharedArray } from './alloc.js'

type TypedConstructor<T> = {
  new (buffer: SharedArrayBuffer, byteOffset: number, length: number): T
  BYTES_PER_ELEMENT: number
}

export function sharedArray<T extends ArrayBufferView>(ctor: TypedConstructor<T>, length: number): T {
  return largeSharedArray(ctor, length)
}

export function isShared(a: ArrayBufferView): boolean {
  return a.buffer instanceof SharedArrayBuffer
}

/** A shared array of the same type holding the first `length` values of `a` (zeros after). */
export function sharedCopy<T extends Int32Array | Uint32Array | Float64Array | Uint8Array>(a: T, length: number): T {
  const out = sharedArray(a.constructor as unknown as TypedConstructor<T>, length)
  out.set(a.subarray(0, Math.min(a.length, length)))
  return out
}
