// Imported, not the global: in Node 20 the global `Buffer` is a getter, called on every use.
import { Buffer } from 'node:buffer';

/**
 * A body framed from a socket read is a view into that read's chunk (up to
 * 64 KiB, shared by every packet of the read). Whatever keeps a body for long
 * (the recent-message cache, a retained value) keeps a copy of its own
 * instead, or one small retained value would hold the whole chunk alive.
 * Buffers that own their memory, or share one small pool slab, are kept.
 */
export function pinsLargerBuffer(bytes: Uint8Array): boolean {
  return bytes.buffer.byteLength > Math.max(Buffer.poolSize, 2 * bytes.byteLength);
}

export function unpinned(bytes: Uint8Array): Uint8Array {
  return pinsLargerBuffer(bytes) ? Buffer.from(bytes) : bytes;
}

/**
 * A copy in memory of its own (a slice of Buffer's pool when small): for bytes whose buffer the
 * caller reuses (a socket read that was only lent). allocUnsafe + set, not Buffer.from: the same
 * copy without Buffer.from's checks of what it was given.
 */
export function copyOfBytes(bytes: Uint8Array): Buffer {
  // `length` is read inline, `byteLength` through a generic load and a call (Node 20's V8).
  const copy = Buffer.allocUnsafe(bytes.length);
  copy.set(bytes);
  return copy;
}
