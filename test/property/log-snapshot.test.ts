/**
 * Snapshots: the newest one written comes back bit for bit (live and after
 * reopen); a half-written or corrupted newest snapshot is ignored in favour
 * of the previous valid one; an interrupted write (temp file) is cleaned up;
 * a snapshot never covers a record that is not durable yet.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { openLogReader, SegmentedLog } from '../../src/log/index.js';
import { snapshotFileName, snapshotHeaderBytes } from '../../src/log/snapshot.js';

const root = fs.mkdtempSync(join(os.tmpdir(), 'cairn-log-snapshot-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let dirCounter = 0;
const freshDir = (): string => join(root, String(dirCounter++));

async function logWith(dir: string, records: number): Promise<SegmentedLog> {
  const log = await SegmentedLog.open({ dir, segmentBytesMax: 512 });
  for (let i = 0; i < records; i++) await log.appendOne({ kind: 1, timestamp: i, body: { i } });
  return log;
}

function expectSnapshot(actual: { lsn: number; data: Uint8Array } | undefined, lsn: number, data: Uint8Array): void {
  expect(actual?.lsn).toBe(lsn);
  expect(Buffer.compare(Buffer.from(actual!.data), Buffer.from(data))).toBe(0);
}

describe('snapshots', () => {
  it('load returns the newest snapshot written, bit for bit, live and after reopen', async () => {
    const write = fc.record({ lsn: fc.integer({ min: 1, max: 20 }), data: fc.uint8Array({ maxLength: 2000 }) });
    await fc.assert(
      fc.asyncProperty(fc.array(write, { minLength: 1, maxLength: 5 }), async (writes) => {
        const dir = freshDir();
        const log = await logWith(dir, 20);
        expect(log.loadSnapshot()).toBeUndefined();
        for (const { lsn, data } of writes) await log.writeSnapshot(lsn, data);
        // Highest LSN wins; among equal LSNs the last write replaced the file.
        const newest = writes.reduce((best, w) => (w.lsn >= best.lsn ? w : best));
        expectSnapshot(log.loadSnapshot(), newest.lsn, newest.data);
        await log.close();
        const reopened = await SegmentedLog.open({ dir, segmentBytesMax: 512 });
        expectSnapshot(reopened.loadSnapshot(), newest.lsn, newest.data);
        await reopened.close();
        fs.rmSync(dir, { recursive: true });
      }),
      { numRuns: 50 },
    );
  });

  it('ignores (and logs) a half-written or corrupted newest snapshot, falling back to the previous one', async () => {
    const damage = fc.oneof(fc.record({ truncateAt: fc.nat() }), fc.record({ flipAt: fc.nat(), xor: fc.integer({ min: 1, max: 255 }) }));
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 500 }), fc.uint8Array({ maxLength: 500 }), damage, async (older, newer, how) => {
        const dir = freshDir();
        const log = await logWith(dir, 10);
        await log.writeSnapshot(4, older);
        await log.writeSnapshot(9, newer);
        await log.close();
        const path = join(dir, snapshotFileName(9));
        const size = snapshotHeaderBytes + newer.length;
        if ('truncateAt' in how) fs.truncateSync(path, how.truncateAt % size);
        else {
          const bytes = fs.readFileSync(path);
          bytes[how.flipAt % size] = bytes[how.flipAt % size]! ^ how.xor;
          fs.writeFileSync(path, bytes);
        }
        const warnings: string[] = [];
        const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
        const reopened = await SegmentedLog.open({ dir, logger });
        expectSnapshot(reopened.loadSnapshot(), 4, older);
        expect(warnings.some((w) => w.includes('invalid snapshot') && w.includes(snapshotFileName(9)))).toBe(true);
        expect(openLogReader(dir).snapshots().map((s) => [s.lsn, s.valid])).toEqual([
          [4, true],
          [9, false],
        ]);
        await reopened.close();
        fs.rmSync(dir, { recursive: true });
      }),
      { numRuns: 80 },
    );
  });

  it('removes the temp file of an interrupted snapshot write on open', async () => {
    const dir = freshDir();
    const log = await logWith(dir, 3);
    await log.writeSnapshot(2, new Uint8Array([7]));
    await log.close();
    fs.writeFileSync(join(dir, `${snapshotFileName(3)}.tmp`), 'half a snapshot');
    const reopened = await SegmentedLog.open({ dir });
    expect(fs.existsSync(join(dir, `${snapshotFileName(3)}.tmp`))).toBe(false);
    expectSnapshot(reopened.loadSnapshot(), 2, new Uint8Array([7]));
    await reopened.close();
  });

  it('waits until the covered records are durable before writing', async () => {
    const dir = freshDir();
    const log = await logWith(dir, 0);
    const appended = log.append([1, 2, 3].map((i) => ({ kind: 1, timestamp: i, body: i })));
    expect(log.durableLsn).toBe(0);
    await log.writeSnapshot(3, new Uint8Array([3]));
    expect(log.durableLsn).toBeGreaterThanOrEqual(3);
    await appended;
    await expect(log.writeSnapshot(4, new Uint8Array())).rejects.toThrow(/must cover an appended LSN/);
    await log.close();
  });
});
