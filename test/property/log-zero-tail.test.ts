/**
 * The zero-filled space after the last frame (src/log/zero-fill.ts,
 * src/log/zero-tail.ts):
 * - the writer keeps zeros ahead of itself, never over a frame, and a sealed
 *   segment is cut back to its last frame when the log rolls;
 * - any run of zeros after the last frame is the end of the log: reopen keeps
 *   every record and the zeroed space, without a torn-tail warning, and the
 *   offline reader agrees;
 * - anything non-zero in that space (a torn frame, a stray byte anywhere in
 *   it) is a torn tail: truncated, records before it kept, appends go on;
 * - nonZeroEnd finds the end of the non-zero bytes for any layout.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { pino, type Logger } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { openLogReader, SegmentedLog, type AppendRecord, type SyncLanes } from '../../src/log/index.js';
import { nodeFileSystem } from '../../src/log/file-system.js';
import { nonZeroEnd } from '../../src/log/zero-tail.js';

const root = fs.mkdtempSync(join(os.tmpdir(), 'cairn-log-zero-tail-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let dirCounter = 0;
const freshDir = (): string => join(root, String(dirCounter++));

const record: fc.Arbitrary<AppendRecord> = fc.record({
  kind: fc.integer({ min: 1, max: 255 }),
  timestamp: fc.integer({ min: 0, max: 4_000_000_000_000 }),
  // Payloads ending in zeros: a frame's own trailing zeros must not read as the zero tail.
  body: fc.record({ n: fc.integer(), payload: fc.uint8Array({ maxLength: 300 }).map((p) => new Uint8Array(Buffer.concat([p, Buffer.alloc(p.length % 7)]))) }),
});

function warningsLogger(): { logger: Logger; warnings: Record<string, unknown>[] } {
  const warnings: Record<string, unknown>[] = [];
  return { logger: pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line) as Record<string, unknown>) }), warnings };
}

function readRange(path: string, from: number, to: number): Buffer {
  const fd = fs.openSync(path, 'r');
  try {
    const buffer = Buffer.alloc(Math.max(0, to - from));
    fs.readSync(fd, buffer, 0, buffer.length, from);
    return buffer;
  } finally {
    fs.closeSync(fd);
  }
}

function writeAt(path: string, offset: number, bytes: Uint8Array): void {
  const fd = fs.openSync(path, 'r+');
  fs.writeSync(fd, bytes, 0, bytes.length, offset);
  fs.closeSync(fd);
}

/** Every lone batch on the event loop, whatever the load: written through the O_DSYNC descriptor (data-sync-writer.ts). */
const loopLane: SyncLanes = { next: () => 'loop', noteLoopSync: () => undefined };

/**
 * Appends in waves of concurrent appends (so zero fills race with writes), or (`alone`) one at a time with every
 * lone batch on the loop, written through O_DSYNC between the fills; then waits for the fill to settle by closing.
 */
async function buildLog(dir: string, records: readonly AppendRecord[], segmentBytesMax: number, alone = false): Promise<{ segments: { file: string; bytes: number }[] }> {
  const log = await SegmentedLog.open(alone ? { dir, segmentBytesMax, syncLanes: loopLane } : { dir, segmentBytesMax });
  const wave = alone ? 1 : 4;
  for (let i = 0; i < records.length; i += wave) await Promise.all(records.slice(i, i + wave).map((r) => log.appendOne(r)));
  const segments = log.segments().map((s) => ({ file: s.file, bytes: s.bytes }));
  await log.close();
  return { segments };
}

const sizes = fc.constantFrom(256, 4096, 64 * 1024, 1 << 20);

describe('the writer zero-fills ahead of itself', () => {
  it('sealed segments end at their last frame; after the last frame there are only zeros; every record reads back', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(record, { minLength: 1, maxLength: 40 }), sizes, fc.boolean(), async (records, segmentBytesMax, alone) => {
        const dir = freshDir();
        const { segments } = await buildLog(dir, records, segmentBytesMax, alone);
        for (const [i, segment] of segments.entries()) {
          const path = join(dir, segment.file);
          const size = fs.statSync(path).size;
          if (i < segments.length - 1) expect(size).toBe(segment.bytes);
          else expect(readRange(path, segment.bytes, size).every((b) => b === 0)).toBe(true);
        }
        const { logger, warnings } = warningsLogger();
        const log = await SegmentedLog.open({ dir, segmentBytesMax, logger });
        expect(warnings).toEqual([]);
        expect([...log.read()].map((r) => r.body)).toEqual(records.map((r) => r.body));
        expect(log.segments().map((s) => s.bytes)).toEqual(segments.map((s) => s.bytes));
        await log.close();
        fs.rmSync(dir, { recursive: true });
      }),
      { numRuns: 60 },
    );
  });

  it('keeps zeros ahead of the active segment once it has been written to', async () => {
    const dir = freshDir();
    const log = await SegmentedLog.open({ dir, segmentBytesMax: 1 << 20 });
    for (let i = 0; i < 50; i++) await log.appendOne({ kind: 1, timestamp: i, body: { i } });
    const active = log.segments().at(-1)!;
    await log.close();
    const size = fs.statSync(join(dir, active.file)).size;
    // 1 MiB segments: 256 KiB fill steps, refilled when less than half a step is left.
    expect(size - active.bytes).toBeGreaterThanOrEqual(128 * 1024);
    fs.rmSync(dir, { recursive: true });
  });

  it('does not zero-fill with preallocate: false', async () => {
    const dir = freshDir();
    const log = await SegmentedLog.open({ dir, segmentBytesMax: 1 << 20, preallocate: false });
    for (let i = 0; i < 50; i++) await log.appendOne({ kind: 1, timestamp: i, body: { i } });
    const active = log.segments().at(-1)!;
    await log.close();
    expect(fs.statSync(join(dir, active.file)).size).toBe(active.bytes);
    fs.rmSync(dir, { recursive: true });
  });
});

describe('reading a zero tail', () => {
  it('any number of zeros after the last frame is the clean end: no warning, records kept, the zeroed space kept, appends at the end of the frames', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(record, { minLength: 1, maxLength: 12 }), fc.integer({ min: 0, max: 300_000 }), async (records, zeros) => {
        const dir = freshDir();
        const { segments } = await buildLog(dir, records, 1 << 20);
        const last = segments.at(-1)!;
        const path = join(dir, last.file);
        fs.truncateSync(path, last.bytes);
        fs.truncateSync(path, last.bytes + zeros);
        const reader = openLogReader(dir);
        expect(reader.tornTail).toBeUndefined();
        expect(reader.verify()).toMatchObject({ ok: true, records: records.length });
        expect(reader.segments().at(-1)!.bytes).toBe(last.bytes);
        const { logger, warnings } = warningsLogger();
        const log = await SegmentedLog.open({ dir, segmentBytesMax: 1 << 20, logger });
        expect(warnings).toEqual([]);
        // Kept, and at least the 256 KiB a new segment starts with (1 MiB segments).
        expect(fs.statSync(path).size).toBeGreaterThanOrEqual(last.bytes + Math.max(zeros, 256 * 1024));
        expect(await log.appendOne({ kind: 9, timestamp: 1, body: 'after' })).toBe(records.length + 1);
        expect([...log.read()].map((r) => r.body)).toEqual([...records.map((r) => r.body), 'after']);
        await log.close();
        fs.rmSync(dir, { recursive: true });
      }),
      { numRuns: 40 },
    );
  });

  it('a non-zero byte anywhere in the zero-filled space is a torn tail: truncated there, the records before it kept', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(record, { minLength: 1, maxLength: 12 }), fc.nat(), fc.integer({ min: 1, max: 255 }), fc.boolean(), async (records, offsetSeed, value, alone) => {
        const dir = freshDir();
        const { segments } = await buildLog(dir, records, 1 << 20, alone);
        const last = segments.at(-1)!;
        const path = join(dir, last.file);
        const size = fs.statSync(path).size;
        fc.pre(size > last.bytes);
        writeAt(path, last.bytes + (offsetSeed % (size - last.bytes)), Buffer.from([value]));
        expect(openLogReader(dir).tornTail).toMatchObject({ segment: last.file, lsn: records.length + 1 });
        const { logger, warnings } = warningsLogger();
        const log = await SegmentedLog.open(alone ? { dir, segmentBytesMax: 1 << 20, logger, syncLanes: loopLane } : { dir, segmentBytesMax: 1 << 20, logger });
        expect(warnings.find((w) => String(w['msg']).includes('torn'))).toMatchObject({ lsn: records.length + 1, bytesDropped: size - last.bytes });
        expect(fs.statSync(path).size).toBeLessThanOrEqual(1 << 20);
        expect(await log.appendOne({ kind: 9, timestamp: 1, body: 'after' })).toBe(records.length + 1);
        await log.close();
        const reopened = await SegmentedLog.open({ dir, segmentBytesMax: 1 << 20 });
        expect([...reopened.read()].map((r) => r.body)).toEqual([...records.map((r) => r.body), 'after']);
        await reopened.close();
        fs.rmSync(dir, { recursive: true });
      }),
      { numRuns: 40 },
    );
  });
});

describe('nonZeroEnd', () => {
  it('is just past the last non-zero byte in the range, or the range start when it is all zero', () => {
    const dir = freshDir();
    fs.mkdirSync(dir);
    const path = join(dir, 'bytes');
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 3000 }), fc.integer({ min: 0, max: 2_500_000 }), fc.nat(), (head, zeros, fromSeed) => {
        fs.writeFileSync(path, Buffer.concat([head, Buffer.alloc(zeros)]));
        const size = head.length + zeros;
        const from = size === 0 ? 0 : fromSeed % size;
        let expected = from;
        for (let i = head.length - 1; i >= from; i--) {
          if (head[i] !== 0) {
            expected = i + 1;
            break;
          }
        }
        const fd = fs.openSync(path, 'r');
        try {
          expect(nonZeroEnd(nodeFileSystem, fd, from, size)).toBe(expected);
          expect(nonZeroEnd(nodeFileSystem, fd, from, size + 100)).toBe(expected);
        } finally {
          fs.closeSync(fd);
        }
      }),
      { numRuns: 60 },
    );
  });
});
