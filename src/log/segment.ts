/**
 * Segment files: names, headers and the directory listing.
 *
 * A segment is named by the LSN of its first record, zero-padded to 20 digits
 * as Kafka does (`00000000000000000001.seg`), so names sort in LSN order. It
 * starts with a fixed header, followed by frames (see record.ts).
 *
 * Segment header, format version 1 (little-endian):
 *
 *   offset  bytes  field
 *        0      8  magic      ASCII "CAIRNSEG"
 *        8      2  version    u16 = 1
 *       10      6  reserved   zero
 *       16      8  firstLsn   u64, equal to the LSN in the file name
 *       24      8  checksum   xxhash64 of bytes [0, 24)
 *
 * Invariant: a segment's header is written and fsynced, and the directory
 * fsynced, before any record goes into it, so a header shorter than 32 bytes
 * can only be a segment whose creation was interrupted (see recovery.ts).
 */
import { join } from 'node:path';
import { checksum64 } from './checksum.js';
import { isLockFileName } from './directory-lock.js';
import { SegmentHeaderError } from './errors.js';
import { writeAllAsync, type LogFileSystem } from './file-system.js';
import type { FrameOffsets } from './frame-offsets.js';
import type { Lsn } from './record.js';
import { nonZeroEnd } from './zero-tail.js';

export const segmentHeaderBytes = 32;
export const segmentFormatVersion = 1;
const segmentMagic = Buffer.from('CAIRNSEG', 'ascii');

export interface SegmentInfo {
  readonly file: string;
  readonly firstLsn: Lsn;
  /** firstLsn - 1 for a segment that holds no record yet. */
  readonly lastLsn: Lsn;
  readonly bytes: number;
  readonly firstTimestamp?: number;
  readonly lastTimestamp?: number;
}

/**
 * What the log tracks per segment. Timestamps are known for the segments that
 * were scanned (recovery scans from the newest snapshot on) or written in this
 * process; older ones are scanned on demand (retention by age, read by time).
 */
export interface SegmentState {
  readonly file: string;
  readonly firstLsn: Lsn;
  lastLsn: Lsn;
  bytes: number;
  timestamps: SegmentTimestamps | undefined;
  /**
   * Where each record's frame starts (frame-offsets.ts): kept for the segments written or scanned in
   * this process; undefined for the others (the history) until a read by LSN reaches them.
   */
  offsets: FrameOffsets | undefined;
}

export interface SegmentTimestamps {
  first: number;
  last: number;
  /** Wall clocks can step back: time-based decisions use the largest, not the last. */
  max: number;
}

const lsnDigits = 20;
const segmentNamePattern = /^(\d{20})\.seg$/;

export function segmentFileName(firstLsn: Lsn): string {
  return `${String(firstLsn).padStart(lsnDigits, '0')}.seg`;
}

export function lsnFileStem(lsn: Lsn): string {
  return String(lsn).padStart(lsnDigits, '0');
}

/** The first LSN a segment file name stands for, or undefined when it is not a segment name. */
export function parseSegmentFileName(name: string): Lsn | undefined {
  const match = segmentNamePattern.exec(name);
  if (match === null) return undefined;
  const lsn = Number(match[1]);
  return Number.isSafeInteger(lsn) && lsn >= 1 ? lsn : undefined;
}

export function encodeSegmentHeader(firstLsn: Lsn): Buffer {
  const header = Buffer.alloc(segmentHeaderBytes);
  segmentMagic.copy(header, 0);
  header.writeUInt16LE(segmentFormatVersion, 8);
  header.writeBigUInt64LE(BigInt(firstLsn), 16);
  header.writeBigUInt64LE(checksum64(header.subarray(0, 24)), 24);
  return header;
}

/** Checks a full header against the file name; one decoder per format version. */
export function decodeSegmentHeader(header: Buffer, file: string, expectedFirstLsn: Lsn): void {
  if (header.length < segmentHeaderBytes) throw new SegmentHeaderError(file, `only ${header.length} of ${segmentHeaderBytes} header bytes`);
  if (!header.subarray(0, 8).equals(segmentMagic)) throw new SegmentHeaderError(file, 'wrong magic: not a Cairn segment');
  if (header.readBigUInt64LE(24) !== checksum64(header.subarray(0, 24))) throw new SegmentHeaderError(file, 'header checksum mismatch');
  const version = header.readUInt16LE(8);
  switch (version) {
    case 1: {
      const firstLsn = Number(header.readBigUInt64LE(16));
      if (firstLsn !== expectedFirstLsn) throw new SegmentHeaderError(file, `header says first LSN ${firstLsn}, the file name says ${expectedFirstLsn}`);
      return;
    }
    default:
      throw new SegmentHeaderError(file, `unsupported format version ${version} (this build reads version ${segmentFormatVersion})`);
  }
}

/** Reads the first header bytes of a segment; returns the file size too, and whether its creation was interrupted. */
export function readSegmentHeaderSync(fileSystem: LogFileSystem, dir: string, file: string, firstLsn: Lsn): { header: Buffer; fileBytes: number; creationInterrupted: boolean } {
  const fd = fileSystem.openSync(join(dir, file), 'r');
  try {
    const fileBytes = fileSystem.fstatSync(fd).size;
    const header = Buffer.alloc(Math.min(segmentHeaderBytes, fileBytes));
    if (header.length > 0) fileSystem.readSync(fd, header, 0, header.length, 0);
    return { header, fileBytes, creationInterrupted: isInterruptedCreation(fileSystem, fd, header, fileBytes, firstLsn) };
  } finally {
    fileSystem.closeSync(fd);
  }
}

/**
 * A segment whose creation a crash interrupted, before its header was durable:
 * the header is short, or torn — every byte either the one expected or zero (a
 * write cut at a sector boundary, or a file size that reached the disk before
 * its data) — and only zeros follow it. No record can be in such a segment:
 * records go in only after the header and the directory entry are synced.
 * Anything else wrong with a header is damage (SegmentHeaderError).
 */
function isInterruptedCreation(fileSystem: LogFileSystem, fd: number, header: Buffer, fileBytes: number, firstLsn: Lsn): boolean {
  if (fileBytes < segmentHeaderBytes) return true;
  const expected = encodeSegmentHeader(firstLsn);
  if (header.equals(expected)) return false;
  for (let i = 0; i < segmentHeaderBytes; i++) if (header[i] !== 0 && header[i] !== expected[i]) return false;
  return nonZeroEnd(fileSystem, fd, segmentHeaderBytes, fileBytes) === segmentHeaderBytes;
}

export interface DirectoryListing {
  /** Sorted by first LSN. */
  readonly segments: { file: string; firstLsn: Lsn }[];
  readonly snapshots: { file: string; lsn: Lsn }[];
  readonly snapshotTemporaries: string[];
  /** Anything else: never touched, only reported. */
  readonly foreign: string[];
}

const snapshotNamePattern = /^(\d{20})\.snap$/;
const snapshotTemporaryPattern = /^(\d{20})\.snap\.tmp$/;
// Present at the root of many ext* file systems; not a sign of a foreign directory.
const ignoredEntries = new Set(['lost+found']);

export function listDataDirectory(fileSystem: LogFileSystem, dir: string): DirectoryListing {
  const listing: DirectoryListing = { segments: [], snapshots: [], snapshotTemporaries: [], foreign: [] };
  for (const name of fileSystem.readdirSync(dir).sort()) {
    const segmentLsn = parseSegmentFileName(name);
    const snapshot = snapshotNamePattern.exec(name);
    if (segmentLsn !== undefined) listing.segments.push({ file: name, firstLsn: segmentLsn });
    else if (snapshot !== null) listing.snapshots.push({ file: name, lsn: Number(snapshot[1]) });
    else if (snapshotTemporaryPattern.test(name)) listing.snapshotTemporaries.push(name);
    else if (!ignoredEntries.has(name) && !isLockFileName(name)) listing.foreign.push(name);
  }
  listing.segments.sort((a, b) => a.firstLsn - b.firstLsn);
  listing.snapshots.sort((a, b) => a.lsn - b.lsn);
  return listing;
}

/**
 * Creates a segment (or rewrites the header of one whose creation was torn),
 * makes the header and the directory entry durable, and returns a read-write
 * descriptor positioned by the caller (writes are positional).
 *
 * Both descriptors it needs (the directory's, for its fsync, and the file's)
 * are opened before anything else: a process out of descriptors (EMFILE,
 * ENFILE) fails here having created nothing, so a roll can simply be retried.
 */
export async function createSegment(fileSystem: LogFileSystem, dir: string, firstLsn: Lsn, options: { replaceTorn?: boolean; zeros?: Buffer } = {}): Promise<number> {
  const directoryFd = await fileSystem.openAsync(dir, 'r');
  try {
    const fd = await fileSystem.openAsync(join(dir, segmentFileName(firstLsn)), options.replaceTorn === true ? 'w+' : 'wx+');
    try {
      const header = encodeSegmentHeader(firstLsn);
      // Zero-filled space after the header (zero-fill.ts) rides on the same fsync.
      await writeAllAsync(fileSystem, fd, options.zeros === undefined ? [header] : [header, options.zeros], 0, 'segment header');
      await fileSystem.fsyncAsync(fd);
      await fileSystem.fsyncAsync(directoryFd);
      return fd;
    } catch (error) {
      await fileSystem.closeAsync(fd);
      throw error;
    }
  } finally {
    await fileSystem.closeAsync(directoryFd);
  }
}

export function toSegmentInfo(segment: SegmentState): SegmentInfo {
  const info: { -readonly [K in keyof SegmentInfo]: SegmentInfo[K] } = {
    file: segment.file,
    firstLsn: segment.firstLsn,
    lastLsn: segment.lastLsn,
    bytes: segment.bytes,
  };
  if (segment.timestamps !== undefined) {
    info.firstTimestamp = segment.timestamps.first;
    info.lastTimestamp = segment.timestamps.last;
  }
  return info;
}
