/**
 * Where a lone batch's fdatasync runs (group-commit.ts): on the event loop
 * (fdatasyncSync) or on libuv's thread pool.
 *
 * The loop saves the hand-off: a futex wake of a pool thread, its wake-up, and
 * an eventfd wake-up of the loop when it is done (strace of a sequential
 * durable MQTT publish: 5.7 syscalls per round trip instead of 14.4, 3 thread
 * switches instead of 5.5). With a CPU free for the broker's threads it is
 * the faster lane: sequential QoS 1 to an offline persistent session, the
 * broker and client at real-time priority on a machine whose other processes
 * kept the disk busy, p50 0.56 / 0.82 ms on the loop against 0.77 / 0.80 ms via
 * the pool, 0.90 / 1.08 against 1.31 / 1.34 × (raw fdatasync + non-durable
 * round trip). Without a free CPU it is the other way round, by up to several
 * times: a busy event-loop thread that blocked in fdatasync waits for a CPU
 * when its I/O completes far longer than a pool thread that rarely runs
 * (durable p50 1.81 ms with every lone sync on the loop against 0.71–1.45 ms
 * via the pool, load 10–12 on 2 CPUs, normal priority).
 *
 * So the loop takes lone batches only while the machine has a CPU to spare:
 * the load average over the last minute below the number of CPUs (read at
 * most once a second), and not for a while after a sync on the loop was slow
 * (the loop blocked for it holds up every connection). Bigger batches, where other appends arrive during the
 * sync, always use the pool (GroupCommit.isLoneBatch).
 */
import * as os from 'node:os';

export type SyncLane = 'loop' | 'pool';

/** What group commit asks before a lone batch's sync, and tells after one on the loop. */
export interface SyncLanes {
  /** The lane for the next lone batch. */
  next(): SyncLane;
  /** How long a sync on the loop took (ms). */
  noteLoopSync(ms: number): void;
}

/** The load average is read at most this often. */
export const loadCheckIntervalMs = 1_000;
/**
 * A sync on the loop slower than this (a disk busy with writeback, a device that stalls) sends lone syncs to
 * the pool for poolAfterSlowSyncMs: every connection waits while the loop is blocked, and a slow sync must not
 * freeze them again and again.
 */
export const slowLoopSyncMs = 10;
export const poolAfterSlowSyncMs = 5_000;

export interface SyncLaneOptions {
  /** The load average over the last minute (os.loadavg()[0]). */
  readonly loadAverage: () => number;
  readonly cpus: number;
  /** Milliseconds, monotonic. */
  readonly now: () => number;
}

const machine: SyncLaneOptions = { loadAverage: () => os.loadavg()[0] ?? Number.POSITIVE_INFINITY, cpus: os.availableParallelism(), now: () => performance.now() };

export class SyncLaneChooser implements SyncLanes {
  private checkedAt = Number.NEGATIVE_INFINITY;
  private lane: SyncLane = 'pool';
  /** After a slow sync on the loop: the pool until then. */
  private poolUntil = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: SyncLaneOptions = machine) {}

  /** The lane for the next lone batch. */
  next(): SyncLane {
    const now = this.options.now();
    if (now < this.poolUntil) return 'pool';
    if (now - this.checkedAt >= loadCheckIntervalMs) {
      this.checkedAt = now;
      this.lane = this.options.loadAverage() < this.options.cpus ? 'loop' : 'pool';
    }
    return this.lane;
  }

  /** How long a sync on the loop took (ms): a slow one keeps the loop out of it for a while. */
  noteLoopSync(ms: number): void {
    if (ms > slowLoopSyncMs) this.poolUntil = this.options.now() + poolAfterSlowSyncMs;
  }
}
