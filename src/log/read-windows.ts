/**
 * Read-ahead for reads by LSN (read-record.ts): a few reused buffers, each
 * holding a stretch of one segment file, so that consumers draining a backlog
 * in log order fetch many frames with one positioned read instead of one read
 * per message (a pread costs far more than copying a kilobyte from the page
 * cache).
 *
 * Sizes adapt as the kernel's readahead does: a read that no window holds and
 * that does not go on from a window's stretch reads just its frame (at least
 * `windowBytesMin`), so scattered reads cost what they cost without windows;
 * a read that goes on from a window's stretch, starting less than its length
 * past its end (the next messages of a queue being drained), refills that
 * window twice as large, up to `windowBytesMax`.
 * Queues filled together have their messages interleaved in the log: one
 * window then serves every queue reading near it.
 *
 * Invariant: a window holds only bytes of frames that were written when it
 * was filled (the caller passes where the segment's indexed frames end), and
 * written frames never change, so a window never goes stale. Every frame
 * taken from a window is still verified (checksum, length, LSN) by the caller.
 */
import type { LogFileSystem } from './file-system.js';
import { readUpTo } from './frame-offsets.js';

export const windowBytesMin = 8 * 1024;
export const windowBytesMax = 256 * 1024;
/** Streams read at the same time before windows are taken from one another (least recently used first). */
export const windowsMax = 8;

/** A stretch of a segment file in memory: `bytes[i]` is the file's byte `start + i`, for i < `filled`. */
export interface ReadWindow {
  readonly buffer: Buffer;
  readonly bytes: Uint8Array;
  readonly view: DataView;
  file: string;
  start: number;
  filled: number;
  /** What the next refill of this window reads when a read goes on from its stretch: doubles up to windowBytesMax. */
  nextBytes: number;
  used: number;
}

export class ReadWindows {
  private readonly windows: ReadWindow[] = [];
  private uses = 0;

  constructor(private readonly fileSystem: LogFileSystem) {}

  /**
   * A window holding the `length` bytes at `offset` of `file` (open as `fd`), filling one if none does;
   * undefined for a frame larger than a window. `end`: where the segment's written frames end. Throws what
   * the file system throws; a window that came back short holds what was read.
   */
  holding(file: string, fd: number, offset: number, length: number, end: number): ReadWindow | undefined {
    if (length > windowBytesMax) return undefined;
    let continued: ReadWindow | undefined;
    for (const window of this.windows) {
      if (window.file !== file || offset < window.start) continue;
      const windowEnd = window.start + window.filled;
      if (offset + length <= windowEnd) {
        window.used = ++this.uses;
        return window;
      }
      // The read goes on from this window's stretch (the next messages of a stream read in log order): it starts
      // less than a window's length past its end.
      if (offset < windowEnd + window.filled && (continued === undefined || window.start > continued.start)) continued = window;
    }
    const window = continued ?? this.unusedWindow();
    const wanted = Math.max(length, Math.min(continued === undefined ? windowBytesMin : window.nextBytes, end - offset));
    window.file = file;
    window.start = offset;
    window.filled = 0;
    window.used = ++this.uses;
    window.nextBytes = continued === undefined ? windowBytesMin * 2 : Math.min(windowBytesMax, window.nextBytes * 2);
    window.filled = readUpTo(this.fileSystem, fd, window.buffer, wanted, offset);
    return window;
  }

  /** Drops the windows of a file (retention is about to remove it). */
  forget(file: string): void {
    for (const window of this.windows) {
      if (window.file !== file) continue;
      window.file = '';
      window.filled = 0;
    }
  }

  /** A window nobody holds yet, or the least recently used one. */
  private unusedWindow(): ReadWindow {
    if (this.windows.length < windowsMax) {
      const buffer = Buffer.allocUnsafe(windowBytesMax);
      const window: ReadWindow = {
        buffer, bytes: new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.length), view: new DataView(buffer.buffer, buffer.byteOffset, buffer.length),
        file: '', start: 0, filled: 0, nextBytes: windowBytesMin, used: 0,
      };
      this.windows.push(window);
      return window;
    }
    let oldest = this.windows[0]!;
    for (const window of this.windows) if (window.used < oldest.used) oldest = window;
    return oldest;
  }
}
