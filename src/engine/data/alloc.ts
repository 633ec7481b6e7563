// Large typed arrays sized so their memory can be huge pages. A run's first write to each 4 KiB
// page of fresh memory is a page fault, about 11 µs on the 2-core benchmark VM, and a 1M × 1M
// `concord reconcile` wrote ~200 MB of fresh arrays: ~50,000 faults, a sixth of its CPU. glibc
// (with GLIBC_TUNABLES=glibc.malloc.hugetlb=1, which the command and `npm start` set) asks for
// transparent huge pages on the block it maps for a large array, but the kernel only backs
// 2 MiB-aligned stretches of it, and it aligns an anonymous mapping only when its length is a
// multiple of 2 MiB. A block of 4,000,000 bytes (a million Int32) is neither, so about half of
// it faulted 4 KiB at a time; asked for a multiple of 2 MiB less glibc's header, the block is
// mapped aligned and faults once per 2 MiB: fifty such arrays written page by page took 557 ms
// at 4,000,000 bytes, 157 ms at 4 MiB − 64 (scratch test, node 24, perf stat: 28,000 faults
// against 3,200). The array is a view of its first `length` values; the room after it is never
// written, but the last huge page is whole once touched, so a block is rounded up only when that
// costs at most an eighth more (peak RSS is held to DuckDB's: bench/README.md).

type Constructor<B, T> = { new (buffer: B, byteOffset: number, length: number): T; BYTES_PER_ELEMENT: number }

const HUGE_PAGE = 2 * 1024 * 1024
/** What glibc adds to a block it maps (its chunk header, rounded up), with room to spare. */
const MALLOC_OVERHEAD = 64

/** The bytes to allocate for an array of `bytes`: rounded up to whole huge pages when that costs little. */
export function roomFor(bytes: number): number {
  if (bytes < HUGE_PAGE / 2) return bytes
  const room = Math.ceil((bytes + MALLOC_OVERHEAD) / HUGE_PAGE) * HUGE_PAGE - MALLOC_OVERHEAD
  return room - bytes <= bytes / 8 ? room : bytes
}

/** A zeroed typed array of `length` values in ordinary memory, at the start of a buffer sized by roomFor. */
export function largeArray<T>(ctor: Constructor<ArrayBuffer, T>, length: number): T {
  return new ctor(new ArrayBuffer(roomFor(length * ctor.BYTES_PER_ELEMENT)), 0, length)
}

/** The same in shared memory (shared.ts). */
export function largeSharedArray<T>(ctor: Constructor<SharedArrayBuffer, T>, length: number): T {
  return new ctor(new SharedArrayBuffer(roomFor(length * ctor.BYTES_PER_ELEMENT)), 0, length)
}
