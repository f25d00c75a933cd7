/**
 * SegmentedLog.readRecord beyond the log contract (test/contract): what only a
 * file log has. One positioned read per record; the history (segments before
 * the newest snapshot, which start-up does not read) indexed on first read;
 * damage found at read time, naming segment and LSN, without stopping the
 * reads of other records; descriptors closed when retention removes a
 * segment; records lost with a failed write or with the operator's override.
 */
import * as fs from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { countingFileSystem } from '../../test/support/counting-file-system.js';
import { tempDirectory } from '../../test/support/kit.js';
import { CorruptRecordError, LogClosedError, NoSuchRecordError, SegmentedLog, type AppendRecord, type SegmentInfo } from './index.js';
import { nodeFileSystem, type LogFileSystem } from './file-system.js';
import { frameHeaderBytes, frameLength } from './record.js';
import { segmentHeaderBytes } from './segment.js';
import { encodeSnapshotHeader, snapshotFileName } from './snapshot.js';

const root = tempDirectory('cairn-read-record-');
afterAll(() => root.remove());
let dirCounter = 0;
const freshDir = (): string => join(root.path, String(dirCounter++));

const recordNumbered = (n: number): AppendRecord => ({ kind: 2, timestamp: n, body: { n, payload: new Uint8Array(40).fill(n) } });

async function logOf(dir: string, count: number, options: { segmentBytesMax?: number; fileSystem?: LogFileSystem } = {}): Promise<SegmentedLog> {
  const log = await SegmentedLog.open({ dir, segmentBytesMax: 512, ...options });
  for (let n = 1; n <= count; n++) await log.append([recordNumbered(n)]);
  return log;
}

/**
 * A closed log of `count` records in small segments, with a snapshot at its last record: every segment
 * but the last is history, which the next open does not read.
 */
async function closedLogWithHistory(count: number): Promise<{ dir: string; segments: SegmentInfo[] }> {
  const dir = freshDir();
  const writer = await logOf(dir, count);
  await writer.writeSnapshot(count, new Uint8Array([1]));
  const segments = writer.segments();
  await writer.close();
  return { dir, segments };
}

/** The file offset of every frame of a segment file, by walking the length fields. */
function frameOffsets(path: string): number[] {
  const bytes = fs.readFileSync(path);
  const offsets: number[] = [];
  for (let at = segmentHeaderBytes; at + frameHeaderBytes <= bytes.length && frameLength(bytes, at) > 0; at += frameLength(bytes, at)) offsets.push(at);
  return offsets;
}

function flipByte(path: string, offset: number): void {
  const fd = fs.openSync(path, 'r+');
  const byte = Buffer.alloc(1);
  fs.readSync(fd, byte, 0, 1, offset);
  byte[0] = byte[0]! ^ 0x20;
  fs.writeSync(fd, byte, 0, 1, offset);
  fs.closeSync(fd);
}

/** Where LSN `lsn` is: its segment and the file offset of its frame. */
function placeOf(dir: string, segments: readonly SegmentInfo[], lsn: number): { segment: SegmentInfo; path: string; offset: number } {
  const segment = segments.find((s) => s.firstLsn <= lsn && lsn <= s.lastLsn)!;
  const path = join(dir, segment.file);
  return { segment, path, offset: frameOffsets(path)[lsn - segment.firstLsn]! };
}

describe('reading a record by LSN from a file log', () => {
  it('takes at most one positioned read per record once its segment is open (one per window read in log order), and indexes a history segment with one scan', async () => {
    const { dir, segments } = await closedLogWithHistory(30);
    expect(segments.length).toBeGreaterThan(3);
    expect(segments.length).toBeLessThanOrEqual(8);
    const fileSystem = countingFileSystem();
    const log = await SegmentedLog.open({ dir, segmentBytesMax: 512, fileSystem });
    // The first segment is history (before the snapshot's segment): unread at start-up, indexed by one scan now.
    const [reads, opens] = [fileSystem.reads, fileSystem.opens];
    expect(log.readRecord(1).body).toMatchObject({ n: 1 });
    expect([fileSystem.reads - reads, fileSystem.opens - opens]).toEqual([2, 1]);
    // In log order, a read-ahead window holds the rest of each small segment: per segment one read, and one scan
    // to index those of the history (every one but the last: the snapshot is at the last record).
    const forward = [fileSystem.reads, fileSystem.opens];
    for (let lsn = 2; lsn <= 30; lsn++) expect(log.readRecord(lsn)).toMatchObject({ lsn, kind: 2, timestamp: lsn, body: { n: lsn } });
    expect(fileSystem.reads - forward[0]!).toBeLessThanOrEqual(2 * (segments.length - 1) - 1);
    // Backwards, a window (which starts at the frame read) holds none of the earlier records.
    const before = [fileSystem.reads, fileSystem.opens];
    for (let lsn = 30; lsn >= 1; lsn--) expect(log.readRecord(lsn)).toMatchObject({ lsn, kind: 2, timestamp: lsn, body: { n: lsn } });
    expect(fileSystem.reads - before[0]!).toBeLessThanOrEqual(30);
    expect(fileSystem.opens - before[1]!).toBe(0);
    await log.close();
    expect(fileSystem.openFiles.size).toBe(0);
  });

  it('a flipped byte inside one record of a closed log: that LSN throws CorruptRecordError naming segment and LSN, every other LSN reads', async () => {
    const { dir, segments } = await closedLogWithHistory(40);
    // A record in the middle of a sealed segment, not its first or last: the reads around it must still work.
    const damaged = segments[1]!.firstLsn + 1;
    expect(segments[1]!.lastLsn).toBeGreaterThan(damaged);
    const { segment, path, offset } = placeOf(dir, segments, damaged);
    flipByte(path, offset + frameHeaderBytes + 5);
    const log = await SegmentedLog.open({ dir, segmentBytesMax: 512 });
    const error = (() => {
      try {
        log.readRecord(damaged);
      } catch (thrown) {
        return thrown;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(CorruptRecordError);
    expect(error).toMatchObject({ code: 'ECORRUPTRECORD', segment: segment.file, lsn: damaged, offset });
    expect((error as Error).message).toContain(`segment ${segment.file} at LSN ${damaged}`);
    for (let lsn = 1; lsn <= 40; lsn++) if (lsn !== damaged) expect(log.readRecord(lsn).body).toMatchObject({ n: lsn });
    // Still damaged on the next read; the log itself goes on.
    expect(() => log.readRecord(damaged)).toThrow(CorruptRecordError);
    expect(await log.appendOne(recordNumbered(41))).toBe(41);
    await log.close();
  });

  it('a flipped length field in a history segment: that LSN and the later ones of its segment throw, naming segment and LSN; the other segments read', async () => {
    const { dir, segments } = await closedLogWithHistory(40);
    const damaged = segments[1]!.firstLsn + 1;
    const { segment, path, offset } = placeOf(dir, segments, damaged);
    // The length field is bytes 8..11 of the frame: its high byte makes the length implausible.
    flipByte(path, offset + 11);
    const log = await SegmentedLog.open({ dir, segmentBytesMax: 512 });
    for (let lsn = 1; lsn <= 40; lsn++) {
      if (lsn < damaged || lsn > segment.lastLsn) expect(log.readRecord(lsn).body).toMatchObject({ n: lsn });
      else expect(() => log.readRecord(lsn)).toThrow(expect.objectContaining({ segment: segment.file, lsn, message: expect.stringContaining(`cannot be followed from LSN ${damaged} on`) as unknown }));
    }
    await log.close();
  });

  it('a byte flipped under an open log in a segment already indexed is caught by the checksum at read time', async () => {
    const dir = freshDir();
    const log = await logOf(dir, 20);
    expect(log.readRecord(7).body).toMatchObject({ n: 7 });
    // A record of another segment, which no read-ahead window holds yet (a window holds what it read before the damage).
    const damaged = log.segments().find((s) => s.firstLsn > 8)!.firstLsn + 1;
    const { segment, path, offset } = placeOf(dir, log.segments(), damaged);
    flipByte(path, offset + frameHeaderBytes + 3);
    expect(() => log.readRecord(damaged)).toThrow(expect.objectContaining({ code: 'ECORRUPTRECORD', segment: segment.file, lsn: damaged }));
    expect(log.readRecord(8).body).toMatchObject({ n: 8 });
    expect(log.readRecord(damaged - 1).body).toMatchObject({ n: damaged - 1 });
    await log.close();
  });

  it('closes the read descriptor of every segment retention removes, and refuses its LSNs', async () => {
    const dir = freshDir();
    const fileSystem = countingFileSystem();
    const log = await logOf(dir, 30, { fileSystem });
    for (let lsn = 1; lsn <= 30; lsn++) log.readRecord(lsn);
    await log.writeSnapshot(10, new Uint8Array([1]));
    await log.writeSnapshot(30, new Uint8Array([2]));
    await log.close();
    const reopened = await SegmentedLog.open({ dir, segmentBytesMax: 512, fileSystem, retentionBytes: 0 });
    for (let lsn = 1; lsn <= 30; lsn++) reopened.readRecord(lsn);
    const { removed } = await reopened.applyRetention();
    expect(removed.length).toBeGreaterThan(0);
    const openPaths = [...fileSystem.openFiles.values()];
    for (const file of removed) expect(openPaths).not.toContain(join(dir, file));
    expect(() => reopened.readRecord(1)).toThrow(NoSuchRecordError);
    expect(() => reopened.readRecord(1)).toThrow(`readable: LSN ${reopened.firstLsn}..30`);
    await reopened.close();
  });

  it('an LSN appended but never written (the write failed) is refused with the failure; a closed log refuses every read', async () => {
    const dir = freshDir();
    let failWrites = false;
    const fileSystem: LogFileSystem = {
      ...nodeFileSystem,
      write: (fd, buffer, offset, length, position, callback) => {
        if (failWrites) return void setImmediate(() => callback(Object.assign(new Error('EIO: injected'), { code: 'EIO' }), 0));
        nodeFileSystem.write(fd, buffer, offset, length, position, callback);
      },
    };
    const log = await SegmentedLog.open({ dir, fileSystem });
    await log.appendOne(recordNumbered(1));
    failWrites = true;
    const doomed = log.appendOne(recordNumbered(2));
    expect(log.readRecord(2).body).toMatchObject({ n: 2 });
    await expect(doomed).rejects.toThrow(/segment write failed/);
    expect(() => log.readRecord(2)).toThrow(expect.objectContaining({ code: 'ENORECORD', message: expect.stringContaining('appended but never written') as unknown }));
    expect(log.readRecord(1).body).toMatchObject({ n: 1 });
    await log.close();
    expect(() => log.readRecord(1)).toThrow(LogClosedError);
  });

  it('LSNs lost with the newest segments (the operator started from the snapshot) are refused by name', async () => {
    const dir = freshDir();
    const writer = await logOf(dir, 6);
    await writer.close();
    const data = new Uint8Array([1]);
    fs.writeFileSync(join(dir, snapshotFileName(50)), Buffer.concat([encodeSnapshotHeader(50, data), data]));
    const log = await SegmentedLog.open({ dir, segmentBytesMax: 512, acceptLostRecordsAfter: 6 });
    expect(await log.appendOne(recordNumbered(51))).toBe(51);
    expect(log.readRecord(6).body).toMatchObject({ n: 6 });
    expect(log.readRecord(51).body).toMatchObject({ n: 51 });
    expect(() => log.readRecord(20)).toThrow(expect.objectContaining({ code: 'ENORECORD', message: expect.stringContaining('LSN 7..50 were lost') as unknown }));
    await log.close();
  });
});
