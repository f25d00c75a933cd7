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
