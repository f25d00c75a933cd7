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
import * as fs from 'node:fs';
import { join } from 'node:path';
import { cursorBad, cursorEnd, SegmentCursor } from './cursor.js';
import { CorruptRecordError, isErrnoCode, LogError } from './errors.js';
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
}

export function checkReadFrom(from: ReadFrom): void {
  if (from.lsn !== undefined && !(Number.isSafeInteger(from.lsn) && from.lsn >= 0)) {
    throw new LogError('EINVALIDARGUMENT', `read from LSN must be a non-negative integer, got ${String(from.lsn)}`);
  }
  if (from.time !== undefined && (typeof from.time !== 'number' || Number.isNaN(from.time))) {
    throw new LogError('EINVALIDARGUMENT', `read from time must be epoch milliseconds, got ${String(from.time)}`);
  }
}

export function* readRecords(dir: string, segments: readonly ReadableSegment[], from: ReadFrom): Generator<LogRecord, void, undefined> {
  const startLsn = from.lsn ?? 0;
  const time = from.time ?? -Infinity;
  let timeReached = from.time === undefined;
  for (const segment of segments) {
    if (segment.lastLsn < segment.firstLsn || segment.lastLsn < startLsn) continue;
    if (!timeReached && segment.maxTimestamp !== undefined && segment.maxTimestamp < time) continue;
    const fd = openSegment(dir, segment.file);
    try {
      const cursor = new SegmentCursor(fd, segmentHeaderBytes, segment.bytes, segment.firstLsn);
      for (;;) {
        const status = cursor.next();
        if (status === cursorEnd) break;
        if (status === cursorBad) {
          const bad = cursor.bad!;
          throw new CorruptRecordError(segment.file, bad.lsn, bad.offset, bad.reason);
        }
        if (cursor.lsn < startLsn) continue;
        if (!timeReached) {
          if (cursor.timestamp < time) continue;
          timeReached = true;
        }
        const body = decodeFrameBody(cursor.bytes, cursor.view, cursor.frameStart, cursor.length);
        yield { lsn: cursor.lsn, timestamp: cursor.timestamp, kind: cursor.kind, body, size: cursor.length };
      }
      if (cursor.nextLsn - 1 !== segment.lastLsn) {
        throw new CorruptRecordError(segment.file, cursor.nextLsn, cursor.validEnd, `the segment ends at LSN ${cursor.nextLsn - 1} but LSN ${segment.lastLsn} was expected (records are missing)`);
      }
    } finally {
      fs.closeSync(fd);
    }
  }
}

/** Segments are opened as the read reaches them; retention may have removed one since the read started. */
function openSegment(dir: string, file: string): number {
  try {
    return fs.openSync(join(dir, file), 'r');
  } catch (error) {
    if (!isErrnoCode(error, 'ENOENT')) throw error;
    throw new LogError('ESEGMENTGONE', `segment ${file} was removed (by retention?) while this read was in progress; start a new read from the log's first LSN`, { cause: error });
  }
}
