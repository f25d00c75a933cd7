/**
 * Retention removes (or archives) exactly the oldest segments that are wholly
 * covered by the newest snapshot, outside the point-in-time window (newest
 * retentionBytes bytes ∪ segments with a record younger than retentionMs) and
 * wholly before the pin (keepFromLsn: the oldest live message), never the last
 * segment, and leaves a log that reads and reopens from its new first LSN. It
 * retires every valid snapshot but the newest, the anchor and (with a window)
 * the successor, and never an invalid one. Checked against a model written
 * independently of src/log/retention.ts, on the live log and after reopen
 * (when old segments' timestamps must be scanned first); and, over many
 * rounds of the pure planner, that retention keeps making progress with at
 * most three snapshots while every LSN of the window stays restorable.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { SegmentedLog, type SegmentInfo } from '../../src/log/index.js';
import { planRetention, type RetentionCandidate } from '../../src/log/retention.js';
import { snapshotFileName } from '../../src/log/snapshot.js';
import { announceSeed } from '../support/kit.js';
import { withoutSyncs } from '../support/unsynced-file-system.js';

// Hundreds of small logs (opened without syncs: test/support/unsynced-file-system.ts); the guard is for hangs.
vi.setConfig({ testTimeout: 240_000 });

const root = fs.mkdtempSync(join(os.tmpdir(), 'cairn-log-retention-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let dirCounter = 0;
const freshDir = (): string => join(root, String(dirCounter++));

interface Case {
  readonly gaps: number[];
  readonly snapshotAt: number | undefined;
  readonly olderSnapshotsAt: number[];
  readonly invalidSnapshotAt: number | undefined;
  readonly pinAt: number | undefined;
  readonly retentionBytes: number | undefined;
  readonly retentionMs: number | undefined;
  readonly nowAfterLast: number;
  readonly archive: boolean;
  readonly reopen: boolean;
}

const retentionCase: fc.Arbitrary<Case> = fc.record({
  gaps: fc.array(fc.integer({ min: 0, max: 1000 }), { minLength: 8, maxLength: 40 }),
  snapshotAt: fc.option(fc.nat(), { nil: undefined }),
  olderSnapshotsAt: fc.array(fc.nat(), { maxLength: 4 }),
  invalidSnapshotAt: fc.option(fc.nat(), { nil: undefined }),
  pinAt: fc.option(fc.nat(), { nil: undefined }),
  retentionBytes: fc.option(fc.integer({ min: 0, max: 3000 }), { nil: undefined }),
  retentionMs: fc.option(fc.integer({ min: 0, max: 20000 }), { nil: undefined }),
  nowAfterLast: fc.integer({ min: 0, max: 20000 }),
  archive: fc.boolean(),
  reopen: fc.boolean(),
});

interface Expected {
  readonly segments: number;
  readonly keptSnapshots: number[];
}

/**
 * The model. Segments: first those wholly covered by the newest snapshot and
 * outside the window; then only those at or before the anchor (the newest
 * snapshot before the window's first record), so every LSN from the anchor on
 * stays restorable; and only those wholly before the pin. Snapshots: the
 * newest, the anchor, and with a window the oldest one after the anchor.
 */
function expected(segments: readonly SegmentInfo[], timestamps: readonly number[], c: Case, snapshots: readonly number[], pin: number | undefined, now: number): Expected {
  if (snapshots.length === 0) return { segments: 0, keptSnapshots: [] };
  const newest = Math.max(...snapshots);
  const windowed = outsideWindow(segments, timestamps, c, newest, now);
  const windowStart = segments[windowed]!.firstLsn;
  const beforeWindow = snapshots.filter((lsn) => lsn < windowStart);
  const anchor = beforeWindow.length === 0 ? 0 : Math.max(...beforeWindow);
  let count = 0;
  while (count < windowed && segments[count]!.lastLsn <= anchor && (pin === undefined || segments[count]!.lastLsn < pin)) count++;
  const kept = new Set([newest]);
  if (anchor > 0) kept.add(anchor);
  const afterAnchor = snapshots.filter((lsn) => lsn > anchor && lsn < newest);
  if ((c.retentionBytes !== undefined || c.retentionMs !== undefined) && afterAnchor.length > 0) kept.add(Math.min(...afterAnchor));
  return { segments: count, keptSnapshots: [...kept].sort((a, b) => a - b) };
}

function outsideWindow(segments: readonly SegmentInfo[], timestamps: readonly number[], c: Case, snapshotLsn: number, now: number): number {
  if (c.retentionBytes === undefined && c.retentionMs === undefined) return 0;
  let count = 0;
  for (let i = 0; i < segments.length - 1; i++) {
    const s = segments[i]!;
    const bytesAfter = segments.slice(i + 1).reduce((sum, t) => sum + t.bytes, 0);
    const newest = Math.max(...timestamps.slice(s.firstLsn - 1, s.lastLsn));
    const covered = s.lastLsn <= snapshotLsn;
    const outsideBytes = c.retentionBytes === undefined || bytesAfter >= c.retentionBytes;
    const outsideTime = c.retentionMs === undefined || newest < now - c.retentionMs;
    if (!(covered && outsideBytes && outsideTime)) break;
    count = i + 1;
  }
  return count;
}

async function openWith(dir: string, c: Case, now: number): Promise<SegmentedLog> {
  const options = { dir, segmentBytesMax: 256, clock: () => now, ...withoutSyncs };
  return SegmentedLog.open({
    ...options,
    ...(c.archive ? { archiveDir: join(dir, 'archive') } : {}),
    ...(c.retentionBytes === undefined ? {} : { retentionBytes: c.retentionBytes }),
    ...(c.retentionMs === undefined ? {} : { retentionMs: c.retentionMs }),
  });
}

const snapshotFiles = (dir: string): string[] => fs.readdirSync(dir).filter((f) => f.endsWith('.snap')).sort();

describe('retention', () => {
  it('removes or archives exactly the segments and snapshots the policy allows, never one at or after the pin, and the log still reads and reopens', async () => {
    const seed = announceSeed('log retention: segments, snapshots, pin');
    await fc.assert(
      fc.asyncProperty(retentionCase, async (c) => {
        const dir = freshDir();
        const timestamps: number[] = [];
        c.gaps.forEach((gap, i) => timestamps.push((timestamps[i - 1] ?? 1_000_000) + gap));
        const now = timestamps[timestamps.length - 1]! + c.nowAfterLast;
        let log = await openWith(dir, c, now);
        for (const t of timestamps) await log.appendOne({ kind: 2, timestamp: t, body: { t, pad: 'p'.repeat(60) } });
        const n = timestamps.length;
        const snapshotLsn = c.snapshotAt === undefined ? undefined : 1 + (c.snapshotAt % n);
        const older = snapshotLsn === undefined ? [] : [...new Set(c.olderSnapshotsAt.map((at) => 1 + (at % snapshotLsn)))].filter((lsn) => lsn !== snapshotLsn).sort((a, b) => a - b);
        for (const lsn of older) await log.writeSnapshot(lsn, new Uint8Array([1]));
        if (snapshotLsn !== undefined) await log.writeSnapshot(snapshotLsn, new Uint8Array([2]));
        // A damaged snapshot before the newest: kept for forensics, never an anchor.
        const invalidAt = c.invalidSnapshotAt === undefined || snapshotLsn === undefined ? undefined : 1 + (c.invalidSnapshotAt % snapshotLsn);
        const invalidLsn = invalidAt === snapshotLsn || older.includes(invalidAt!) ? undefined : invalidAt;
        const invalid = invalidLsn === undefined ? undefined : snapshotFileName(invalidLsn);
        if (invalid !== undefined) fs.writeFileSync(join(dir, invalid), 'not a snapshot');
        const valid = [...older, ...(snapshotLsn === undefined ? [] : [snapshotLsn])];
        const pin = c.pinAt === undefined ? undefined : 1 + (c.pinAt % n);
        if (c.reopen) {
          await log.close();
          log = await openWith(dir, c, now);
        }
        const before = log.segments();
        const model = expected(before, timestamps, c, valid, pin, now);
        const result = await log.applyRetention({ keepFromLsn: pin });

        const gone = before.slice(0, model.segments).map((s) => s.file);
        const retiredSnapshots = valid.filter((lsn) => !model.keptSnapshots.includes(lsn)).map(snapshotFileName);
        expect(c.archive ? result.archived : result.removed).toEqual([...gone, ...retiredSnapshots]);
        expect(c.archive ? result.removed : result.archived).toEqual([]);
        for (const file of [...gone, ...retiredSnapshots]) {
          expect(fs.existsSync(join(dir, file))).toBe(false);
          expect(fs.existsSync(join(dir, 'archive', file))).toBe(c.archive);
        }
        // The pin: no removed segment holds an LSN at or after it, and its record still reads.
        for (const s of before.slice(0, model.segments)) expect(pin === undefined || s.lastLsn < pin).toBe(true);
        if (pin !== undefined) expect(log.readRecord(pin).lsn).toBe(pin);
        expect(snapshotFiles(dir)).toEqual([...model.keptSnapshots.map(snapshotFileName), ...(invalid === undefined ? [] : [invalid])].sort());
        const firstLsn = before[model.segments]!.firstLsn;
        expect(log.firstLsn).toBe(firstLsn);
        // (Timestamps may have been learnt meanwhile: retention by age scans segments that were not scanned at open.)
        const shape = (s: SegmentInfo): unknown => [s.file, s.firstLsn, s.lastLsn, s.bytes];
        expect(log.segments().map(shape)).toEqual(before.slice(model.segments).map(shape));
        expect([...log.read()].map((r) => r.lsn)).toEqual(timestamps.map((_, i) => i + 1).slice(firstLsn - 1));
        await log.close();
        const reopened = await openWith(dir, c, now);
        expect(reopened.firstLsn).toBe(firstLsn);
        expect(reopened.nextLsn).toBe(n + 1);
        expect(reopened.loadSnapshot()?.lsn).toBe(snapshotLsn);
        await reopened.close();
        fs.rmSync(dir, { recursive: true });
      }),
      { numRuns: 150, seed },
    );
  });
});

interface Run {
  readonly recordsPerSegment: number;
  readonly snapshotEvery: number;
  readonly windowSegments: number;
  readonly byAge: boolean;
  /** Live messages: [LSN it is appended at, LSN at which it is consumed]. */
  readonly messages: Array<[number, number]>;
  readonly records: number;
}

const run: fc.Arbitrary<Run> = fc
  .record({
    recordsPerSegment: fc.integer({ min: 1, max: 6 }),
    snapshotEvery: fc.integer({ min: 1, max: 20 }),
    windowSegments: fc.integer({ min: 0, max: 12 }),
    byAge: fc.boolean(),
    records: fc.integer({ min: 50, max: 400 }),
    messages: fc.array(fc.tuple(fc.nat(), fc.nat(200)), { maxLength: 6 }),
  })
  .map((r) => ({ ...r, messages: r.messages.map(([at, lasts]): [number, number] => [1 + (at % r.records), 1 + (at % r.records) + lasts]) }));

describe('retention over a broker lifetime (the pure planner, round after round)', () => {
  it('progresses with at most three snapshots, keeps every window LSN restorable, and never removes a live message', () => {
    const seed = announceSeed('log retention: rounds of the planner');
    fc.assert(
      fc.property(run, (r) => {
        const segmentBytes = 100;
        const policy = r.byAge ? { retentionBytes: undefined, retentionMs: r.windowSegments * r.recordsPerSegment } : { retentionBytes: r.windowSegments * segmentBytes, retentionMs: undefined };
        // Segment i (from 0) holds LSNs i*R+1 .. (i+1)*R; a record's timestamp is its LSN (ms).
        const segmentOf = (index: number, last: number): RetentionCandidate => {
          const firstLsn = index * r.recordsPerSegment + 1;
          const lastLsn = Math.min(last, firstLsn + r.recordsPerSegment - 1);
          return { firstLsn, lastLsn, bytes: segmentBytes, maxTimestamp: lastLsn >= firstLsn ? lastLsn : undefined };
        };
        let firstSegment = 0;
        let snapshots: number[] = [];
        for (let last = 1; last <= r.records; last++) {
          if (last % r.snapshotEvery !== 0) continue;
          snapshots.push(last);
          const segments: RetentionCandidate[] = [];
          for (let i = firstSegment; i * r.recordsPerSegment < last; i++) segments.push(segmentOf(i, last));
          const live = r.messages.filter(([at, consumed]) => at <= last && consumed > last).map(([at]) => at);
          const pin = live.length === 0 ? undefined : Math.min(...live);
          const plan = planRetention(segments, snapshots.map((lsn) => ({ lsn, valid: true })), policy, last, pin);
          const removed = segments.slice(0, plan.segments);
          for (const s of removed) expect(pin === undefined || s.lastLsn < pin).toBe(true);
          expect(plan.snapshots).not.toContain(last);
          firstSegment += plan.segments;
          snapshots = snapshots.filter((lsn) => !plan.snapshots.includes(lsn));
          expect(snapshots.length).toBeLessThanOrEqual(3);
          const firstLsn = firstSegment * r.recordsPerSegment + 1;
          // Restorable: every LSN of the window has a kept snapshot at or before it, with the records after it kept.
          // The window, as the policy words it: the newest segments holding fewer than retentionBytes bytes after
          // them, or holding a record younger than retentionMs; the last segment always.
          const lastSegment = Math.floor((last - 1) / r.recordsPerSegment);
          const windowSegment = r.byAge
            ? Math.floor((Math.max(1, last - policy.retentionMs!) - 1) / r.recordsPerSegment)
            : lastSegment - Math.max(1, r.windowSegments) + 1;
          const windowStart = Math.max(0, windowSegment) * r.recordsPerSegment + 1;
          for (let lsn = Math.max(windowStart, firstLsn); lsn <= last; lsn++) {
            expect(firstLsn === 1 || snapshots.some((s) => s <= lsn && s + 1 >= firstLsn)).toBe(true);
          }
          // Progress: the log is at most about twice the window, plus a snapshot interval and two segments, unless
          // a live message holds more (from the start of its segment).
          const bound = 2 * r.windowSegments * r.recordsPerSegment + r.snapshotEvery + 2 * r.recordsPerSegment;
          const pinnedFrom = pin === undefined ? last : Math.floor((pin - 1) / r.recordsPerSegment) * r.recordsPerSegment + 1;
          expect(last - firstLsn + 1).toBeLessThanOrEqual(Math.max(bound, last - pinnedFrom + 1));
        }
      }),
      { numRuns: 300, seed },
    );
  });
});
