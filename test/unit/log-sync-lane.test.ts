/**
 * Where the log's fdatasync runs (src/log/sync-lane.ts, issue 18): a lone
 * batch (one appender waiting, nothing else in flight) syncs on the event loop
 * while the machine's load average is below its CPU count, and on libuv's
 * thread pool otherwise, and on the pool for a while after a slow sync on the
 * loop; a batch with several waiters always syncs on the pool
 * (group commit: the next batch is written while it syncs). Either way the
 * append resolves only once its record is durable.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SegmentedLog, type AppendRecord } from '../../src/log/index.js';
import { loadCheckIntervalMs, poolAfterSlowSyncMs, slowLoopSyncMs, SyncLaneChooser } from '../../src/log/sync-lane.js';
import { tempDirectory } from '../support/kit.js';

const directories: Array<{ remove(): void }> = [];
afterEach(() => {
  for (const directory of directories.splice(0)) directory.remove();
});

const record = (i: number): AppendRecord => ({ kind: 1, timestamp: 1_790_000_000_000 + i, body: { i, padding: 'x'.repeat(100) } });

/** A chooser on a fixed load average and a clock the test moves. */
function chooserAt(load: { value: number }, clock: { ms: number }, cpus = 2): SyncLaneChooser {
  return new SyncLaneChooser({ loadAverage: () => load.value, cpus, now: () => clock.ms });
}

/** Lets the microtasks of this turn run (the log's pump is one), but not the event loop: no I/O callback can come. */
async function microtasks(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

async function openLog(syncLanes: SyncLaneChooser): Promise<SegmentedLog> {
  const directory = tempDirectory('cairn-sync-lane-');
  directories.push(directory);
  // A segment this small is zero-filled whole when created: no fill is in flight to send a batch to the pool.
  return SegmentedLog.open({ dir: directory.path, segmentBytesMax: 256 * 1024, syncLanes });
}

describe('sync lane', () => {
  it('takes the loop below one runnable task per CPU, the pool from there on, and reads the load at most once a second', () => {
    const load = { value: 1.5 };
    const clock = { ms: 0 };
    const chooser = chooserAt(load, clock);
    expect(chooser.next()).toBe('loop');
    load.value = 2;
    clock.ms += loadCheckIntervalMs - 1;
    expect(chooser.next()).toBe('loop');
    clock.ms += 1;
    expect(chooser.next()).toBe('pool');
    load.value = 0.2;
    clock.ms += loadCheckIntervalMs;
    expect(chooser.next()).toBe('loop');
  });

  it('after a slow sync on the loop (a stalling disk), lone syncs go to the pool for a while, whatever the load', () => {
    const clock = { ms: 0 };
    const chooser = chooserAt({ value: 0 }, clock);
    expect(chooser.next()).toBe('loop');
    chooser.noteLoopSync(slowLoopSyncMs);
    expect(chooser.next()).toBe('loop');
    chooser.noteLoopSync(slowLoopSyncMs + 40);
    expect(chooser.next()).toBe('pool');
    clock.ms += poolAfterSlowSyncMs - 1;
    expect(chooser.next()).toBe('pool');
    clock.ms += 1;
    expect(chooser.next()).toBe('loop');
  });

  it('on a quiet machine a lone append is durable within its own turn of the event loop: no hand-off to the thread pool', async () => {
    const log = await openLog(chooserAt({ value: 0 }, { ms: 0 }));
    const appended = log.append([record(1)]);
    await microtasks();
    expect(log.durableLsn).toBe(1);
    expect(await appended).toEqual([1]);
    expect(log.readRecord(1).body).toEqual(record(1).body);
    await log.close();
  });

  it('on a loaded machine the lone append waits for the thread pool', async () => {
    const log = await openLog(chooserAt({ value: 8 }, { ms: 0 }));
    const appended = log.append([record(1)]);
    await microtasks();
    expect(log.durableLsn).toBe(0);
    expect(await appended).toEqual([1]);
    expect(log.durableLsn).toBe(1);
    await log.close();
  });

  it('a batch with two waiters goes to the thread pool even on a quiet machine', async () => {
    const log = await openLog(chooserAt({ value: 0 }, { ms: 0 }));
    const first = log.append([record(1)]);
    const second = log.append([record(2)]);
    await microtasks();
    expect(log.durableLsn).toBe(0);
    expect(await Promise.all([first, second])).toEqual([[1], [2]]);
    expect(log.durableLsn).toBe(2);
    await log.close();
  });
});
