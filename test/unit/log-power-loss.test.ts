/**
 * What the simulated power-loss property (test/property/log-power-loss.test.ts)
 * found in the log, each pinned to one power loss on the simulated disk
 * (test/support/simulated-storage.ts) so it stays found:
 * - a new data directory's entry must be fsynced into its parent, or a power
 *   loss takes the directory with every acknowledged record;
 * - an archive directory inside a fresh data directory is not a foreign file;
 * - a last segment whose header never became durable (it reads back torn, or
 *   as zeros) is an interrupted creation, not damage;
 * - retention removes one file per directory fsync, so a power loss leaves a
 *   prefix of the segments removed, never a hole in the LSN chain.
 */
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { openLogReader, SegmentedLog, SegmentHeaderError, type AppendRecord } from '../../src/log/index.js';
import { encodeSegmentHeader, segmentFileName, segmentHeaderBytes } from '../../src/log/segment.js';
import { silentLogger } from '../../src/logger.js';
import { SimulatedStorage } from '../support/simulated-storage.js';

const logger = silentLogger();
const record = (i: number): AppendRecord => ({ kind: 1, timestamp: 1_700_000_000_000 + i, body: { i, padding: 'x'.repeat(60) } });
const everythingUnsyncedLost = { writes: 'all-lost', entries: 'all-lost' } as const;

async function appendEach(log: SegmentedLog, count: number): Promise<void> {
  for (let i = 1; i <= count; i++) await log.appendOne(record(i));
}

function lsnsOf(log: SegmentedLog): number[] {
  return [...log.read({ lsn: log.firstLsn })].map((r) => r.lsn);
}

describe('the log after a simulated power loss', () => {
  it('keeps a data directory it created, with the acknowledged records in it', async () => {
    const dir = '/srv/cairn/data';
    const disk = new SimulatedStorage({ seed: 1 });
    const log = await SegmentedLog.open({ dir, fileSystem: disk, logger });
    await appendEach(log, 3);
    const rebooted = disk.powerLoss({ seed: 1, model: everythingUnsyncedLost });
    const reopened = await SegmentedLog.open({ dir, fileSystem: rebooted, logger });
    expect(lsnsOf(reopened)).toEqual([1, 2, 3]);
  });

  it('opens a data directory holding only its archive directory (a crash came before the first segment) as a new log', async () => {
    const disk = new SimulatedStorage({ seed: 2 });
    await disk.mkdirAsync('/data/archive');
    const log = await SegmentedLog.open({ dir: '/data', archiveDir: '/data/archive', fileSystem: disk, logger });
    expect(log.nextLsn).toBe(1);
    await log.appendOne(record(1));
    expect(lsnsOf(log)).toEqual([1]);
  });

  describe('a last segment whose header never became durable', () => {
    const dir = '/data';
    type Tear = (expected: Buffer) => Buffer;

    /** A log whose first segment is full, and a second segment file as a power loss during the roll left it. */
    async function withTornSecondSegment(tear: Tear, after: Buffer): Promise<{ disk: SimulatedStorage; lastLsn: number }> {
      const disk = new SimulatedStorage({ seed: 3 });
      const log = await SegmentedLog.open({ dir, fileSystem: disk, logger, segmentBytesMax: 256 });
      let lastLsn = 0;
      while (log.segments()[0]!.bytes < 256) lastLsn = await log.appendOne(record(lastLsn + 1));
      expect(log.segments()).toHaveLength(1);
      await log.close();
      const contents = Buffer.concat([tear(encodeSegmentHeader(lastLsn + 1)), after]);
      const fd = disk.openSync(join(dir, segmentFileName(lastLsn + 1)), 'wx+');
      disk.writeSync(fd, contents, 0, contents.length, 0);
      disk.closeSync(fd);
      return { disk, lastLsn };
    }

    const zeros: Tear = (expected) => Buffer.alloc(expected.length);
    const cutAt13: Tear = (expected) => Buffer.concat([expected.subarray(0, 13), Buffer.alloc(expected.length - 13)]);

    it.each([
      ['all zeros, zero-filled after', zeros, Buffer.alloc(256)],
      ['cut at byte 13, zeros after', cutAt13, Buffer.alloc(0)],
    ])('is rewritten when it reads back %s; verify agrees, and appends go on', async (_, tear, after) => {
      const { disk, lastLsn } = await withTornSecondSegment(tear, after);
      expect(openLogReader(dir, { fileSystem: disk }).verify()).toMatchObject({ ok: true, lastLsn, tornTail: { lsn: lastLsn + 1 } });
      const warnings: Record<string, unknown>[] = [];
      const warningLogger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line) as Record<string, unknown>) });
      const log = await SegmentedLog.open({ dir, fileSystem: disk, logger: warningLogger, segmentBytesMax: 256 });
      expect(warnings.map((w) => w['reason'])).toEqual(['segment creation was interrupted before its header was durable']);
      expect(await log.appendOne(record(lastLsn + 1))).toBe(lastLsn + 1);
      expect(lsnsOf(log)).toEqual(Array.from({ length: lastLsn + 1 }, (_, i) => i + 1));
    });

    it.each([
      ['a header byte that is neither zero nor the expected one', (expected: Buffer) => Object.assign(Buffer.alloc(expected.length), { [3]: 0x41 }), Buffer.alloc(64)],
      ['a zero header followed by data', zeros, Buffer.from('not zeros')],
    ])('is damage, not a torn creation, with %s', async (_, tear, after) => {
      const { disk } = await withTornSecondSegment(tear, after);
      await expect(SegmentedLog.open({ dir, fileSystem: disk, logger, segmentBytesMax: 256 })).rejects.toBeInstanceOf(SegmentHeaderError);
    });
  });

  it('leaves a prefix of the segments removed when the power goes during retention, never a hole', async () => {
    let holesAvoided = 0;
    for (let seed = 0; seed < 40; seed++) {
      const dir = '/data';
      const disk = new SimulatedStorage({ seed, model: { writes: 'in-order', entries: 'any-subset' } });
      const log = await SegmentedLog.open({ dir, fileSystem: disk, logger, segmentBytesMax: 256, retentionBytes: 0 });
      // Retention keeps a snapshot before the window (the one at 20) and removes the segments it covers.
      await appendEach(log, 20);
      await log.writeSnapshot(20, new Uint8Array([2]));
      await appendEach(log, 20);
      await log.writeSnapshot(40, new Uint8Array([4]));
      // Retention makes about three calls per segment removed; the power goes somewhere in the middle.
      disk.crashAfter(3 + (seed % 20));
      await log.applyRetention().catch(() => undefined);
      const reopened = await SegmentedLog.open({ dir, fileSystem: disk.powerLoss({ seed }), logger, segmentBytesMax: 256 });
      const lsns = lsnsOf(reopened);
      expect(lsns, `seed ${seed}: the records from the first kept segment on, without a gap`).toEqual(Array.from({ length: 41 - reopened.firstLsn }, (_, i) => reopened.firstLsn + i));
      expect(openLogReader(dir, { fileSystem: disk.powerLoss({ seed }) }).verify().ok).toBe(true);
      if (reopened.firstLsn > 1) holesAvoided += 1;
    }
    expect(holesAvoided, 'some power losses came after segments were removed').toBeGreaterThan(5);
  });
});
