/**
 * Where a lone batch's fdatasync runs (group-commit.ts): on the event loop
 * (fdatasyncSync) or on libuv's thread pool.
 *
 * The loop saves the hand-off: a futex wake of a pool thread, its wake-up, and
 * an eventfd wake-up of the loop when it is done. On this project's VMs, where
 * an idle vCPU halts and every cross-thread wake-up is an interrupt, that is
 * ~45 µs of a durable round trip on a quiet machine (bench-mqtt's raw rows,
 * two evenings: write + fdatasync 0.215 / 0.206 ms on the calling thread
 * against 0.261 / 0.249 ms via the pool). On a loaded machine it is the other
 * way round, by several times: a busy event-loop thread that blocked in
 * fdatasync waits for a CPU when its I/O completes far longer than a pool
 * thread that rarely runs (durable MQTT p50 1.81 ms with every lone sync on
 * the loop against 0.71–1.45 ms via the pool, load 10–12 on 2 CPUs).
 *
 * So the loop takes lone batches only while the machine has a CPU to spare:
 * the load average over the last minute below the number of CPUs (read at
 * most once a second). Bigger batches, where other appends arrive during the
 * sync, always use the pool (GroupCommit.isLoneBatch).
 */
import * as os from 'node:os';

export type SyncLane = 'loop' | 'pool';

/** The load average is read at most this often. */
export const loadCheckIntervalMs = 1_000;

export interface SyncLaneOptions {
  /** The load average over the last minute (os.loadavg()[0]). */
  readonly loadAverage: () => number;
  readonly cpus: number;
  /** Milliseconds, monotonic. */
  readonly now: () => number;
}

const machine: SyncLaneOptions = { loadAverage: () => os.loadavg()[0] ?? Number.POSITIVE_INFINITY, cpus: os.availableParallelism(), now: () => performance.now() };

export class SyncLaneChooser {
  private checkedAt = Number.NEGATIVE_INFINITY;
  private lane: SyncLane = 'pool';

  constructor(private readonly options: SyncLaneOptions = machine) {}

  /** The lane for the next lone batch. */
  next(): SyncLane {
    const now = this.options.now();
    if (now - this.checkedAt >= loadCheckIntervalMs) {
      this.checkedAt = now;
      this.lane = this.options.loadAverage() < this.options.cpus ? 'loop' : 'pool';
    }
    return this.lane;
  }
}
