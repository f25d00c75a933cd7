/**
 * Round trip of the segmented log: whatever sequence of appends (one call,
 * many calls in one tick, with or without waiting between them), the records
 * come back in LSN order with the same kind, timestamp and body, before and
 * after close + reopen, with segments small enough that rolls happen often.
 * Also: reading from an LSN and from a time.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { SegmentedLog, type AppendRecord, type LogRecord } from '../../src/log/index.js';

const root = fs.mkdtempSync(join(os.tmpdir(), 'cairn-log-roundtrip-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let dirCounter = 0;
const freshDir = (): string => join(root, String(dirCounter++));

const scalar = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((x) => !Object.is(x, -0)),
  fc.boolean(),
  fc.constant(null),
);
const key = fc.string({ maxLength: 8 }).filter((k) => k !== '__proto__');
const body = fc.oneof(
  scalar,
  fc.uint8Array({ maxLength: 300 }),
  fc.record({ topic: fc.string({ maxLength: 30 }), payload: fc.uint8Array({ maxLength: 600 }), qos: fc.integer({ min: 0, max: 2 }), tags: fc.array(scalar, { maxLength: 4 }) }),
  fc.dictionary(key, scalar, { maxKeys: 5 }),
);
const timestamp = fc.oneof(fc.integer({ min: 0, max: 4_000_000_000_000 }), fc.double({ min: -1e15, max: 1e15, noNaN: true }));
const record: fc.Arbitrary<AppendRecord> = fc.record({ kind: fc.integer({ min: 1, max: 255 }), timestamp, body });
const step = fc.record({
  records: fc.array(record, { minLength: 1, maxLength: 6 }),
  mode: fc.constantFrom('one call' as const, 'appendOne each' as const),
  awaitAfter: fc.boolean(),
});

/** Appends the steps, checking LSN assignment as it goes; returns the records in LSN order. */
interface Step {
  readonly records: AppendRecord[];
  readonly mode: 'one call' | 'appendOne each';
  readonly awaitAfter: boolean;
}

async function appendSteps(log: SegmentedLog, steps: readonly Step[]): Promise<AppendRecord[]> {
  const expected: AppendRecord[] = [];
  const inFlight: Promise<void>[] = [];
  for (const { records, mode, awaitAfter } of steps) {
    const first = log.nextLsn;
    expect(first).toBe(expected.length + 1);
    if (mode === 'one call') {
      inFlight.push(log.append(records).then((lsns) => expect(lsns).toEqual(records.map((_, i) => first + i))));
    } else {
      records.forEach((r, i) => inFlight.push(log.appendOne(r).then((lsn) => expect(lsn).toBe(first + i))));
    }
    expected.push(...records);
    if (awaitAfter) await Promise.all(inFlight);
  }
  await Promise.all(inFlight);
  expect(log.durableLsn).toBe(expected.length);
  return expected;
}

function expectSameRecords(actual: readonly LogRecord[], expected: readonly AppendRecord[], firstLsn = 1): void {
  expect(actual.map((r) => r.lsn)).toEqual(expected.map((_, i) => firstLsn + i));
  actual.forEach((r, i) => {
    const e = expected[i]!;
    expect(r.kind).toBe(e.kind);
    expect(Object.is(r.timestamp, e.timestamp)).toBe(true);
    expect(r.body).toEqual(e.body);
    if (e.body instanceof Uint8Array) expect(Buffer.compare(r.body as Uint8Array, e.body)).toBe(0);
  });
}

function expectSegmentChain(log: SegmentedLog, segmentBytesMax: number): void {
  const segments = log.segments();
  for (let i = 0; i + 1 < segments.length; i++) {
    expect(segments[i + 1]!.firstLsn).toBe(segments[i]!.lastLsn + 1);
    // A segment is rolled only once it has passed the limit.
    expect(segments[i]!.bytes).toBeGreaterThanOrEqual(segmentBytesMax);
  }
}

describe('segmented log round trip', () => {
  it('returns every appended record, in LSN order, before and after reopen', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 25 }), fc.integer({ min: 256, max: 2048 }), async (steps, segmentBytesMax) => {
        const dir = freshDir();
        const log = await SegmentedLog.open({ dir, segmentBytesMax });
        const expected = await appendSteps(log, steps);
        expectSameRecords([...log.read()], expected);
        expectSegmentChain(log, segmentBytesMax);
        await log.close();
        const reopened = await SegmentedLog.open({ dir, segmentBytesMax });
        expect(reopened.nextLsn).toBe(expected.length + 1);
        expect(reopened.durableLsn).toBe(expected.length);
        expectSameRecords([...reopened.read()], expected);
        expect(await reopened.appendOne({ kind: 7, timestamp: 1, body: 'after reopen' })).toBe(expected.length + 1);
        await reopened.close();
        fs.rmSync(dir, { recursive: true });
      }),
      { numRuns: 100 },
    );
  });

  it('reads from any LSN: the records from max(lsn, first) on', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(record, { minLength: 1, maxLength: 40 }), fc.nat(45), async (records, from) => {
        const dir = freshDir();
        const log = await SegmentedLog.open({ dir, segmentBytesMax: 512 });
        for (const r of records) await log.appendOne(r);
        const lsns = [...log.read({ lsn: from })].map((r) => r.lsn);
        expect(lsns).toEqual(records.map((_, i) => i + 1).filter((lsn) => lsn >= from));
        await log.close();
        fs.rmSync(dir, { recursive: true });
      }),
      { numRuns: 60 },
    );
  });

  it('reads from a time: the first record with timestamp >= time and everything after it, even out-of-order timestamps', async () => {
    const smallTimestamp = fc.integer({ min: 0, max: 50 });
    await fc.assert(
      fc.asyncProperty(fc.array(smallTimestamp, { minLength: 1, maxLength: 40 }), smallTimestamp, fc.option(fc.nat(45), { nil: undefined }), async (timestamps, time, lsn) => {
        const dir = freshDir();
        const log = await SegmentedLog.open({ dir, segmentBytesMax: 256 });
        for (const t of timestamps) await log.appendOne({ kind: 1, timestamp: t, body: t });
        const fromLsn = lsn ?? 1;
        const start = timestamps.findIndex((t, i) => i + 1 >= fromLsn && t >= time);
        const expected = start < 0 ? [] : timestamps.map((_, i) => i + 1).slice(start);
        const check = (l: SegmentedLog): void => {
          const from = lsn === undefined ? { time } : { time, lsn };
          expect([...l.read(from)].map((r) => r.lsn)).toEqual(expected);
        };
        check(log);
        await log.close();
        // After reopen, older segments' timestamps are unknown until scanned: same answer.
        const reopened = await SegmentedLog.open({ dir, segmentBytesMax: 256 });
        check(reopened);
        await reopened.close();
        fs.rmSync(dir, { recursive: true });
      }),
      { numRuns: 80 },
    );
  });
});
