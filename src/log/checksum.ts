/**
 * xxhash64 (xxhash-wasm) for frames, segment headers and snapshots.
 *
 * The WebAssembly module is instantiated once, at module load (top-level
 * await), rather than in SegmentedLog.open: the offline reader
 * (`openLogReader`) has a synchronous API and needs checksums too, and every
 * importer of the log pays the ~1 ms instantiation exactly once either way.
 */
import xxhash from 'xxhash-wasm';

const api = await xxhash();

/** xxhash64, seed 0, of the bytes of `input` (any view: byteOffset is honoured). */
export function checksum64(input: Uint8Array): bigint {
  return api.h64Raw(input);
}

/** xxhash64 of the concatenation of `parts`, without copying them together. */
export function checksum64Parts(parts: readonly Uint8Array[]): bigint {
  const hasher = api.create64();
  for (const part of parts) hasher.update(part);
  return hasher.digest();
}
