/**
 * Reading records forward across segments, for the live log and the offline
 * reader alike. The caller fixes the segment list and each segment's byte
 * limit when the read starts, so a read sees exactly the records written by
 * then, however long the caller takes to iterate.
 *
 * Start position: `lsn` (clamped to the oldest retained record), then, if
 * `time` is given, the first record at or after that LSN whose timestamp is
 * >= time; every record after it follows, whatever its timestamp (wall clocks
 * can step back, and replay order is LSN order).
 */
import { join } from 'node:path';
import { cursorBad, cursorEnd, SegmentCursor } from './cursor.js';
import { CorruptRecordError, isErrnoCode, LogError } from './errors.js';
import type { LogFileSystem } from './file-system.js';
import type { FrameOffsets } from './frame-offsets.js';
import { decodeFrameBody, type LogRecord, type Lsn } from './record.js';
import { segmentHeaderBytes } from './segment.js';

export interface ReadFrom {
  readonly lsn?: Lsn;
  readonly time?: number;
}

export interface ReadableSegment {
  readonly file: string;
  readonly firstLsn: Lsn;
  readonly lastLsn: Lsn;
  /** Frames end here: the bytes written (live log) or verified (offline) when the read started. */
  readonly bytes: number;
  /** Lets a read by time skip a segment without scanning it, when known. */
  readonly maxTimestamp: number | undefined;
  /** Where each frame starts, when known (frame-offsets.ts): a read from an LSN inside the segment starts there. */
  readonly offsets?: FrameOffsets | undefined;
}

export function checkReadFrom(from: ReadFrom): void {
  if (from.lsn !== undefined && !(Number.isSafeInteger(from.lsn) && from.lsn >= 0)) {
    throw new LogError('EINVALIDARGUMENT', `read from LSN must be a non-negative integer, got ${String(from.lsn)}`);
  }
  if (from.time !== undefined && (typeof from.time !== 'number' || Number.isNaN(from.time))) {
    throw new LogError('EINVALIDARGUMENT', `read from time must be epoch milliseconds, got ${String(from.time)}`);
  }
}

/**
 * The records of `segments` from `from` on, lazily: a segment is opened when
 * the read reaches it and closed when the read leaves it, ends early
 * (`return()`, e.g. a `break` out of for-of) or fails.
 */
export function readRecords(fileSystem: LogFileSystem, dir: string, segments: readonly ReadableSegment[], from: ReadFrom): IterableIterator<LogRecord> {
  return new RecordIterator(fileSystem, dir, segments, from);
}

/**
 * A hand-written iterator rather than a generator: replay calls next() once a
 * record, and a generator's resume costs as much as verifying the record's
 * checksum.
 */
class RecordIterator implements IterableIterator<LogRecord> {
  private readonly startLsn: Lsn;
  private readonly time: number;
  private timeReached: boolean;
  private segmentIndex = 0;
  private segment: ReadableSegment | undefined = undefined;
  private cursor: SegmentCursor | undefined = undefined;
  private fd = -1;
  private finished = false;

  constructor(private readonly fileSystem: LogFileSystem, private readonly dir: string, private readonly segments: readonly ReadableSegment[], from: ReadFrom) {
    this.startLsn = from.lsn ?? 0;
    this.time = from.time ?? -Infinity;
    this.timeReached = from.time === undefined;
  }

  [Symbol.iterator](): this {
    return this;
  }

  next(): IteratorResult<LogRecord> {
    if (this.finished) return { done: true, value: undefined };
    try {
      const record = this.nextRecord();
      if (record === undefined) {
        this.finish();
        return { done: true, value: undefined };
      }
      return { done: false, value: record };
    } catch (error) {
      this.finish();
      throw error;
    }
  }

  return(): IteratorResult<LogRecord> {
    this.finish();
    return { done: true, value: undefined };
  }

  private nextRecord(): LogRecord | undefined {
    for (;;) {
      const cursor = this.cursor ?? this.openNextSegment();
      if (cursor === undefined) return undefined;
      const status = cursor.next();
      if (status === cursorEnd) {
        this.closeSegment(cursor);
        continue;
      }
      const segment = this.segment!;
      if (status === cursorBad) {
        const bad = cursor.bad!;
        throw new CorruptRecordError(segment.file, bad.lsn, bad.offset, bad.reason);
      }
      if (cursor.lsn < this.startLsn) continue;
      if (!this.timeReached) {
        if (cursor.timestamp < this.time) continue;
        this.timeReached = true;
      }
      const body = decodeFrameBody(cursor.bytes, cursor.view, cursor.frameStart, cursor.length);
      return { lsn: cursor.lsn, timestamp: cursor.timestamp, kind: cursor.kind, body, size: cursor.length };
    }
  }

  /** Opens the next segment the read needs, or returns undefined when there is none. */
  private openNextSegment(): SegmentCursor | undefined {
    while (this.segmentIndex < this.segments.length) {
      const segment = this.segments[this.segmentIndex++]!;
      if (segment.lastLsn < segment.firstLsn || segment.lastLsn < this.startLsn) continue;
      if (!this.timeReached && segment.maxTimestamp !== undefined && segment.maxTimestamp < this.time) continue;
      this.fd = openSegment(this.fileSystem, this.dir, segment.file);
      this.segment = segment;
      const start = this.startInside(segment);
      this.cursor = new SegmentCursor(this.fileSystem, this.fd, start.offset, segment.bytes, start.lsn);
      return this.cursor;
    }
    return undefined;
  }

  /**
   * Where the cursor starts in `segment`: at the frame of the start LSN when the segment's offsets know it (a
   * replay from a snapshot then reads only the records after it, not the tens of thousands before it in the
   * same segment, each of them read and verified only to be skipped), else at the first frame. Records before
   * the start LSN are skipped whatever the time, so a read by time may start there too.
   */
  private startInside(segment: ReadableSegment): { offset: number; lsn: Lsn } {
    const index = this.startLsn - segment.firstLsn;
    const offsets = segment.offsets;
    if (index <= 0 || offsets === undefined || index >= offsets.count) return { offset: segmentHeaderBytes, lsn: segment.firstLsn };
    return { offset: offsets.offsetOf(index), lsn: this.startLsn };
  }

  /** At a segment's end: every record up to its last LSN must have been there. */
  private closeSegment(cursor: SegmentCursor): void {
    const segment = this.segment!;
    if (cursor.nextLsn - 1 !== segment.lastLsn) {
      throw new CorruptRecordError(segment.file, cursor.nextLsn, cursor.validEnd, `the segment ends at LSN ${cursor.nextLsn - 1} but LSN ${segment.lastLsn} was expected (records are missing)`);
    }
    this.closeFile();
  }

  private closeFile(): void {
    const fd = this.fd;
    this.fd = -1;
    this.cursor = undefined;
    this.segment = undefined;
    if (fd >= 0) this.fileSystem.closeSync(fd);
  }

  private finish(): void {
    this.finished = true;
    this.closeFile();
  }
}

/** Segments are opened as the read reaches them; retention may have removed one since the read started. */
function openSegment(fileSystem: LogFileSystem, dir: string, file: string): number {
  try {
    return fileSystem.openSync(join(dir, file), 'r');
  } catch (error) {
    if (!isErrnoCode(error, 'ENOENT')) throw error;
    throw new LogError('ESEGMENTGONE', `segment ${file} was removed (by retention?) while this read was in progress; start a new read from the log's first LSN`, { cause: error });
  }
}
