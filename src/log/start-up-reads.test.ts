/**
 * What a start-up reads, counted through the log's file system: the newest
 * snapshot once (open checks it, the first loadSnapshot gets what open read),
 * and a replay from the snapshot's LSN only the frames from that LSN on (the
 * segment was scanned at open: its offsets say where the frame starts).
 * Also: the snapshot checksum of a large snapshot, fed to the hasher in
 * slices, equals the checksum of its bytes in one piece.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { countingFileSystem } from '../../test/support/counting-file-system.js';
import { seededRandom, tempDirectory, testSeed, announceSeed } from '../../test/support/kit.js';
import { checksum64, checksum64Parts } from './checksum.js';
import { SegmentedLog, type AppendRecord } from './index.js';

const root = tempDirectory('cairn-start-up-reads-');
afterAll(() => root.remove());
let dirCounter = 0;
const freshDir = (): string => join(root.path, String(dirCounter++));

const recordNumbered = (n: number): AppendRecord => ({ kind: 2, timestamp: n, body: { n, payload: new Uint8Array(200).fill(n & 0xff) } });

/** A closed log of `count` records in one segment, with a snapshot at `snapshotLsn`. */
async function closedLog(count: number, snapshotLsn: number): Promise<string> {
  const dir = freshDir();
  const log = await SegmentedLog.open({ dir });
  await log.append(Array.from({ length: count }, (_, i) => recordNumbered(i + 1)));
  await log.writeSnapshot(snapshotLsn, new Uint8Array([1, 2, 3]));
  await log.close();
  return dir;
}

describe('start-up reads', () => {
  it('reads the newest snapshot once: the first loadSnapshot after open gets what open read and checked; a later one reads the file', async () => {
    const dir = await closedLog(50, 40);
    const fileSystem = countingFileSystem();
    const log = await SegmentedLog.open({ dir, fileSystem });
    expect(fileSystem.snapshotReads).toBe(1);
    expect(log.loadSnapshot()).toEqual({ lsn: 40, data: new Uint8Array([1, 2, 3]) });
    expect(fileSystem.snapshotReads).toBe(1);
    expect(log.loadSnapshot()).toEqual({ lsn: 40, data: new Uint8Array([1, 2, 3]) });
    expect(fileSystem.snapshotReads).toBe(2);
    await log.close();
  });

  it('a snapshot written after open is the one loadSnapshot returns, not the one open read', async () => {
    const dir = await closedLog(50, 40);
    const log = await SegmentedLog.open({ dir });
    await log.writeSnapshot(45, new Uint8Array([9]));
    expect(log.loadSnapshot()).toEqual({ lsn: 45, data: new Uint8Array([9]) });
    await log.close();
  });

  it('a read from the LSN after the snapshot reads only the frames from there on, and yields exactly the records a read from the start yields after it', async () => {
    const count = 2000;
    const dir = await closedLog(count, count - 10);
    const fileSystem = countingFileSystem();
    const log = await SegmentedLog.open({ dir, fileSystem });
    const segmentBytes = log.segments()[0]!.bytes;
    const before = fileSystem.bytesRead;
    const tail = [...log.read({ lsn: count - 9 })];
    const tailBytes = fileSystem.bytesRead - before;
    expect(tail.map((r) => r.lsn)).toEqual(Array.from({ length: 10 }, (_, i) => count - 9 + i));
    // Ten frames of ~250 bytes, not the whole segment (~500 KB) the read walked before.
    expect(tailBytes).toBeLessThan(segmentBytes / 20);
    const fromStart = [...log.read({})].filter((r) => r.lsn >= count - 9);
    expect(tail).toEqual(fromStart);
    // From the first LSN, from one past the end, and by time: unchanged.
    expect([...log.read({ lsn: 1 })].length).toBe(count);
    expect([...log.read({ lsn: count + 1 })]).toEqual([]);
    expect([...log.read({ lsn: count - 9, time: count - 3 })].map((r) => r.lsn)).toEqual([count - 3, count - 2, count - 1, count]);
    await log.close();
  });

  it('checksum64Parts feeds large parts in slices: equal to the checksum of the concatenation', () => {
    announceSeed('start-up-reads checksum');
    const random = seededRandom(testSeed);
    for (const sizes of [[0], [32, 0], [32, 256 * 1024], [32, 256 * 1024 + 1], [7, 3 * 256 * 1024 - 5, 1, 600_000]]) {
      const parts = sizes.map((size) => Uint8Array.from({ length: size }, () => Math.floor(random() * 256)));
      const whole = new Uint8Array(sizes.reduce((sum, size) => sum + size, 0));
      let at = 0;
      for (const part of parts) {
        whole.set(part, at);
        at += part.length;
      }
      expect(checksum64Parts(parts)).toBe(checksum64(whole));
    }
  });
});
