/**
 * Start-up recovery: checks segment headers, scans the segments replay will
 * need, and repairs a torn tail. Every case is one row of this table (the
 * log-recovery property tests cover each row):
 *
 *   where          what                                              verdict
 *   -------------  ------------------------------------------------  ---------------------------------
 *   any segment    frames end where every byte to the end of the     the end of the segment: zero-filled
 *                  file is zero                                      space (zero-tail.ts), kept as is
 *   any segment    complete header, wrong magic / checksum /         SegmentHeaderError
 *                  version / first LSN
 *   non-last       header shorter than 32 bytes                      SegmentHeaderError
 *   last           header shorter than 32 bytes, or torn (each       torn creation: rewrite the header
 *                  byte the expected one or zero) with only zeros    (no record can be in it: records
 *                  after it                                          follow a synced header)
 *   non-last       any bad frame                                     CorruptRecordError (a segment is
 *                                                                    synced before the next is created)
 *   last           intact frame (checksum matches) with a wrong LSN  CorruptRecordError (no torn write
 *                                                                    yields a checksummed frame)
 *   last           bad frame followed, anywhere later in the file,   CorruptRecordError (records were
 *                  by a valid frame with a later LSN                 written after the bad one: damage,
 *                                                                    not a torn end)
 *   last           any other bad frame: short, implausible length,   torn tail: truncate there, fsync,
 *                  checksum mismatch, with nothing valid after it    warn with LSN and bytes dropped
 *   between        next segment's first LSN ≠ this one's last + 1    LogInconsistentError
 *
 * Residual ambiguity, decided towards refusing: a crash whose unsynced pages
 * reached the disk out of order can leave a torn frame followed by a valid one.
 * Those records were never acknowledged, but they look exactly like damaged
 * acknowledged data, and refusing to start (the inspector shows the range) is
 * better than silently dropping acknowledged records.
 *
 * Segments wholly before the newest snapshot are not scanned at start-up
 * (replay does not need them); they are verified when read and by verify().
 */
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import { cursorFrame, findValidFrameAfter, SegmentCursor, type BadFrame } from './cursor.js';
import { CorruptRecordError, LogInconsistentError } from './errors.js';
import { fsyncDirectorySync, type LogFileSystem } from './file-system.js';
import type { Lsn } from './record.js';
import { nonZeroEnd } from './zero-tail.js';
import { decodeSegmentHeader, encodeSegmentHeader, readSegmentHeaderSync, segmentHeaderBytes, type SegmentState, type SegmentTimestamps } from './segment.js';

export interface TornTail {
  readonly segment: string;
  /** The LSN of the first record dropped (or that would have been). */
  readonly lsn: Lsn;
  readonly bytesDropped: number;
  readonly reason: string;
}

export interface SegmentScan {
  readonly lastLsn: Lsn;
  readonly records: number;
  /** Where the valid frames end. */
  readonly validBytes: number;
  readonly fileBytes: number;
  readonly timestamps: SegmentTimestamps | undefined;
  readonly bad: BadFrame | undefined;
  /** The first valid frame after the bad one, if any (its LSN is after the bad frame's). */
  readonly resumesAt: { offset: number; lsn: Lsn } | undefined;
}

/** Reads every frame of a segment from its header on, verifying each; never writes. */
export function scanSegment(fileSystem: LogFileSystem, dir: string, file: string, firstLsn: Lsn, fileBytes: number): SegmentScan {
  const fd = fileSystem.openSync(join(dir, file), 'r');
  try {
    const cursor = new SegmentCursor(fileSystem, fd, segmentHeaderBytes, fileBytes, firstLsn);
    let timestamps: SegmentTimestamps | undefined;
    let records = 0;
    while (cursor.next() === cursorFrame) {
      records += 1;
      const t = cursor.timestamp;
      if (timestamps === undefined) timestamps = { first: t, last: t, max: t };
      else {
        timestamps.last = t;
        if (t > timestamps.max) timestamps.max = t;
      }
    }
    const validBytes = cursor.validEnd;
    const bad = cursor.bad;
    // No frame starts at or past the last non-zero byte: the search stops there, not at the end of a zero-filled file.
    const resumesAt = bad === undefined ? undefined : findValidFrameAfter(fileSystem, fd, bad.offset + 1, fileBytes, bad.lsn, nonZeroEnd(fileSystem, fd, validBytes, fileBytes));
    return { lastLsn: cursor.nextLsn - 1, records, validBytes, fileBytes, timestamps, bad, resumesAt };
  } finally {
    fileSystem.closeSync(fd);
  }
}

export type BadFrameVerdict = 'torn-tail' | 'corrupt';

/** The frame rows of the table above. */
export function judgeBadFrame(isLastSegment: boolean, bad: BadFrame, followedByValidFrame: boolean): BadFrameVerdict {
  if (!isLastSegment) return 'corrupt';
  if (bad.checksumValid) return 'corrupt';
  if (followedByValidFrame) return 'corrupt';
  return 'torn-tail';
}

export interface Recovered {
  readonly segments: SegmentState[];
  readonly tornTail: TornTail | undefined;
}

/**
 * Recovers the segments of a log about to be opened for writing. `replayFromLsn`
 * is the first LSN replay will read (newest snapshot + 1, or 1): scanning starts
 * at the segment holding it.
 */
export function recoverSegments(fileSystem: LogFileSystem, dir: string, found: readonly { file: string; firstLsn: Lsn }[], replayFromLsn: Lsn, logger: Logger): Recovered {
  const lastIndex = found.length - 1;
  const { segments, lastCreationInterrupted } = checkHeaders(fileSystem, dir, found);
  let scanStart = 0;
  for (let i = 0; i <= lastIndex; i++) if ((found[i]?.firstLsn ?? Infinity) <= replayFromLsn) scanStart = i;
  for (let i = scanStart; i < lastIndex; i++) {
    const segment = segments[i]!;
    const scan = scanSegment(fileSystem, dir, segment.file, segment.firstLsn, segment.bytes);
    if (scan.bad !== undefined) throw new CorruptRecordError(segment.file, scan.bad.lsn, scan.bad.offset, scan.bad.reason);
    assertChain(segment.file, scan.lastLsn, segments[i + 1]!);
    segment.lastLsn = scan.lastLsn;
    segment.timestamps = scan.timestamps;
  }
  const tornTail = recoverLastSegment(fileSystem, dir, segments[lastIndex]!, lastCreationInterrupted, logger);
  return { segments, tornTail };
}

/** Headers of every segment; an interrupted creation (short or torn header) is accepted only on the last one. */
function checkHeaders(fileSystem: LogFileSystem, dir: string, found: readonly { file: string; firstLsn: Lsn }[]): { segments: SegmentState[]; lastCreationInterrupted: boolean } {
  let lastCreationInterrupted = false;
  const segments = found.map(({ file, firstLsn }, index): SegmentState => {
    const { header, fileBytes, creationInterrupted } = readSegmentHeaderSync(fileSystem, dir, file, firstLsn);
    const isLast = index === found.length - 1;
    if (isLast) lastCreationInterrupted = creationInterrupted;
    if (!(isLast && creationInterrupted)) decodeSegmentHeader(header, file, firstLsn);
    const next = found[index + 1];
    // Until scanned, a segment is assumed to run up to its successor.
    const lastLsn = next === undefined ? firstLsn - 1 : next.firstLsn - 1;
    return { file, firstLsn, lastLsn, bytes: fileBytes, timestamps: undefined };
  });
  return { segments, lastCreationInterrupted };
}

function assertChain(file: string, lastLsn: Lsn, next: SegmentState): void {
  if (next.firstLsn !== lastLsn + 1) {
    throw new LogInconsistentError(`segment ${file} ends at LSN ${lastLsn} but the next segment ${next.file} starts at LSN ${next.firstLsn}: records are missing`);
  }
}

function recoverLastSegment(fileSystem: LogFileSystem, dir: string, segment: SegmentState, creationInterrupted: boolean, logger: Logger): TornTail | undefined {
  if (creationInterrupted) {
    const torn: TornTail = { segment: segment.file, lsn: segment.firstLsn, bytesDropped: segment.bytes, reason: 'segment creation was interrupted before its header was durable' };
    rewriteHeader(fileSystem, dir, segment);
    logger.warn(torn, 'torn segment header rewritten: the segment was being created when the process stopped');
    return torn;
  }
  const scan = scanSegment(fileSystem, dir, segment.file, segment.firstLsn, segment.bytes);
  segment.lastLsn = scan.lastLsn;
  segment.timestamps = scan.timestamps;
  // The zero-filled space after the frames stays: appends go on at validBytes.
  segment.bytes = scan.validBytes;
  if (scan.bad === undefined) return undefined;
  if (judgeBadFrame(true, scan.bad, scan.resumesAt !== undefined) === 'corrupt') {
    const after = scan.resumesAt === undefined ? '' : `, and valid records resume at LSN ${scan.resumesAt.lsn} (byte offset ${scan.resumesAt.offset})`;
    throw new CorruptRecordError(segment.file, scan.bad.lsn, scan.bad.offset, scan.bad.reason + after);
  }
  const torn: TornTail = { segment: segment.file, lsn: scan.bad.lsn, bytesDropped: scan.fileBytes - scan.validBytes, reason: scan.bad.reason };
  truncateDurably(fileSystem, join(dir, segment.file), scan.validBytes);
  logger.warn(torn, `torn tail truncated: dropped ${torn.bytesDropped} bytes from LSN ${torn.lsn} on (never acknowledged: they were not yet fsynced)`);
  return torn;
}

function truncateDurably(fileSystem: LogFileSystem, path: string, bytes: number): void {
  const fd = fileSystem.openSync(path, 'r+');
  try {
    fileSystem.ftruncateSync(fd, bytes);
    fileSystem.fsyncSync(fd);
  } finally {
    fileSystem.closeSync(fd);
  }
}

function rewriteHeader(fileSystem: LogFileSystem, dir: string, segment: SegmentState): void {
  const fd = fileSystem.openSync(join(dir, segment.file), 'w');
  try {
    const header = encodeSegmentHeader(segment.firstLsn);
    fileSystem.writeSync(fd, header, 0, header.length, 0);
    fileSystem.fsyncSync(fd);
  } finally {
    fileSystem.closeSync(fd);
  }
  fsyncDirectorySync(fileSystem, dir);
  segment.bytes = segmentHeaderBytes;
  segment.lastLsn = segment.firstLsn - 1;
}
