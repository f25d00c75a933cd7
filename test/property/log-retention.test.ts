/**
 * Retention removes (or archives) exactly the oldest segments that are both
 * wholly covered by the newest snapshot and outside the point-in-time window
 * (newest retentionBytes bytes ∪ segments with a record younger than
 * retentionMs), never the last segment, and leaves a log that reads and
 * reopens from its new first LSN. Checked against a model written
 * independently of src/log/retention.ts, on the live log and after reopen
 * (when old segments' timestamps must be scanned first).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { SegmentedLog, type SegmentInfo } from '../../src/log/index.js';
import { snapshotFileName } from '../../src/log/snapshot.js';

const root = fs.mkdtempSync(join(os.tmpdir(), 'cairn-log-retention-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let dirCounter = 0;
const freshDir = (): string => join(root, String(dirCounter++));

interface Case {
  readonly gaps: number[];
  readonly snapshotAt: number | undefined;
  readonly olderSnapshotAt: number | undefined;
  readonly retentionBytes: number | undefined;
  readonly retentionMs: number | undefined;
  readonly nowAfterLast: number;
  readonly archive: boolean;
  readonly reopen: boolean;
}

const retentionCase: fc.Arbitrary<Case> = fc.record({
  gaps: fc.array(fc.integer({ min: 0, max: 1000 }), { minLength: 8, maxLength: 40 }),
  snapshotAt: fc.option(fc.nat(), { nil: undefined }),
  olderSnapshotAt: fc.option(fc.nat(), { nil: undefined }),
  retentionBytes: fc.option(fc.integer({ min: 0, max: 3000 }), { nil: undefined }),
  retentionMs: fc.option(fc.integer({ min: 0, max: 20000 }), { nil: undefined }),
  nowAfterLast: fc.integer({ min: 0, max: 20000 }),
  archive: fc.boolean(),
  reopen: fc.boolean(),
});

/**
 * The model: how many leading segments may go. First those wholly covered by
 * the newest snapshot and outside the window; then only those at or before the
 * newest snapshot that precedes the window's first record, so every LSN from
 * that snapshot on stays restorable.
 */
function expectedRemovable(segments: readonly SegmentInfo[], timestamps: readonly number[], c: Case, snapshots: readonly number[], now: number): number {
  const windowed = outsideWindow(segments, timestamps, c, snapshots.length === 0 ? undefined : Math.max(...snapshots), now);
  if (windowed === 0) return 0;
  const windowStart = segments[windowed]!.firstLsn;
  const anchor = Math.max(0, ...snapshots.filter((lsn) => lsn < windowStart));
  let count = 0;
  while (count < windowed && segments[count]!.lastLsn <= anchor) count++;
  return count;
}

function outsideWindow(segments: readonly SegmentInfo[], timestamps: readonly number[], c: Case, snapshotLsn: number | undefined, now: number): number {
  if (snapshotLsn === undefined || (c.retentionBytes === undefined && c.retentionMs === undefined)) return 0;
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
  const options = { dir, segmentBytesMax: 256, clock: () => now };
  return SegmentedLog.open({
    ...options,
    ...(c.archive ? { archiveDir: join(dir, 'archive') } : {}),
    ...(c.retentionBytes === undefined ? {} : { retentionBytes: c.retentionBytes }),
    ...(c.retentionMs === undefined ? {} : { retentionMs: c.retentionMs }),
  });
}

describe('retention', () => {
  it('removes or archives exactly the segments the policy allows, and the log still reads and reopens', async () => {
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
        const olderLsn = c.olderSnapshotAt === undefined || snapshotLsn === undefined ? undefined : 1 + (c.olderSnapshotAt % snapshotLsn);
        if (olderLsn !== undefined && olderLsn !== snapshotLsn) await log.writeSnapshot(olderLsn, new Uint8Array([1]));
        if (snapshotLsn !== undefined) await log.writeSnapshot(snapshotLsn, new Uint8Array([2]));
        if (c.reopen) {
          await log.close();
          log = await openWith(dir, c, now);
        }
        const before = log.segments();
        const snapshots = [olderLsn, snapshotLsn].filter((lsn): lsn is number => lsn !== undefined);
        const removable = expectedRemovable(before, timestamps, c, snapshots, now);
        const result = await log.applyRetention();

        const gone = before.slice(0, removable).map((s) => s.file);
        const firstLsn = before[removable]!.firstLsn;
        const obsolete = olderLsn !== undefined && olderLsn !== snapshotLsn && olderLsn + 1 < firstLsn ? [snapshotFileName(olderLsn)] : [];
        expect(c.archive ? result.archived : result.removed).toEqual([...gone, ...obsolete]);
        expect(c.archive ? result.removed : result.archived).toEqual([]);
        for (const file of [...gone, ...obsolete]) {
          expect(fs.existsSync(join(dir, file))).toBe(false);
          expect(fs.existsSync(join(dir, 'archive', file))).toBe(c.archive);
        }
        expect(log.firstLsn).toBe(firstLsn);
        // (Timestamps may have been learnt meanwhile: retention by age scans segments that were not scanned at open.)
        const shape = (s: SegmentInfo): unknown => [s.file, s.firstLsn, s.lastLsn, s.bytes];
        expect(log.segments().map(shape)).toEqual(before.slice(removable).map(shape));
        expect([...log.read()].map((r) => r.lsn)).toEqual(timestamps.map((_, i) => i + 1).slice(firstLsn - 1));
        await log.close();
        const reopened = await openWith(dir, c, now);
        expect(reopened.firstLsn).toBe(firstLsn);
        expect(reopened.nextLsn).toBe(n + 1);
        await reopened.close();
        fs.rmSync(dir, { recursive: true });
      }),
      { numRuns: 150 },
    );
  });
});
