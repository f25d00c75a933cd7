/**
 * The zero tail: space after a segment's last frame that the writer filled
 * with zeros ahead of time (see zero-fill.ts), so that an fdatasync of new
 * frames is a pure data flush instead of also committing a new file size.
 *
 * A frame never starts with a zero length, so frames end where the bytes turn
 * to zero — provided every byte from there to the end of the file is zero.
 * Anything else after the last frame is a torn tail or damage, judged by
 * recovery.ts as before.
 */
import type { LogFileSystem } from './file-system.js';

const chunkBytes = 1024 * 1024;
let zeroChunk: Buffer | undefined;

/**
 * The offset just past the last non-zero byte in [from, end) of the file, or
 * `from` when every byte there is zero (or the file is shorter). Reads the
 * range in 1 MiB chunks; the zero-filled lead kept ahead of the writer is a
 * few MiB at most.
 */
export function nonZeroEnd(fileSystem: LogFileSystem, fd: number, from: number, end: number): number {
  zeroChunk ??= Buffer.alloc(chunkBytes);
  const chunk = Buffer.allocUnsafe(Math.max(0, Math.min(chunkBytes, end - from)));
  let found = from;
  for (let position = from; position < end; ) {
    const bytes = fileSystem.readSync(fd, chunk, 0, Math.min(chunk.length, end - position), position);
    if (bytes === 0) break;
    if (!chunk.subarray(0, bytes).equals(zeroChunk.subarray(0, bytes))) {
      let last = bytes - 1;
      while (chunk[last] === 0) last -= 1;
      found = position + last + 1;
    }
    position += bytes;
  }
  return found;
}
