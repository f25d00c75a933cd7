/**
 * Snapshot files: the projections' state as of an LSN, so start-up replays
 * only the records after it. The log stores the bytes; what they mean belongs
 * to the projections.
 *
 * `<lsn, 20 digits>.snap`, format version 1 (little-endian):
 *
 *   offset  bytes  field
 *        0      8  magic      ASCII "CAIRNSNP"
 *        8      2  version    u16 = 1
 *       10      6  reserved   zero
 *       16      8  lsn        u64: the state covers records <= lsn
 *       24      8  length     u64: data bytes
 *       32      8  checksum   xxhash64 of bytes [0, 32) followed by the data
 *       40      n  data
 *
 * Written as `<name>.tmp`, fsynced, renamed, directory fsynced: a crash leaves
 * either the old set of snapshots or the new one, plus at worst a temporary
 * file that start-up deletes. A snapshot that fails any check is ignored (and
 * logged), and the next older valid one is used.
 */
import { constants as bufferConstants } from 'node:buffer';
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import { checksum64Parts } from './checksum.js';
import { fsyncDirectory, writeAllAsync, type LogFileSystem } from './file-system.js';
import type { Lsn } from './record.js';
import { lsnFileStem } from './segment.js';

export const snapshotHeaderBytes = 40;
export const snapshotFormatVersion = 1;
const snapshotMagic = Buffer.from('CAIRNSNP', 'ascii');

export interface Snapshot {
  readonly lsn: Lsn;
  readonly data: Uint8Array;
}

export interface SnapshotFileInfo {
  readonly file: string;
  readonly lsn: Lsn;
  readonly bytes: number;
  readonly valid: boolean;
  readonly reason?: string;
}

export function snapshotFileName(lsn: Lsn): string {
  return `${lsnFileStem(lsn)}.snap`;
}

export function encodeSnapshotHeader(lsn: Lsn, data: Uint8Array): Buffer {
  const header = Buffer.alloc(snapshotHeaderBytes);
  snapshotMagic.copy(header, 0);
  header.writeUInt16LE(snapshotFormatVersion, 8);
  header.writeBigUInt64LE(BigInt(lsn), 16);
  header.writeBigUInt64LE(BigInt(data.length), 24);
  header.writeBigUInt64LE(checksum64Parts([header.subarray(0, 32), data]), 32);
  return header;
}

/** Reads and checks one snapshot file; never throws for bad content, only says why it is invalid. */
export function readSnapshotFile(fileSystem: LogFileSystem, dir: string, file: string, expectedLsn: Lsn): Snapshot | { invalid: string } {
  let contents: Buffer;
  try {
    contents = fileSystem.readFileSync(join(dir, file));
  } catch (error) {
    return { invalid: `cannot read: ${error instanceof Error ? error.message : String(error)}` };
  }
  return decodeSnapshot(contents, expectedLsn);
}

function decodeSnapshot(contents: Buffer, expectedLsn: Lsn): Snapshot | { invalid: string } {
  if (contents.length < snapshotHeaderBytes) return { invalid: `only ${contents.length} bytes, shorter than the header` };
  if (!contents.subarray(0, 8).equals(snapshotMagic)) return { invalid: 'wrong magic' };
  const version = contents.readUInt16LE(8);
  if (version !== snapshotFormatVersion) return { invalid: `unsupported format version ${version}` };
  const lsn = Number(contents.readBigUInt64LE(16));
  if (lsn !== expectedLsn) return { invalid: `header says LSN ${lsn}, the file name says ${expectedLsn}` };
  const length = contents.readBigUInt64LE(24);
  if (length !== BigInt(contents.length - snapshotHeaderBytes)) return { invalid: `header says ${length} data bytes, the file holds ${contents.length - snapshotHeaderBytes} (half-written?)` };
  const data = contents.subarray(snapshotHeaderBytes);
  if (contents.readBigUInt64LE(32) !== checksum64Parts([contents.subarray(0, 32), data])) return { invalid: 'checksum mismatch' };
  return { lsn, data: new Uint8Array(data.buffer, data.byteOffset, data.length) };
}

/** The newest snapshot that passes its checks; invalid ones are logged and skipped (never deleted: forensics). */
export function loadNewestValidSnapshot(fileSystem: LogFileSystem, dir: string, snapshots: readonly { file: string; lsn: Lsn }[], logger: Logger): (Snapshot & { file: string }) | undefined {
  for (let i = snapshots.length - 1; i >= 0; i--) {
    const { file, lsn } = snapshots[i]!;
    const result = readSnapshotFile(fileSystem, dir, file, lsn);
    if ('invalid' in result) {
      logger.warn({ snapshot: file, reason: result.invalid }, 'ignoring invalid snapshot');
      continue;
    }
    return { ...result, file };
  }
  return undefined;
}

/** The LSN of the first valid snapshot at or after `lsn`, reading candidates oldest first; undefined if none. */
export function firstValidSnapshotAtOrAfter(fileSystem: LogFileSystem, dir: string, snapshots: readonly { file: string; lsn: Lsn }[], lsn: Lsn): Lsn | undefined {
  const candidates = snapshots.filter((s) => s.lsn >= lsn).sort((a, b) => a.lsn - b.lsn);
  return candidates.find((s) => !('invalid' in readSnapshotFile(fileSystem, dir, s.file, s.lsn)))?.lsn;
}

export function describeSnapshots(fileSystem: LogFileSystem, dir: string, snapshots: readonly { file: string; lsn: Lsn }[]): SnapshotFileInfo[] {
  return snapshots.map(({ file, lsn }) => {
    const result = readSnapshotFile(fileSystem, dir, file, lsn);
    const bytes = fileBytesOrZero(fileSystem, join(dir, file));
    return 'invalid' in result ? { file, lsn, bytes, valid: false, reason: result.invalid } : { file, lsn, bytes, valid: true };
  });
}

function fileBytesOrZero(fileSystem: LogFileSystem, path: string): number {
  try {
    return fileSystem.statSync(path).size;
  } catch {
    return 0;
  }
}

/** Temp file, fsync, rename, fsync directory. Returns the file name. */
export async function writeSnapshotFile(fileSystem: LogFileSystem, dir: string, lsn: Lsn, data: Uint8Array): Promise<string> {
  if (data.length > bufferConstants.MAX_LENGTH - snapshotHeaderBytes) throw new RangeError(`snapshot of ${data.length} bytes is too large to read back`);
  const file = snapshotFileName(lsn);
  const temporary = join(dir, `${file}.tmp`);
  const fd = await fileSystem.openAsync(temporary, 'w');
  try {
    const header = encodeSnapshotHeader(lsn, data);
    await writeAllAsync(fileSystem, fd, [header, data], 0, 'snapshot');
    await fileSystem.fsyncAsync(fd);
  } finally {
    await fileSystem.closeAsync(fd);
  }
  await fileSystem.renameAsync(temporary, join(dir, file));
  await fsyncDirectory(fileSystem, dir);
  return file;
}
