/**
 * Read-ahead windows for reads by LSN (read-windows.ts), counted through the
 * log's file system: four queues drained side by side, whose messages are
 * interleaved in the log, take a positioned read per window of frames, not
 * per message; scattered reads read little more than their frames; every
 * record read equals the one appended, whatever the order.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { countingFileSystem } from '../../test/support/counting-file-system.js';
import { announceSeed, seededRandom, tempDirectory, testSeed } from '../../test/support/kit.js';
import type { LogFileSystem } from './file-system.js';
import { SegmentedLog, type AppendRecord } from './index.js';
import { windowBytesMin } from './read-windows.js';

const root = tempDirectory('cairn-read-windows-');
afterAll(() => root.remove());
let dirCounter = 0;
const freshDir = (): string => join(root.path, String(dirCounter++));

const recordCount = 4000;
const recordNumbered = (n: number): AppendRecord => ({ kind: 2, timestamp: n, body: { n, payload: new Uint8Array(300).fill(n & 0xff) } });

/** A log of recordCount records of ~340 bytes in one segment, reopened: its records are read from the file. */
async function reopenedLog(fileSystem: LogFileSystem): Promise<SegmentedLog> {
  const dir = freshDir();
  const writer = await SegmentedLog.open({ dir });
  await writer.append(Array.from({ length: recordCount }, (_, i) => recordNumbered(i + 1)));
  await writer.close();
  return SegmentedLog.open({ dir, fileSystem });
}

function expectRecord(log: SegmentedLog, lsn: number): void {
  const record = log.readRecord(lsn);
  const body = record.body as { n: number; payload: Uint8Array };
  // Plain comparisons: expect's deep equality over 4,000 payloads takes seconds.
  if (record.lsn !== lsn || body.n !== lsn || !Buffer.from(body.payload).equals(Buffer.alloc(300, lsn & 0xff))) {
    expect({ lsn: record.lsn, n: body.n, payload: body.payload }).toEqual({ lsn, n: lsn, payload: new Uint8Array(300).fill(lsn & 0xff) });
  }
}

describe('read-ahead windows', () => {
  it('four queues drained side by side, their messages interleaved in the log: a read per window of frames, not per message', async () => {
    const fileSystem = countingFileSystem();
    const log = await reopenedLog(fileSystem);
    const before = fileSystem.reads;
    // Queue q holds LSNs q, q + 4, q + 8 …; each takes its next message in turn, as four consumers do.
    for (let next = 1; next <= recordCount; next += 4) for (let queue = 0; queue < 4; queue++) expectRecord(log, next + queue);
    // ~1.4 MB of frames: without windows 4,000 reads; windows growing to 256 KiB take a few dozen.
    expect(fileSystem.reads - before).toBeLessThan(40);
    await log.close();
  });

  it('scattered reads read about their frames, not windows ahead of them; every record is the one appended', async () => {
    announceSeed('read-windows scattered');
    const random = seededRandom(testSeed);
    const fileSystem = countingFileSystem();
    const log = await reopenedLog(fileSystem);
    const [reads, bytes] = [fileSystem.reads, fileSystem.bytesRead];
    const picks = Array.from({ length: 200 }, () => 1 + Math.floor(random() * recordCount));
    for (const lsn of picks) expectRecord(log, lsn);
    expect(fileSystem.reads - reads).toBeLessThanOrEqual(picks.length);
    expect((fileSystem.bytesRead - bytes) / picks.length).toBeLessThanOrEqual(2 * windowBytesMin);
    // Backwards, then forwards again: the same records.
    for (let lsn = recordCount; lsn >= 1; lsn -= 7) expectRecord(log, lsn);
    for (let lsn = 1; lsn <= recordCount; lsn += 3) expectRecord(log, lsn);
    await log.close();
  });
});
