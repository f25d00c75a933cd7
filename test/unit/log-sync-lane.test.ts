/**
 * Where the log's fdatasync runs (src/log/sync-lane.ts, issue 18): a lone
 * batch (one appender waiting, nothing else in flight) syncs on the event loop
 * while the machine's load average is below its CPU count, and on libuv's
 * thread pool otherwise, and on the pool for a while after a slow sync on the
 * loop; a batch with several waiters always syncs on the pool
 * (group commit: the next batch is written while it syncs). Either way the
 * append resolves only once its record is durable. A lone batch on the loop
 * is written through an O_DSYNC descriptor of the active segment (write and
 * sync in one call, log/data-sync-writer.ts), closed when the log rolls past
 * the segment or closes; Linux only, where /proc shows each descriptor's flags.
 */
import * as fs from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SegmentedLog, type AppendRecord } from '../../src/log/index.js';
import { loadCheckIntervalMs, poolAfterSlowSyncMs, slowLoopSyncMs, SyncLaneChooser, type SyncLanes } from '../../src/log/sync-lane.js';
import { tempDirectory } from '../support/kit.js';

const directories: Array<{ path: string; remove(): void }> = [];
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

async function openLog(syncLanes: SyncLanes, segmentBytesMax = 256 * 1024): Promise<SegmentedLog> {
  const directory = tempDirectory('cairn-sync-lane-');
  directories.push(directory);
  // A segment this small is zero-filled whole when created: no fill is in flight to send a batch to the pool.
  return SegmentedLog.open({ dir: directory.path, segmentBytesMax, syncLanes });
}

/** O_DSYNC as Linux's /proc/PID/fdinfo shows it (octal flags). */
const dataSyncFlag = fs.constants.O_DSYNC;

/** This process's open descriptors of `file` (a segment file name) in the log's directory, each with whether it was opened O_DSYNC. */
function descriptorsOf(dir: string, file: string): { dataSync: boolean }[] {
  return openDescriptorsOf(dir, file).map(({ dataSync }) => ({ dataSync }));
}

function openDescriptorsOf(dir: string, file: string): { fd: number; dataSync: boolean }[] {
  const path = join(dir, file);
  const found: { fd: number; dataSync: boolean }[] = [];
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    let target: string;
    try {
      target = fs.readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue; // closed while we looked (the readdir's own descriptor)
    }
    if (target !== path) continue;
    const flags = /^flags:\s+([0-7]+)$/m.exec(fs.readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
    found.push({ fd: Number(fd), dataSync: flags !== null && (Number.parseInt(flags[1]!, 8) & dataSyncFlag) !== 0 });
  }
  // The plain descriptor first, whatever the numbers.
  return found.sort((a, b) => Number(a.dataSync) - Number(b.dataSync));
}

const onLinux = process.platform === 'linux';

/**
 * Every lone batch on the event loop, whatever the load and however slow a sync: a chooser would send the
 * batches after one sync slower than slowLoopSyncMs (a busy CI disk) to the pool, past the O_DSYNC path.
 */
const loopLane: SyncLanes = { next: () => 'loop', noteLoopSync: () => undefined };

/** Opens /dev/null read-only at descriptor `fd`, which was just closed (open takes the lowest free number). */
function readOnlyAt(fd: number): void {
  const below: number[] = [];
  for (;;) {
    const opened = fs.openSync('/dev/null', 'r');
    if (opened === fd) break;
    expect(opened).toBeLessThan(fd); // a lower number that was free: held until `fd` comes
    below.push(opened);
  }
  for (const extra of below) fs.closeSync(extra);
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

  it.runIf(onLinux)('a lone batch on the loop is written through an O_DSYNC descriptor of its segment, closed when the log rolls past it and when it closes', async () => {
    // Segments of 256 B: two records of ~140 B fill one, the third goes into the next.
    const log = await openLog(loopLane, 256);
    const dir = directories.at(-1)!.path;
    const first = log.segments()[0]!.file;
    expect(descriptorsOf(dir, first)).toEqual([{ dataSync: false }]);
    const appended = log.append([record(1)]);
    await microtasks();
    expect(log.durableLsn).toBe(1);
    expect(descriptorsOf(dir, first)).toEqual([{ dataSync: false }, { dataSync: true }]);
    await appended;
    expect(await log.append([record(2)])).toEqual([2]);
    expect(await log.append([record(3)])).toEqual([3]);
    const second = log.segments().at(-1)!.file;
    expect(second).not.toBe(first);
    expect(descriptorsOf(dir, first)).toEqual([]);
    expect(descriptorsOf(dir, second)).toEqual([{ dataSync: false }, { dataSync: true }]);
    expect([...log.read()].map((r) => r.body)).toEqual([1, 2, 3].map((i) => record(i).body));
    await log.close();
    expect(descriptorsOf(dir, second)).toEqual([]);
  });

  it.runIf(onLinux)('a lone batch on the pool, and a batch with two waiters, take write + fdatasync: no O_DSYNC descriptor', async () => {
    const loaded = await openLog(chooserAt({ value: 8 }, { ms: 0 }));
    await loaded.append([record(1)]);
    expect(descriptorsOf(directories.at(-1)!.path, loaded.segments()[0]!.file)).toEqual([{ dataSync: false }]);
    await loaded.close();
    const quiet = await openLog(loopLane);
    await Promise.all([quiet.append([record(1)]), quiet.append([record(2)])]);
    expect(descriptorsOf(directories.at(-1)!.path, quiet.segments()[0]!.file)).toEqual([{ dataSync: false }]);
    await quiet.close();
  });

  it.runIf(onLinux)('a failed write through the O_DSYNC descriptor fails the log as a failed fdatasync does: the append rejects, later ones are refused', async () => {
    const log = await openLog(loopLane);
    const dir = directories.at(-1)!.path;
    const file = log.segments()[0]!.file;
    expect(await log.append([record(1)])).toEqual([1]);
    // Swapped behind the log's back for a read-only descriptor (open takes the lowest free number): its next write fails with EBADF.
    const dataSync = openDescriptorsOf(dir, file).find((descriptor) => descriptor.dataSync);
    expect(dataSync).toBeDefined();
    fs.closeSync(dataSync!.fd);
    readOnlyAt(dataSync!.fd);
    await expect(log.append([record(2)])).rejects.toMatchObject({ name: 'LogFailedError' });
    expect(log.durableLsn).toBe(1);
    await expect(log.append([record(3)])).rejects.toMatchObject({ name: 'LogFailedError' });
    await log.close();
    const reopened = await SegmentedLog.open({ dir });
    expect([...reopened.read()].map((r) => r.body)).toEqual([record(1).body]);
    await reopened.close();
  });
});
