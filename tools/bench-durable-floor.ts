/**
 * The floor of a durable round trip, measured beside it: a raw `write(100 B)
 * + fdatasync` on the bench disk, as a latency case that alternates with the
 * brokers' round trips (bench-side-by-side.ts: interleavedCases), so that the
 * disk and the broker are compared over the same minutes of the machine's
 * drift. A durable round trip cannot beat the disk plus the wire: its target
 * (issue 18) is p50 ≤ 1.15 × (raw p50 + non-durable round trip p50), with
 * p99 ≤ 3 × p50. Used by bench-mqtt.ts and bench-amqp.ts, which also print
 * where the broker's threads spent each round trip (bench-thread-times.ts).
 */
import * as fs from 'node:fs';
import { join } from 'node:path';
import type { LatencySummary, RoundTripCase } from './bench-side-by-side.js';
import type { TimedCase } from './bench-thread-times.js';
import { fmt, tempDir } from './bench-mqtt.js';

const rawWriteBytes = Buffer.alloc(100, 0x61);
const rawWarmUpWrites = 20;
/** The durable p50 may exceed the sum of the disk's and the wire's p50 by this factor. */
export const durableOverheadMax = 1.15;
/** The durable p99 may be at most this many times its p50. */
export const durableTailMax = 3;

/**
 * Appending write(100 B) + fdatasync of a temp file on the bench disk, one sample per pair; the
 * fdatasync on the calling thread, or (`viaPool`) on libuv's thread pool as the broker's log does
 * it. On a loaded machine the two differ by more than the pool's hand-off: a thread that just
 * blocked in fdatasync can wait milliseconds for a CPU once its I/O is done, a pool thread that
 * rarely runs much less.
 */
export function openRawDiskCase(viaPool: boolean): Promise<RoundTripCase> {
  const temp = tempDir('cairn-bench-raw-');
  const fd = fs.openSync(join(temp.dir, 'raw'), 'w');
  const syncViaPool = (): Promise<void> => new Promise((done, reject) => fs.fdatasync(fd, (error) => (error ? reject(error) : done())));
  const writeAndSync = (): void => {
    fs.writeSync(fd, rawWriteBytes);
    fs.fdatasyncSync(fd);
  };
  for (let i = 0; i < rawWarmUpWrites; i++) writeAndSync();
  return Promise.resolve({
    sample: async (count) => {
      const samples = new Array<number>(count);
      for (let i = 0; i < count; i++) {
        const started = performance.now();
        if (viaPool) {
          fs.writeSync(fd, rawWriteBytes);
          await syncViaPool();
        } else {
          writeAndSync();
        }
        samples[i] = performance.now() - started;
      }
      return samples;
    },
    close: () => {
      fs.closeSync(fd);
      temp.remove();
      return Promise.resolve();
    },
  });
}

/** Both raw cases, calling thread first, for interleavedCases. */
export const rawDiskOpeners: readonly (() => Promise<RoundTripCase>)[] = [() => openRawDiskCase(false), () => openRawDiskCase(true)];

/** Table rows for the two raw cases. */
export function rawDiskRows(onCallingThread: LatencySummary, viaPool: LatencySummary): Array<[string, string]> {
  const ms = (value: number): string => `${fmt(value, 3)} ms`;
  return [
    ['raw write(100 B)+fdatasync p50 / p99, fdatasync on the calling thread', `${ms(onCallingThread.p50)} / ${ms(onCallingThread.p99)}`],
    ['raw write(100 B)+fdatasync p50 / p99, fdatasync on the thread pool', `${ms(viaPool.p50)} / ${ms(viaPool.p99)}`],
  ];
}

/**
 * Table rows: the durable round trip against its target, from figures sampled in alternation. The
 * disk's latency is the lower of the two raw p50s (each way of calling fdatasync is open to the broker).
 */
export function durableTargetRows(raw: readonly [LatencySummary, LatencySummary], nonDurable: LatencySummary, durable: LatencySummary): Array<[string, string]> {
  const floor = Math.min(raw[0].p50, raw[1].p50) + nonDurable.p50;
  const overhead = durable.p50 / floor;
  const tail = durable.p99 / durable.p50;
  const verdict = (value: number, max: number): string => `${fmt(value)} (target <= ${fmt(max)}: ${value <= max ? 'met' : 'missed'})`;
  return [
    ['durable p50 / (raw p50 + non-durable p50)', verdict(overhead, durableOverheadMax)],
    ['durable p99 / durable p50', verdict(tail, durableTailMax)],
  ];
}

/** A row of thread times per round trip (bench-thread-times.ts), or none without /proc. */
export function threadTimeRow(label: string, times: ReturnType<TimedCase['perRoundTrip']>): Array<[string, string]> {
  if (times === undefined) return [];
  const us = (value: number): string => `${fmt(value, 0)} us`;
  return [[`${label}: per round trip, event loop CPU / waiting for a CPU; other threads CPU / waiting`, `${us(times.loopRunUs)} / ${us(times.loopWaitUs)}; ${us(times.otherRunUs)} / ${us(times.otherWaitUs)}`]];
}
