/**
 * Offline, read-only access to a data directory, for the inspector and for
 * point-in-time recovery. Safe on a live directory: it opens files read-only,
 * never truncates, never writes, and sees the files as they were when opened
 * (a frame still being written shows up as a torn tail, which is harmless).
 *
 * Unlike SegmentedLog.open it does not refuse a damaged log: open succeeds,
 * reading stops with an error where the damage is, and verify() reports every
 * problem (bad headers, bad records, LSN gaps, torn tail, invalid snapshots).
 */
import { join } from 'node:path';
import { CorruptRecordError, LogError, NotACairnLogError, SegmentHeaderError } from './errors.js';
import { nodeFileSystem, type LogFileSystem } from './file-system.js';
import { checkReadFrom, readRecords, type ReadFrom } from './read.js';
import type { LogRecord, Lsn } from './record.js';
import { judgeLastSegment, scanSegment, tornHeaderOf, type TornTail } from './recovery.js';
import { SegmentVerifier } from './segment-verifier.js';
import { decodeSegmentHeader, listDataDirectory, readSegmentHeaderSync, segmentHeaderBytes, toSegmentInfo, type SegmentInfo, type SegmentState } from './segment.js';
import { describeSnapshots, type SnapshotFileInfo } from './snapshot.js';

export interface BadRecord {
  readonly segment: string;
  readonly lsn: Lsn;
  readonly offset: number;
  readonly reason: string;
}

export interface VerifyReport {
  /** No bad record, no bad segment. A torn tail is normal after a crash and does not make a log bad. */
  readonly ok: boolean;
  readonly segments: number;
  readonly records: number;
  readonly bytes: number;
  readonly firstLsn: Lsn;
  readonly lastLsn: Lsn;
  readonly tornTail: TornTail | undefined;
  readonly badRecords: BadRecord[];
  /** Bad headers and LSN gaps between segments. */
  readonly badSegments: { segment: string; reason: string }[];
  readonly snapshots: SnapshotFileInfo[];
}

export interface LogReader {
  readonly dir: string;
  /** The file system the reader reads through (the real one unless a test injected another). */
  readonly fileSystem: LogFileSystem;
  /** What recovery would drop from the last segment, as seen when the reader was opened. */
  readonly tornTail: TornTail | undefined;
  read(from?: ReadFrom): IterableIterator<LogRecord>;
  segments(): SegmentInfo[];
  snapshots(): SnapshotFileInfo[];
  verify(): VerifyReport;
}

interface ReaderSegment extends SegmentState {
  /** Frames are read up to here: the file size, or the start of a torn tail. */
  readLimit: number;
  headerError: SegmentHeaderError | undefined;
  creationInterrupted: boolean;
}

export function openLogReader(dir: string, options: { fileSystem?: LogFileSystem } = {}): LogReader {
  const fileSystem = options.fileSystem ?? nodeFileSystem;
  if (!fileSystem.existsSync(dir)) throw new LogError('ENOENT', `no log directory at ${dir}`);
  const listing = listDataDirectory(fileSystem, dir);
  if (listing.segments.length === 0) throw new NotACairnLogError(dir, [...listing.snapshots.map((s) => s.file), ...listing.foreign]);
  const segments = listing.segments.map(({ file, firstLsn }, index): ReaderSegment => {
    const { header, fileBytes, creationInterrupted } = readSegmentHeaderSync(fileSystem, dir, file, firstLsn);
    const next = listing.segments[index + 1];
    const lastLsn = next === undefined ? firstLsn - 1 : next.firstLsn - 1;
    return { file, firstLsn, lastLsn, bytes: fileBytes, timestamps: undefined, offsets: undefined, readLimit: fileBytes, headerError: headerProblem(header, file, firstLsn), creationInterrupted };
  });
  const tornTail = inspectLastSegment(fileSystem, dir, segments[segments.length - 1]!);
  return {
    dir,
    fileSystem,
    tornTail,
    read: (from: ReadFrom = {}) => readFromReader(fileSystem, dir, segments, from),
    segments: () => segments.map(toSegmentInfo),
    snapshots: () => describeSnapshots(fileSystem, dir, listDataDirectory(fileSystem, dir).snapshots),
    verify: () => verifyLog(fileSystem, dir, segments, tornTail),
  };
}

function headerProblem(header: Buffer, file: string, firstLsn: Lsn): SegmentHeaderError | undefined {
  try {
    decodeSegmentHeader(header, file, firstLsn);
    return undefined;
  } catch (error) {
    if (error instanceof SegmentHeaderError) return error;
    throw error;
  }
}

/** Finds where the last segment's valid frames end, without repairing anything (recovery.ts judges it). */
function inspectLastSegment(fileSystem: LogFileSystem, dir: string, segment: ReaderSegment): TornTail | undefined {
  if (segment.creationInterrupted) {
    segment.readLimit = Math.min(segment.bytes, segmentHeaderBytes);
    segment.headerError = undefined;
    return tornHeaderOf(segment);
  }
  if (segment.headerError !== undefined) return undefined;
  const scan = scanSegment(fileSystem, dir, segment.file, segment.firstLsn, segment.bytes);
  segment.lastLsn = scan.lastLsn;
  segment.timestamps = scan.timestamps;
  const verdict = judgeLastSegment(segment, scan);
  // A corrupt frame is left in range so read() reports it.
  if (verdict instanceof CorruptRecordError) return undefined;
  // Read up to the torn tail, like recovery would leave it. Zero-filled space after the frames is not log data.
  segment.readLimit = scan.validBytes;
  if (verdict === undefined) segment.bytes = scan.validBytes;
  return verdict;
}

function readFromReader(fileSystem: LogFileSystem, dir: string, segments: readonly ReaderSegment[], from: ReadFrom): IterableIterator<LogRecord> {
  checkReadFrom(from);
  const startLsn = from.lsn ?? 0;
  // A segment with a bad header ends the read when the read reaches it, not before: recovering to a point
  // before it needs only the records before it.
  const damagedIndex = segments.findIndex((s) => s.headerError !== undefined && s.lastLsn >= startLsn);
  const readable = damagedIndex < 0 ? segments : segments.slice(0, damagedIndex);
  const view = readable.map((s) => ({ file: s.file, firstLsn: s.firstLsn, lastLsn: s.lastLsn, bytes: s.readLimit, maxTimestamp: s.timestamps?.max }));
  const records = readRecords(fileSystem, dir, view, from);
  const headerError = segments[damagedIndex]?.headerError;
  return headerError === undefined ? records : thenThrow(records, headerError);
}

function* thenThrow(records: IterableIterator<LogRecord>, error: Error): IterableIterator<LogRecord> {
  yield* records;
  throw error;
}

function verifyLog(fileSystem: LogFileSystem, dir: string, segments: readonly ReaderSegment[], tornTail: TornTail | undefined): VerifyReport {
  const badRecords: BadRecord[] = [];
  const badSegments: { segment: string; reason: string }[] = [];
  let records = 0;
  let bytes = 0;
  let lastLsn = segments[0]!.firstLsn - 1;
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    bytes += segment.bytes;
    if (segment.headerError !== undefined) {
      badSegments.push({ segment: segment.file, reason: segment.headerError.message });
      lastLsn = segment.lastLsn;
      continue;
    }
    if (i > 0 && segment.firstLsn !== lastLsn + 1) {
      badSegments.push({ segment: segment.file, reason: `starts at LSN ${segment.firstLsn} but the previous segment ends at LSN ${lastLsn}` });
    }
    const isLast = i === segments.length - 1;
    const limit = isLast ? segment.readLimit : segment.bytes;
    const result = verifySegment(fileSystem, dir, segment, limit, isLast, badRecords);
    records += result.records;
    lastLsn = result.lastLsn;
  }
  const snapshots = describeSnapshots(fileSystem, dir, listDataDirectory(fileSystem, dir).snapshots);
  const ok = badRecords.length === 0 && badSegments.length === 0;
  return { ok, segments: segments.length, records, bytes, firstLsn: segments[0]!.firstLsn, lastLsn, tornTail, badRecords, badSegments, snapshots };
}

/** Checks every frame of one segment (see segment-verifier.ts); learns its last LSN and timestamps. */
function verifySegment(fileSystem: LogFileSystem, dir: string, segment: ReaderSegment, limit: number, isLast: boolean, badRecords: BadRecord[]): { records: number; lastLsn: Lsn } {
  const fd = fileSystem.openSync(join(dir, segment.file), 'r');
  try {
    const verifier = new SegmentVerifier(fileSystem, fd, segment.firstLsn, limit, isLast);
    verifier.run();
    for (const bad of verifier.bad) badRecords.push({ segment: segment.file, lsn: bad.lsn, offset: bad.offset, reason: bad.reason });
    segment.lastLsn = verifier.lastLsn;
    if (verifier.timestamps !== undefined) segment.timestamps = verifier.timestamps;
    return { records: verifier.records, lastLsn: verifier.lastLsn };
  } finally {
    fileSystem.closeSync(fd);
  }
}
