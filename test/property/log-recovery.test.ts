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
import { afterAll, describe, expect, it } from 'vitest';
import { checksum64 } from '../../src/log/checksum.js';
import { CorruptRecordError, LogInconsistentError, SegmentedLog, SegmentHeaderError, type AppendRecord } from '../../src/log/index.js';
import { encodeFrame } from '../../src/log/record.js';
import { encodeSegmentHeader, segmentHeaderBytes } from '../../src/log/segment.js';
import { encodeSnapshotHeader, snapshotFileName } from '../../src/log/snapshot.js';

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
  const log = await SegmentedLog.open({ dir, segmentBytesMax });
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
  const log = await SegmentedLog.open(logger === undefined ? { dir, segmentBytesMax: 256 } : { dir, segmentBytesMax: 256, logger });
  expect([...log.read()].map((r) => r.lsn)).toEqual(Array.from({ length: count }, (_, i) => i + 1));
  expect(log.nextLsn).toBe(count + 1);
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

  it('a missing middle segment (LSN gap) is a LogInconsistentError', async () => {
    const dir = freshDir();
    const { segments } = await buildLog(dir, someRecords, 256);
    fs.unlinkSync(join(dir, segments[1]!.file));
    await expect(SegmentedLog.open({ dir })).rejects.toThrow(LogInconsistentError);
  });

  it('a missing first segment with no snapshot to start from is a LogInconsistentError', async () => {
    const dir = freshDir();
    const { segments } = await buildLog(dir, someRecords, 256);
    fs.unlinkSync(join(dir, segments[0]!.file));
    await expect(SegmentedLog.open({ dir })).rejects.toThrow(/replay must start at LSN 1/);
  });

  it('a valid snapshot past the end of the log is a LogInconsistentError', async () => {
    const dir = freshDir();
    await buildLog(dir, someRecords, 256);
    const data = new Uint8Array([1, 2, 3]);
    fs.writeFileSync(join(dir, snapshotFileName(50)), Buffer.concat([encodeSnapshotHeader(50, data), data]));
    await expect(SegmentedLog.open({ dir })).rejects.toThrow(/covers LSN 50 but the log ends at LSN 6/);
  });
});
