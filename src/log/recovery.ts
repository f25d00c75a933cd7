/**
 * Start-up recovery: judges a data directory (planRecovery, read-only: the
 * broker's start-up and `cairn inspect verify` both call it, so they always
 * agree), then repairs what the judgement allows (applyRecoveryPlan). Every
 * case is one row of this table; "replay's segments" are the segment holding
 * the first LSN replay reads (newest valid snapshot + 1, or 1) and every later
 * one; "history" is every segment wholly before them. The log-recovery
 * property tests and test/integration/log-damage.test.ts cover each row:
 *
 *   where              what                                            verdict
 *   -----------------  ----------------------------------------------  -----------------------------------
 *   any segment        frames end where every byte to the end of the   the end of the segment: zero-filled
 *                      file is zero                                    space (zero-tail.ts), kept as is
 *   replay's segments  complete header, wrong magic / checksum /       SegmentHeaderError
 *                      version / first LSN
 *   replay's, non-last header shorter than 32 bytes                    SegmentHeaderError
 *   last               header shorter than 32 bytes, or torn (each     torn creation: rewrite the header
 *                      byte the expected one or zero) with only        (no record can be in it: records
 *                      zeros after it                                  follow a synced header)
 *   replay's, non-last any bad frame                                   CorruptRecordError (a segment is
 *                                                                      synced before the next is created)
 *   last               intact frame (checksum matches) with a wrong    CorruptRecordError (no torn write
 *                      LSN                                             yields a checksummed frame)
 *   last               bad frame followed, anywhere later in the       CorruptRecordError (records were
 *                      file, by a valid frame with a later LSN         written after the bad one: damage,
 *                                                                      not a torn end)
 *   last               any other bad frame: short, implausible         torn tail: truncate there, fsync,
 *                      length, checksum mismatch, with nothing valid   warn with the LSN range and bytes
 *                      after it                                        dropped (describeTornTail)
 *   between replay's   next segment's first LSN ≠ this one's last + 1  LogInconsistentError naming the
 *                                                                      missing LSNs
 *   log start          the first segment starts after the first LSN    LogInconsistentError (no state to
 *                      replay reads                                    start from)
 *   history            bad header, bad frame, or LSNs missing (a       start: replay does not need them.
 *                      deleted segment)                                Headers are checked now, records in
 *                                                                      the background after the broker
 *                                                                      serves (history.ts): an error line,
 *                                                                      a metric and /api/overview name the
 *                                                                      LSNs that can no longer be restored
 *   log end            newest valid snapshot S past the last record E  LostRecordsError naming the override;
 *                      (the newest segment(s) are missing: their       with acceptLostRecordsAfter = E: a
 *                      acknowledged records after S are lost)          new segment at S+1, an error line;
 *                                                                      E+1..S is history damage from then on
 *   log end            newest segment(s) missing, newest snapshot at   not detectable: the log looks as if
 *                      or before the remaining end                     it ended there (see below)
 *
 * Residual ambiguities:
 * - A crash whose unsynced pages reached the disk out of order can leave a
 *   torn frame followed by a valid one. Those records were never
 *   acknowledged, but they look exactly like damaged acknowledged data, and
 *   refusing to start (the inspector shows the range) is better than silently
 *   dropping acknowledged records.
 * - A torn tail is what a crash before fdatasync leaves, and then nothing in
 *   it was acknowledged; the same bytes can also be acknowledged records that
 *   the disk lost or damaged after reporting them synced. Nothing on disk
 *   tells the two apart, so the warning says both.
 * - Deleting the newest segment(s) while the newest snapshot lies before the
 *   remaining end leaves a log that ends cleanly, earlier: telling it apart
 *   would need the format to record each segment's successor.
 */
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import { cursorFrame, findValidFrameAfter, SegmentCursor, type BadFrame } from './cursor.js';
import { CorruptRecordError, LogInconsistentError, LostRecordsError, SegmentHeaderError } from './errors.js';
import { fsyncDirectorySync, type LogFileSystem } from './file-system.js';
import { FrameOffsets } from './frame-offsets.js';
import type { HistorySegment } from './history.js';
import { frameBytesMin, type Lsn } from './record.js';
import { nonZeroEnd } from './zero-tail.js';
import { createSegment, decodeSegmentHeader, encodeSegmentHeader, readSegmentHeaderSync, segmentFileName, segmentHeaderBytes, type SegmentState, type SegmentTimestamps } from './segment.js';

export interface TornTail {
  readonly segment: string;
  /** The LSN of the first record dropped (or that would have been). */
  readonly lsn: Lsn;
  /** The most LSNs the dropped bytes could have held ended at this one (lsn - 1: none). */
  readonly lastLsnAtMost: Lsn;
  readonly bytesDropped: number;
  readonly reason: string;
}

/** The torn-tail account, in one place for the start-up warning and `cairn inspect verify`. */
export function describeTornTail(torn: TornTail): string {
  const where = `torn tail in segment ${torn.segment} at LSN ${torn.lsn}: ${torn.bytesDropped} bytes (${torn.reason})`;
  if (torn.lastLsnAtMost < torn.lsn) return `${where}; no record can have been in them (records are written only after a synced header)`;
  const range = torn.lastLsnAtMost > torn.lsn ? `LSN ${torn.lsn}..${torn.lastLsnAtMost} at most` : `LSN ${torn.lsn}`;
  return `${where}, holding ${range}. A crash before their fdatasync leaves exactly this, and then none of them was acknowledged; `
    + 'they include acknowledged records only if the disk lost or damaged data it had reported synced (a lying fsync, a bit flip)';
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
  /** After a bad frame: the end of the non-zero bytes (zero-filled space after them held no frame). */
  readonly dataEnd: number;
  /** Where each valid frame starts (the log keeps it for reads by LSN). */
  readonly offsets: FrameOffsets;
}

/** Reads every frame of a segment from its header on, verifying each; never writes. */
export function scanSegment(fileSystem: LogFileSystem, dir: string, file: string, firstLsn: Lsn, fileBytes: number): SegmentScan {
  const fd = fileSystem.openSync(join(dir, file), 'r');
  try {
    const cursor = new SegmentCursor(fileSystem, fd, segmentHeaderBytes, fileBytes, firstLsn);
    const offsets = new FrameOffsets(segmentHeaderBytes);
    let timestamps: SegmentTimestamps | undefined;
    let records = 0;
    while (cursor.next() === cursorFrame) {
      records += 1;
      offsets.add(cursor.length);
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
    const dataEnd = bad === undefined ? validBytes : nonZeroEnd(fileSystem, fd, validBytes, fileBytes);
    const resumesAt = bad === undefined ? undefined : findValidFrameAfter(fileSystem, fd, bad.offset + 1, fileBytes, bad.lsn, dataEnd);
    return { lastLsn: cursor.nextLsn - 1, records, validBytes, fileBytes, timestamps, bad, resumesAt, dataEnd, offsets };
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

/** The torn tail a scanned last segment has, or the corruption it holds; undefined when its frames end cleanly. */
export function judgeLastSegment(segment: { file: string; bytes: number }, scan: SegmentScan): TornTail | CorruptRecordError | undefined {
  if (scan.bad === undefined) return undefined;
  if (judgeBadFrame(true, scan.bad, scan.resumesAt !== undefined) === 'corrupt') {
    const after = scan.resumesAt === undefined ? '' : `, and valid records resume at LSN ${scan.resumesAt.lsn} (byte offset ${scan.resumesAt.offset})`;
    return new CorruptRecordError(segment.file, scan.bad.lsn, scan.bad.offset, scan.bad.reason + after);
  }
  // Every frame has a non-zero byte in its first 12 (a length >= frameBytesMin): frames can only start before dataEnd.
  const records = Math.ceil((scan.dataEnd - scan.validBytes) / frameBytesMin);
  return { segment: segment.file, lsn: scan.bad.lsn, lastLsnAtMost: scan.bad.lsn + records - 1, bytesDropped: segment.bytes - scan.validBytes, reason: scan.bad.reason };
}

/** A last segment whose creation was torn before its header was complete. */
export function tornHeaderOf(segment: { file: string; firstLsn: Lsn; bytes: number }): TornTail {
  return { segment: segment.file, lsn: segment.firstLsn, lastLsnAtMost: segment.firstLsn - 1, bytesDropped: segment.bytes, reason: 'segment creation was interrupted before its header was durable' };
}

/** What start-up will do to a data directory; made by planRecovery without writing anything. */
export interface RecoveryPlan {
  /** As they will be once the plan is applied (the last one's bytes: where appends go on). */
  readonly segments: SegmentState[];
  readonly tornTail: TornTail | undefined;
  /** Segments wholly before replay's: checked in the background (history.ts). */
  readonly history: HistorySegment[];
  /** The operator accepted lost records after the log's end: replay starts from the snapshot, in a new segment. */
  readonly lostRecords: { readonly endLsn: Lsn; readonly snapshotLsn: Lsn } | undefined;
  /** acceptLostRecordsAfter was given, and nothing is missing: it was ignored. */
  readonly overrideIgnored: boolean;
}

export interface PlanOptions {
  /** The operator's override for the "log end" row: the LSN the log is known to end at. */
  readonly acceptLostRecordsAfter?: Lsn | undefined;
}

/**
 * Judges the segments of a log about to be opened (the table above) without
 * writing: throws the error start-up refuses with, or returns the plan.
 */
export function planRecovery(fileSystem: LogFileSystem, dir: string, found: readonly { file: string; firstLsn: Lsn }[], snapshotLsn: Lsn | undefined, options: PlanOptions = {}): RecoveryPlan {
  const replayFromLsn = (snapshotLsn ?? 0) + 1;
  let replayStart = 0;
  for (let i = 0; i < found.length; i++) if (found[i]!.firstLsn <= replayFromLsn) replayStart = i;
  const { segments, headerProblems, lastCreationInterrupted } = checkHeaders(fileSystem, dir, found, replayStart);
  const lastIndex = segments.length - 1;
  for (let i = replayStart; i < lastIndex; i++) {
    const segment = segments[i]!;
    const scan = scanSegment(fileSystem, dir, segment.file, segment.firstLsn, segment.bytes);
    if (scan.bad !== undefined) throw new CorruptRecordError(segment.file, scan.bad.lsn, scan.bad.offset, scan.bad.reason);
    assertChain(segment.file, scan.lastLsn, segments[i + 1]!, replayFromLsn);
    segment.lastLsn = scan.lastLsn;
    segment.timestamps = scan.timestamps;
    segment.offsets = scan.offsets;
  }
  const tornTail = planLastSegment(fileSystem, dir, segments[lastIndex]!, lastCreationInterrupted);
  // Judged only after the segments were read: readSnapshotFile reports a read error as an invalid snapshot, so an
  // I/O failure while loading the snapshot must surface from the reads above rather than as this refusal.
  const firstLsn = segments[0]!.firstLsn;
  if (replayFromLsn < firstLsn) {
    throw new LogInconsistentError(`the log starts at LSN ${firstLsn} but replay must start at LSN ${replayFromLsn} (${snapshotLsn === undefined ? 'no valid snapshot' : `newest valid snapshot covers LSN ${snapshotLsn}`}): records are missing`);
  }
  const history = (count: number, nextFirstLsn: Lsn): HistorySegment[] => segments.slice(0, count).map((s, i) => ({
    file: s.file, firstLsn: s.firstLsn, nextFirstLsn: segments[i + 1]?.firstLsn ?? nextFirstLsn, bytes: s.bytes, headerProblem: headerProblems.get(i),
  }));
  const endLsn = segments[lastIndex]!.lastLsn;
  const accepted = options.acceptLostRecordsAfter;
  if (snapshotLsn !== undefined && snapshotLsn > endLsn) {
    if (accepted !== endLsn) throw new LostRecordsError(endLsn, snapshotLsn, accepted);
    return { segments, tornTail, history: history(segments.length, snapshotLsn + 1), lostRecords: { endLsn, snapshotLsn }, overrideIgnored: false };
  }
  return { segments, tornTail, history: history(replayStart, replayFromLsn), lostRecords: undefined, overrideIgnored: accepted !== undefined };
}

/**
 * Headers of every segment. Replay's segments must have good ones (an
 * interrupted creation, short or torn, only on the last); a bad one in the
 * history is noted, for the history check to report.
 */
function checkHeaders(
  fileSystem: LogFileSystem, dir: string, found: readonly { file: string; firstLsn: Lsn }[], replayStart: number,
): { segments: SegmentState[]; headerProblems: Map<number, string>; lastCreationInterrupted: boolean } {
  const headerProblems = new Map<number, string>();
  let lastCreationInterrupted = false;
  const segments = found.map(({ file, firstLsn }, index): SegmentState => {
    const { header, fileBytes, creationInterrupted } = readSegmentHeaderSync(fileSystem, dir, file, firstLsn);
    const isLast = index === found.length - 1;
    if (isLast) lastCreationInterrupted = creationInterrupted;
    try {
      if (!(isLast && creationInterrupted)) decodeSegmentHeader(header, file, firstLsn);
    } catch (error) {
      if (!(error instanceof SegmentHeaderError) || index >= replayStart) throw error;
      headerProblems.set(index, error.message);
    }
    const next = found[index + 1];
    // Until scanned, a segment is assumed to run up to its successor.
    const lastLsn = next === undefined ? firstLsn - 1 : next.firstLsn - 1;
    return { file, firstLsn, lastLsn, bytes: fileBytes, timestamps: undefined, offsets: undefined };
  });
  return { segments, headerProblems, lastCreationInterrupted };
}

function assertChain(file: string, lastLsn: Lsn, next: SegmentState, replayFromLsn: Lsn): void {
  if (next.firstLsn === lastLsn + 1) return;
  const missing = next.firstLsn > lastLsn + 1 ? `LSN ${lastLsn + 1}..${next.firstLsn - 1} are missing` : 'the two overlap';
  throw new LogInconsistentError(`segment ${file} ends at LSN ${lastLsn} but the next segment ${next.file} starts at LSN ${next.firstLsn}: ${missing}, and replay (from LSN ${replayFromLsn}) needs them`);
}

/** Scans the last segment: what its torn tail is, or the corruption start-up refuses. */
function planLastSegment(fileSystem: LogFileSystem, dir: string, segment: SegmentState, creationInterrupted: boolean): TornTail | undefined {
  if (creationInterrupted) {
    const torn = tornHeaderOf(segment);
    segment.bytes = segmentHeaderBytes;
    segment.lastLsn = segment.firstLsn - 1;
    segment.offsets = new FrameOffsets(segmentHeaderBytes);
    return torn;
  }
  const scan = scanSegment(fileSystem, dir, segment.file, segment.firstLsn, segment.bytes);
  const verdict = judgeLastSegment(segment, scan);
  if (verdict instanceof CorruptRecordError) throw verdict;
  segment.lastLsn = scan.lastLsn;
  segment.timestamps = scan.timestamps;
  // The zero-filled space after the frames stays: appends go on at validBytes.
  segment.bytes = scan.validBytes;
  segment.offsets = scan.offsets;
  return verdict;
}

/** Makes the repairs a plan calls for, durably, and says so in the log. */
export async function applyRecoveryPlan(fileSystem: LogFileSystem, dir: string, plan: RecoveryPlan, logger: Logger, zeros: Buffer | undefined): Promise<{ segments: SegmentState[]; newSegmentFd: number | undefined }> {
  const { segments, tornTail, lostRecords } = plan;
  const last = segments[segments.length - 1]!;
  if (tornTail !== undefined) {
    if (tornTail.lastLsnAtMost < tornTail.lsn) rewriteHeader(fileSystem, dir, last);
    else truncateDurably(fileSystem, join(dir, last.file), last.bytes);
    logger.warn(tornTail, `torn tail truncated: ${describeTornTail(tornTail)}`);
  }
  if (plan.overrideIgnored) logger.warn('acceptLostRecordsAfter (--accept-lost-records-after) was given but no record is missing past the newest snapshot: ignored');
  if (lostRecords === undefined) return { segments, newSegmentFd: undefined };
  // A sealed segment ends with its last frame, as after a roll.
  if (fileSystem.statSync(join(dir, last.file)).size > last.bytes) truncateDurably(fileSystem, join(dir, last.file), last.bytes);
  const { endLsn, snapshotLsn } = lostRecords;
  const fd = await createSegment(fileSystem, dir, snapshotLsn + 1, zeros === undefined ? {} : { zeros });
  segments.push({ file: segmentFileName(snapshotLsn + 1), firstLsn: snapshotLsn + 1, lastLsn: snapshotLsn, bytes: segmentHeaderBytes, timestamps: undefined, offsets: new FrameOffsets(segmentHeaderBytes) });
  logger.error({ endLsn, snapshotLsn }, `the log ended at LSN ${endLsn}, before the newest valid snapshot (LSN ${snapshotLsn}); started from the snapshot as the operator allowed (--accept-lost-records-after ${endLsn}): records after LSN ${snapshotLsn} that were in the missing segment(s), acknowledged or not, are lost, and LSN ${endLsn + 1}..${snapshotLsn} can no longer be read`);
  return { segments, newSegmentFd: fd };
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
}
