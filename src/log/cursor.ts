/**
 * SegmentCursor walks the frames of one segment file with big synchronous
 * reads (1 MiB chunks, grown for a bigger frame), verifying each frame's
 * length, checksum and LSN just after it is read. No per-record syscalls and
 * no per-record allocation: the current frame's fields live on the cursor and
 * its bytes stay in `buffer` at `frameStart` until the next call to next().
 *
 * It only reports; what a bad frame means (torn tail or corruption) is
 * decided by recovery.ts. Zero-filled space after the last frame is the end
 * of the segment, not a bad frame (see zero-tail.ts).
 */
import { nextChunkOwner } from './checksum.js';
import type { LogFileSystem } from './file-system.js';
import {
  chunkFrameChecksumMatches, frameBytesMin, frameKindIn, frameLength, frameLengthIn, frameLsn, frameLsnIn, frameTimestampIn, isPlausibleFrameLength, type Lsn,
} from './record.js';
import { nonZeroEnd } from './zero-tail.js';

export const cursorFrame = 0;
export const cursorEnd = 1;
export const cursorBad = 2;
export type CursorStatus = typeof cursorFrame | typeof cursorEnd | typeof cursorBad;

/** The first frame that failed its checks. */
export interface BadFrame {
  /** File offset where the bad frame starts: everything before it is valid. */
  readonly offset: number;
  /** The LSN the frame should have carried. */
  readonly lsn: Lsn;
  readonly reason: string;
  /** The frame's length field when plausible and inside the file, so a caller can look past it. */
  readonly length: number | undefined;
  /** The checksum matched but the LSN did not: a whole, intact frame in the wrong place. */
  readonly checksumValid: boolean;
}

export const readChunkBytes = 1024 * 1024;
const lengthPrefixBytes = 12;

export class SegmentCursor {
  buffer: Buffer;
  /** `buffer` as a plain Uint8Array and a DataView, for the body decoder (see body-decoder.ts). */
  bytes: Uint8Array;
  view: DataView;
  /** Index in `buffer` of the current frame. */
  frameStart = 0;
  /** File offset of the current frame. */
  offset = 0;
  length = 0;
  lsn: Lsn = 0;
  timestamp = 0;
  kind = 0;
  bad: BadFrame | undefined = undefined;

  /** Bumped whenever `buffer`'s contents change, so the checksum can tell a copy of them is stale. */
  private fills = 0;
  private readonly chunkOwner = nextChunkOwner();
  private bufferFileOffset = 0;
  private bufferBytes = 0;

  constructor(
    private readonly fileSystem: LogFileSystem,
    private readonly fd: number,
    /** File offset of the next frame. */
    private position: number,
    /** Frames end here (the file size, or the bytes written when the scan started); moved back to a zero tail's start. */
    private end: number,
    private expectedLsn: Lsn,
    chunkBytes = readChunkBytes,
    /** A probe (isValidFrameAt) asks about one frame only, not where the segment ends. */
    private readonly zeroTailIsEnd = true,
  ) {
    // No bigger than the range: a small segment (or its end) gets a small buffer, grown for a bigger frame.
    this.buffer = Buffer.allocUnsafe(Math.max(Math.min(chunkBytes, end - position), lengthPrefixBytes));
    this.bytes = new Uint8Array(this.buffer.buffer, this.buffer.byteOffset, this.buffer.length);
    this.view = new DataView(this.buffer.buffer, this.buffer.byteOffset, this.buffer.length);
  }

  /** File offset just past the last valid frame returned so far. */
  get validEnd(): number {
    return this.bad === undefined ? this.position : this.bad.offset;
  }

  /** The LSN the next frame must carry. */
  get nextLsn(): Lsn {
    return this.expectedLsn;
  }

  next(): CursorStatus {
    const position = this.position;
    const remaining = this.end - position;
    if (this.bad !== undefined || remaining <= 0) return this.bad === undefined ? cursorEnd : cursorBad;
    if (remaining < lengthPrefixBytes) return this.fail(`${remaining} trailing bytes, too few for a frame header`, undefined, false);
    let at = this.ensure(position, lengthPrefixBytes);
    if (at < 0) return this.fail('the file ended before the frame header', undefined, false);
    const length = frameLengthIn(this.view, at);
    if (!isPlausibleFrameLength(length)) return this.fail(`implausible frame length ${length}`, undefined, false);
    if (length > remaining) return this.fail(`a frame of ${length} bytes runs past the end of the segment (${remaining} bytes left)`, undefined, false);
    at = this.ensure(position, length);
    if (at < 0) return this.fail('the file ended inside the frame', undefined, false);
    if (!chunkFrameChecksumMatches(this.chunkOwner, this.fills, this.bytes, this.bufferBytes, at, length)) return this.fail('checksum mismatch', length, false);
    const lsn = frameLsnIn(this.view, at);
    if (lsn !== this.expectedLsn) return this.fail(`the frame holds LSN ${lsn} where ${this.expectedLsn} was expected`, length, true);
    this.frameStart = at;
    this.offset = position;
    this.length = length;
    this.lsn = lsn;
    this.timestamp = frameTimestampIn(this.view, at);
    this.kind = frameKindIn(this.view, at);
    this.position = position + length;
    this.expectedLsn = lsn + 1;
    return cursorFrame;
  }

  private fail(reason: string, length: number | undefined, checksumValid: boolean): CursorStatus {
    // Only zeros from here on: zero-filled space after the last frame (zero-tail.ts), the segment's end.
    if (this.zeroTailIsEnd && nonZeroEnd(this.fileSystem, this.fd, this.position, this.end) === this.position) {
      this.end = this.position;
      return cursorEnd;
    }
    this.bad = { offset: this.position, lsn: this.expectedLsn, reason, length, checksumValid };
    return cursorBad;
  }

  /**
   * Makes `bytes` bytes from file offset `position` available in `buffer` and
   * returns their index, or -1 when the file is shorter than promised (it was
   * truncated under a reader). Keeps the unread tail of the chunk and refills
   * behind it, so a frame straddling two chunks costs one copy, not a re-read.
   */
  private ensure(position: number, bytes: number): number {
    const start = position - this.bufferFileOffset;
    if (start >= 0 && start + bytes <= this.bufferBytes) return start;
    const keep = start >= 0 && start < this.bufferBytes ? this.bufferBytes - start : 0;
    this.fills += 1;
    if (bytes > this.buffer.length) {
      const bigger = Buffer.allocUnsafe(Math.max(bytes, this.buffer.length * 2));
      this.buffer.copy(bigger, 0, start, start + keep);
      this.buffer = bigger;
      this.bytes = new Uint8Array(bigger.buffer, bigger.byteOffset, bigger.length);
      this.view = new DataView(bigger.buffer, bigger.byteOffset, bigger.length);
    } else if (keep > 0) {
      this.buffer.copyWithin(0, start, start + keep);
    }
    this.bufferFileOffset = position;
    this.bufferBytes = keep;
    const wanted = Math.min(this.buffer.length, this.end - position);
    while (this.bufferBytes < wanted) {
      const read = this.fileSystem.readSync(this.fd, this.buffer, this.bufferBytes, wanted - this.bufferBytes, position + this.bufferBytes);
      if (read === 0) break;
      this.bufferBytes += read;
    }
    return this.bufferBytes >= bytes ? 0 : -1;
  }
}

/** True when a whole, valid frame carrying `expectedLsn` starts at `offset`. */
export function isValidFrameAt(fileSystem: LogFileSystem, fd: number, offset: number, end: number, expectedLsn: Lsn): boolean {
  const probe = new SegmentCursor(fileSystem, fd, offset, end, expectedLsn, 64 * 1024, false);
  return probe.next() === cursorFrame;
}

/**
 * Searches [from, end) byte by byte for a valid frame with an LSN after
 * `afterLsn`: evidence that a bad frame is damage in the middle of the log
 * rather than its torn end, even when the bad frame's own length field is the
 * damaged part. Runs only when recovery or verify met a bad frame. The cheap
 * tests (plausible length, LSN in the range the remaining bytes could hold)
 * reject almost every offset before a checksum is computed. Frames may run up
 * to `end`; only offsets before `startsBefore` are tried (a zero-filled end
 * holds no frame start).
 */
export function findValidFrameAfter(fileSystem: LogFileSystem, fd: number, from: number, end: number, afterLsn: Lsn, startsBefore = end): { offset: number; lsn: Lsn } | undefined {
  const probeBytes = 20;
  const lsnMax = afterLsn + Math.ceil((end - from) / frameBytesMin);
  const chunk = Buffer.allocUnsafe(readChunkBytes);
  for (let chunkStart = from; chunkStart + probeBytes <= end && chunkStart < startsBefore; chunkStart += chunk.length - probeBytes) {
    const bytes = fileSystem.readSync(fd, chunk, 0, Math.min(chunk.length, end - chunkStart), chunkStart);
    for (let at = 0; at + probeBytes <= bytes && chunkStart + at < startsBefore; at++) {
      const lsn = frameLsn(chunk, at);
      if (lsn <= afterLsn || lsn > lsnMax || !isPlausibleFrameLength(frameLength(chunk, at))) continue;
      if (isValidFrameAt(fileSystem, fd, chunkStart + at, end, lsn)) return { offset: chunkStart + at, lsn };
    }
    if (bytes < chunk.length) break;
  }
  return undefined;
}
