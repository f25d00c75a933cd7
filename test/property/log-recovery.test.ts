/**
 * Recovery on open, following the decision table in src/log/recovery.ts:
 * - any truncation point of the last segment: exactly the records wholly
 *   before it survive, a warning names the LSN and bytes dropped, and appends
 *   continue with the next LSN;
 * - any corrupted byte in the tail record: that record is dropped as torn;
 * - any corrupted byte in a non-tail record (a middle segment, or the last
 *   segment with valid records after it): open refuses with CorruptRecordError
 *   naming the segment and the LSN;
 * - one example per remaining row (headers, LSN gaps, snapshots that do not fit).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { pino, type Logger } from 'pino';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { checksum64 } from '../../src/log/checksum.js';
import { CorruptRecordError, judgeDataDirectory, LogInconsistentError, LostRecordsError, SegmentedLog, SegmentHeaderError, type AppendRecord } from '../../src/log/index.js';
import { encodeFrame } from '../../src/log/record.js';
import { encodeSegmentHeader, segmentHeaderBytes } from '../../src/log/segment.js';
import { encodeSnapshotHeader, snapshotFileName } from '../../src/log/snapshot.js';
import { announceSeed } from '../support/kit.js';
import { withoutSyncs } from '../support/unsynced-file-system.js';

// Hundreds of small logs (opened without syncs: test/support/unsynced-file-system.ts); the guard is for hangs.
vi.setConfig({ testTimeout: 240_000 });

const root = fs.mkdtempSync(join(os.tmpdir(), 'cairn-log-recovery-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let dirCounter = 0;
const freshDir = (): string => join(root, String(dirCounter++));

const record: fc.Arbitrary<AppendRecord> = fc.record({
  kind: fc.integer({ min: 1, max: 255 }),
  timestamp: fc.integer({ min: 0, max: 4_000_000_000_000 }),
  body: fc.record({ n: fc.integer(), payload: fc.uint8Array({ maxLength: 200 }) }),
});

interface Placed {
  readonly lsn: number;
  readonly segment: string;
  readonly start: number;
  readonly end: number;
}

/** Appends each record in its own commit (so small segments roll), closes, and returns where each frame sits. */
async function buildLog(dir: string, records: readonly AppendRecord[], segmentBytesMax: number): Promise<{ placed: Placed[]; segments: { file: string; bytes: number }[] }> {
  const log = await SegmentedLog.open({ dir, segmentBytesMax, ...withoutSyncs });
  for (const r of records) await log.appendOne(r);
  const segments = log.segments();
  const placed: Placed[] = [];
  let index = -1;
  let offset = 0;
  for (const r of log.read()) {
    while (index + 1 < segments.length && segments[index + 1]!.firstLsn <= r.lsn) {
      index += 1;
      offset = segmentHeaderBytes;
    }
    placed.push({ lsn: r.lsn, segment: segments[index]!.file, start: offset, end: offset + r.size });
    offset += r.size;
  }
  await log.close();
  return { placed, segments: segments.map((s) => ({ file: s.file, bytes: s.bytes })) };
}

function captureLogger(): { logger: Logger; warnings: Record<string, unknown>[] } {
  const warnings: Record<string, unknown>[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, warnings };
}

function writeAt(path: string, offset: number, bytes: Uint8Array): void {
  const fd = fs.openSync(path, 'r+');
  fs.writeSync(fd, bytes, 0, bytes.length, offset);
  fs.closeSync(fd);
}

function flipByte(path: string, offset: number, xor: number): void {
  const fd = fs.openSync(path, 'r+');
  const byte = Buffer.alloc(1);
  fs.readSync(fd, byte, 0, 1, offset);
  byte[0] = byte[0]! ^ xor;
  fs.writeSync(fd, byte, 0, 1, offset);
  fs.closeSync(fd);
}

async function expectRecords(dir: string, count: number, logger?: Logger): Promise<SegmentedLog> {
  const log = await SegmentedLog.open(logger === undefined ? { dir, segmentBytesMax: 256, ...withoutSyncs } : { dir, segmentBytesMax: 256, logger, ...withoutSyncs });
  const records = [...log.read()];
  expect(records.map((r) => r.lsn)).toEqual(Array.from({ length: count }, (_, i) => i + 1));
  expect(log.nextLsn).toBe(count + 1);
  // Reads by LSN agree: the offset index recovery built from its scan matches the frames it kept.
  for (const record of records) expect(log.readRecord(record.lsn)).toEqual(record);
  return log;
}

describe('torn tail recovery', () => {
  it('keeps exactly the records wholly before any truncation point of the last segment, then appends continue', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(record, { minLength: 1, maxLength: 12 }), fc.constantFrom(256, 1024, 1 << 20), fc.nat(), async (records, segmentBytesMax, cutSeed) => {
        const dir = freshDir();
        const { placed, segments } = await buildLog(dir, records, segmentBytesMax);
        const last = segments[segments.length - 1]!;
        const cut = cutSeed % (last.bytes + 1);
        fs.truncateSync(join(dir, last.file), cut);
        const kept = placed.filter((p) => p.segment !== last.file || p.end <= cut).length;
        const { logger, warnings } = captureLogger();
        const log = await expectRecords(dir, kept, logger);
        const keptEnd = Math.max(segmentHeaderBytes, ...placed.filter((p) => p.segment === last.file && p.end <= cut).map((p) => p.end));
        if (cut !== keptEnd) {
          const warning = warnings.find((w) => String(w['msg']).includes('torn'));
          expect(warning).toMatchObject({ segment: last.file, lsn: kept + 1 });
          expect(warning?.['bytesDropped']).toBe(cut < segmentHeaderBytes ? cut : cut - keptEnd);
        } else {
          expect(warnings).toEqual([]);
        }
        expect(await log.appendOne({ kind: 1, timestamp: 0, body: 'next' })).toBe(kept + 1);
        await log.close();
        (await expectRecords(dir, kept + 1)).close();
        fs.rmSync(dir, { recursive: true });
      }),
      { numRuns: 150 },
    );
  });

  it('drops the tail record when any of its bytes is corrupted', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(record, { minLength: 1, maxLength: 8 }), fc.nat(), fc.integer({ min: 1, max: 255 }), async (records, byteSeed, xor) => {
        const dir = freshDir();
        const { placed } = await buildLog(dir, records, 1 << 20);
        const tail = placed[placed.length - 1]!;
        flipByte(join(dir, tail.segment), tail.start + (byteSeed % (tail.end - tail.start)), xor);
        // Truncation drops the torn record and the zero-filled space after it.
        const fileBytes = fs.statSync(join(dir, tail.segment)).size;
        const { logger, warnings } = captureLogger();
        const log = await expectRecords(dir, records.length - 1, logger);
        expect(warnings.some((w) => w['lsn'] === tail.lsn && w['bytesDropped'] === fileBytes - tail.start)).toBe(true);
        await log.close();
        fs.rmSync(dir, { recursive: true });
      }),
      { numRuns: 150 },
    );
  });
});

describe('mid-log corruption', () => {
  const corruptionCase = fc.record({ records: fc.array(record, { minLength: 3, maxLength: 10 }), which: fc.nat(), byteSeed: fc.nat(), xor: fc.integer({ min: 1, max: 255 }) });

  it('refuses to open when any byte of a record in a middle segment is corrupted', async () => {
    await fc.assert(
      fc.asyncProperty(corruptionCase, async ({ records, which, byteSeed, xor }) => {
        const dir = freshDir();
        const { placed, segments } = await buildLog(dir, records, 256);
        const lastFile = segments[segments.length - 1]!.file;
        const candidates = placed.filter((p) => p.segment !== lastFile);
        fc.pre(candidates.length > 0);
        const victim = candidates[which % candidates.length]!;
        flipByte(join(dir, victim.segment), victim.start + (byteSeed % (victim.end - victim.start)), xor);
        await expectCorrupt(dir, victim);
        fs.rmSync(dir, { recursive: true });
      }),
      { numRuns: 100 },
    );
  });

  it('refuses to open when a record of the last segment is corrupted and valid records follow it', async () => {
    await fc.assert(
      fc.asyncProperty(corruptionCase, async ({ records, which, byteSeed, xor }) => {
        const dir = freshDir();
        const { placed } = await buildLog(dir, records, 1 << 20);
        const victim = placed[which % (placed.length - 1)]!;
        flipByte(join(dir, victim.segment), victim.start + (byteSeed % (victim.end - victim.start)), xor);
        await expectCorrupt(dir, victim);
        fs.rmSync(dir, { recursive: true });
      }),
      { numRuns: 100 },
    );
  });

  async function expectCorrupt(dir: string, victim: Placed): Promise<void> {
    const error = await SegmentedLog.open({ dir }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(CorruptRecordError);
    const corrupt = error as CorruptRecordError;
    expect(corrupt.code).toBe('ECORRUPTRECORD');
    expect({ segment: corrupt.segment, lsn: corrupt.lsn, offset: corrupt.offset }).toEqual({ segment: victim.segment, lsn: victim.lsn, offset: victim.start });
    expect(corrupt.message).toContain(victim.segment);
    expect(corrupt.message).toContain(`LSN ${victim.lsn}`);
    // Refusing means not repairing: the file is left as it was.
    expect(fs.statSync(join(dir, victim.segment)).size).toBeGreaterThanOrEqual(victim.end);
    await expectJudgedRefusal(dir, corrupt);
  }
});

describe('recovery decision table, one example per remaining row', () => {
  const someRecords = Array.from({ length: 6 }, (_, i): AppendRecord => ({ kind: 1, timestamp: i, body: { i, pad: 'x'.repeat(100) } }));

  it('a segment with the wrong magic is a SegmentHeaderError', async () => {
    const dir = freshDir();
    const { segments } = await buildLog(dir, someRecords, 256);
    flipByte(join(dir, segments[0]!.file), 0, 0x20);
    await expect(SegmentedLog.open({ dir })).rejects.toThrow(SegmentHeaderError);
  });

  it('a segment of an unknown format version is a SegmentHeaderError that says so', async () => {
    const dir = freshDir();
    const { segments } = await buildLog(dir, someRecords, 256);
    const header = encodeSegmentHeader(1);
    header.writeUInt16LE(2, 8);
    header.writeBigUInt64LE(checksum64(header.subarray(0, 24)), 24);
    const fd = fs.openSync(join(dir, segments[0]!.file), 'r+');
    fs.writeSync(fd, header, 0, header.length, 0);
    fs.closeSync(fd);
    await expect(SegmentedLog.open({ dir })).rejects.toThrow(/unsupported format version 2/);
  });

  it('a header whose first LSN differs from the file name is a SegmentHeaderError', async () => {
    const dir = freshDir();
    const { segments } = await buildLog(dir, someRecords, 256);
    fs.renameSync(join(dir, segments[1]!.file), join(dir, '00000000000000000099.seg'));
    await expect(SegmentedLog.open({ dir })).rejects.toThrow(/file name says 99/);
  });

  it('a short header on a non-last segment is a SegmentHeaderError', async () => {
    const dir = freshDir();
    const { segments } = await buildLog(dir, someRecords, 256);
    expect(segments.length).toBeGreaterThan(2);
    fs.truncateSync(join(dir, segments[1]!.file), 10);
    await expect(SegmentedLog.open({ dir })).rejects.toThrow(SegmentHeaderError);
  });

  it('an intact frame with the wrong LSN at the end of the last segment is corruption, not a torn tail', async () => {
    const dir = freshDir();
    const { segments } = await buildLog(dir, someRecords, 1 << 20);
    // Right after the last frame, in the zero-filled space.
    writeAt(join(dir, segments[0]!.file), segments[0]!.bytes, encodeFrame(42, { kind: 1, timestamp: 0, body: 'misplaced' }));
    await expect(SegmentedLog.open({ dir })).rejects.toThrow(/holds LSN 42 where 7 was expected/);
  });

  it('a missing middle segment (LSN gap) that replay reads is a LogInconsistentError naming the missing LSNs; verify says the same', async () => {
    const dir = freshDir();
    const { segments, placed } = await buildLog(dir, someRecords, 256);
    fs.unlinkSync(join(dir, segments[1]!.file));
    const missing = placed.filter((p) => p.segment === segments[1]!.file).map((p) => p.lsn);
    const error = await openError(dir);
    expect(error).toBeInstanceOf(LogInconsistentError);
    expect(error.message).toContain(`LSN ${missing[0]}..${missing[missing.length - 1]} are missing, and replay (from LSN 1) needs them`);
    await expectJudgedRefusal(dir, error);
  });

  it('a missing first segment with no snapshot to start from is a LogInconsistentError', async () => {
    const dir = freshDir();
    const { segments } = await buildLog(dir, someRecords, 256);
    fs.unlinkSync(join(dir, segments[0]!.file));
    await expect(SegmentedLog.open({ dir })).rejects.toThrow(/replay must start at LSN 1/);
  });

  it('a valid snapshot past the end of the log (newest segments missing) is a LostRecordsError naming the override; verify says the same', async () => {
    const dir = freshDir();
    await buildLog(dir, someRecords, 256);
    writeSnapshot(dir, 50);
    const error = await openError(dir);
    expect(error).toBeInstanceOf(LostRecordsError);
    expect(error.message).toContain('the log ends at LSN 6 but the newest valid snapshot covers LSN 50');
    expect(error.message).toContain('--accept-lost-records-after 6');
    await expectJudgedRefusal(dir, error);
    // An override naming another end is refused too: it was meant for another loss.
    await expect(SegmentedLog.open({ dir, acceptLostRecordsAfter: 5 })).rejects.toThrow(/the log ends at LSN 6, not 5/);
  });

  it('with the override naming the end, the log starts from the snapshot in a new segment; the lost range is history damage from then on', async () => {
    const dir = freshDir();
    await buildLog(dir, someRecords, 256);
    writeSnapshot(dir, 50);
    const { logger, warnings } = captureLogger();
    let log = await SegmentedLog.open({ dir, acceptLostRecordsAfter: 6, logger });
    expect(warnings.find((w) => w['level'] === 50)?.['msg']).toContain('records after LSN 50');
    expect(log.nextLsn).toBe(51);
    expect(await log.appendOne({ kind: 1, timestamp: 0, body: 'after' })).toBe(51);
    await log.close();
    log = await SegmentedLog.open({ dir });
    const history = await log.checkHistory();
    expect(history).toMatchObject({ state: 'damaged', damage: [expect.objectContaining({ firstLsn: 7, lastLsn: 50 })], unrestorable: [{ firstLsn: 7, lastLsn: 49 }] });
    await log.close();
    expect((await judgeDataDirectory(dir)).history).toEqual(history);
  });

  it('newest segments missing while the snapshot lies before the remaining end: not detectable, and start-up and verify agree it starts', async () => {
    const dir = freshDir();
    const { segments } = await buildLog(dir, someRecords, 256);
    writeSnapshot(dir, 2);
    fs.unlinkSync(join(dir, segments[segments.length - 1]!.file));
    const log = await SegmentedLog.open({ dir });
    expect(log.nextLsn).toBeLessThan(7);
    expect((await log.checkHistory()).state).toBe('intact');
    await log.close();
    const judged = await judgeDataDirectory(dir);
    expect(judged.startup.starts).toBe(true);
    expect(judged.history?.damage).toEqual([]);
  });

  it('a torn tail warning names the LSN range dropped and says when acknowledged records can be among them', async () => {
    const dir = freshDir();
    const { segments } = await buildLog(dir, someRecords, 1 << 20);
    const last = segments[segments.length - 1]!;
    // 100 bytes of garbage right after the last frame: at most 4 frames of 30 bytes or more could start there.
    writeAt(join(dir, last.file), last.bytes, Buffer.alloc(100, 0xab));
    const { logger, warnings } = captureLogger();
    await (await SegmentedLog.open({ dir, logger })).close();
    const warning = warnings.find((w) => String(w['msg']).includes('torn tail'))!;
    expect(warning).toMatchObject({ lsn: 7, lastLsnAtMost: 10 });
    expect(String(warning['msg'])).toContain('LSN 7..10 at most');
    expect(String(warning['msg'])).toContain('they include acknowledged records only if the disk lost or damaged data it had reported synced');
    expect(String(warning['msg'])).not.toContain('never acknowledged');
  });
});

describe('damage in the history (segments wholly before the newest snapshot): start-up goes on, the history check reports it', () => {
  const someRecords = Array.from({ length: 12 }, (_, i): AppendRecord => ({ kind: 1, timestamp: i, body: { i, pad: 'x'.repeat(100) } }));

  /** A log of small segments with a snapshot at LSN 11: every segment but the last is history. */
  async function historyLog(): Promise<{ dir: string; placed: Placed[]; history: { file: string; bytes: number }[] }> {
    const dir = freshDir();
    const { placed, segments } = await buildLog(dir, someRecords, 256);
    writeSnapshot(dir, 11);
    // Replay reads from LSN 12 on: the segment holding it and those after are not history.
    const replayStart = segments.findIndex((s) => s.file === placed.find((p) => p.lsn === 12)!.segment);
    return { dir, placed, history: segments.slice(0, replayStart) };
  }

  async function expectReported(dir: string, damaged: { firstLsn: number; lastLsn: number }): Promise<void> {
    const log = await SegmentedLog.open({ dir });
    expect(log.nextLsn).toBe(13);
    expect(log.history.state).toBe('pending');
    const history = await log.checkHistory();
    await log.close();
    expect(history.state).toBe('damaged');
    expect(history.damage).toEqual([expect.objectContaining(damaged)]);
    expect(history.unrestorable).toEqual([{ firstLsn: damaged.firstLsn, lastLsn: 10 }]);
    expect(history.summary).toContain(`point-in-time recovery is impossible for LSN ${damaged.firstLsn}..10`);
    const judged = await judgeDataDirectory(dir);
    expect(judged.startup.starts).toBe(true);
    expect(judged.history).toEqual(history);
  }

  it('a bad header', async () => {
    const { dir, placed, history } = await historyLog();
    flipByte(join(dir, history[1]!.file), 0, 0x20);
    const lsns = placed.filter((p) => p.segment === history[1]!.file).map((p) => p.lsn);
    await expectReported(dir, { firstLsn: lsns[0]!, lastLsn: lsns[lsns.length - 1]! });
  });

  it('a missing segment', async () => {
    const { dir, placed, history } = await historyLog();
    fs.unlinkSync(join(dir, history[1]!.file));
    const lsns = placed.filter((p) => p.segment === history[1]!.file).map((p) => p.lsn);
    await expectReported(dir, { firstLsn: lsns[0]!, lastLsn: lsns[lsns.length - 1]! });
  });

  it('retention by age goes on past a damaged segment, and removes it once outside the window', async () => {
    const { dir, history } = await historyLog();
    flipByte(join(dir, history[1]!.file), segmentHeaderBytes + 20, 0x01);
    // Retention keeps every LSN from its anchor snapshot on restorable: one must lie before the segment holding LSN 11.
    writeSnapshot(dir, 10);
    const log = await SegmentedLog.open({ dir, segmentBytesMax: 256, retentionMs: 1000, clock: () => 1e12 });
    const { removed } = await log.applyRetention();
    expect(removed).toEqual(expect.arrayContaining(history.map((h) => h.file)));
    expect(log.history.state).toBe('pending');
    expect((await log.checkHistory()).damage).toEqual([]);
    await log.close();
  });

  it('any corrupted byte of any record: the damage covers its LSN, start-up and verify agree', async () => {
    const seed = announceSeed('history damage: any corrupted byte');
    await fc.assert(
      fc.asyncProperty(fc.nat(), fc.nat(), fc.integer({ min: 1, max: 255 }), async (which, byteSeed, xor) => {
        const { dir, placed, history } = await historyLog();
        const candidates = placed.filter((p) => history.some((h) => h.file === p.segment));
        const victim = candidates[which % candidates.length]!;
        flipByte(join(dir, victim.segment), victim.start + (byteSeed % (victim.end - victim.start)), xor);
        const log = await SegmentedLog.open({ dir, ...withoutSyncs });
        const status = await log.checkHistory();
        await log.close();
        expect(status.state).toBe('damaged');
        expect(status.damage.some((d) => d.segment === victim.segment && d.firstLsn <= victim.lsn && victim.lsn <= d.lastLsn)).toBe(true);
        expect(status.unrestorable.some((r) => r.firstLsn <= victim.lsn && victim.lsn <= r.lastLsn)).toBe(true);
        expect((await judgeDataDirectory(dir)).history).toEqual(status);
        fs.rmSync(dir, { recursive: true });
      }),
      { numRuns: 60, seed },
    );
  });
});

function writeSnapshot(dir: string, lsn: number): void {
  const data = new Uint8Array([1, 2, 3]);
  fs.writeFileSync(join(dir, snapshotFileName(lsn)), Buffer.concat([encodeSnapshotHeader(lsn, data), data]));
}

async function openError(dir: string): Promise<Error> {
  return SegmentedLog.open({ dir }).then(
    async (log) => {
      await log.close();
      throw new Error('the log opened');
    },
    (error: unknown) => error as Error,
  );
}

/** `cairn inspect verify`'s judgement refuses with the very error start-up refused with. */
async function expectJudgedRefusal(dir: string, error: Error): Promise<void> {
  const judged = await judgeDataDirectory(dir);
  expect(judged.startup.starts).toBe(false);
  expect(judged.startup.starts ? undefined : judged.startup.refusal.message).toBe(error.message);
}
