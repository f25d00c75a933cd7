/**
 * Group commit: the append path.
 *
 * append() assigns LSNs and encodes frames synchronously into the pending
 * batch (one Buffer), so call order is LSN order and nextLsn is always exact.
 * The batch is handed to the disk by `pump`, which runs one microtask after the
 * first append of a tick (gathering that tick's appends, adding no wait) or
 * as soon as the previous write completes. There are no timers: the batch
 * window is the time the disk takes.
 *
 *   appends ──▶ pending batch ──write──▶ written ──fdatasync──▶ durable ──▶ promises resolve
 *
 * One write and one fdatasync are in flight at most. With `pipeline` on (the
 * default), batch k+1 is written while the fdatasync of batch k runs, and
 * each sync covers every write completed before it started; a promise resolves
 * only when a sync that covers its last record completes, in LSN order.
 * A lone appender pays exactly one write and one fdatasync. The fdatasync runs
 * on libuv's thread pool, except a lone batch's while the machine has a CPU to
 * spare: that one runs on the event loop, which saves the hand-off to a pool
 * thread and back (sync-lane.ts), and is written through an O_DSYNC descriptor
 * when nothing else waits for a sync: write and sync in one call
 * (data-sync-writer.ts).
 *
 * A batch notes each frame's offset from its start as it is encoded; when
 * the batch is written they join the segment's offset index (frame-offsets.ts),
 * shifted by where the batch went. Until then a read by LSN decodes the frame
 * from the batch buffer (`unwrittenFrame`).
 *
 * Rolling to a new segment is a barrier: it waits until everything written is
 * durable, so a segment is complete on disk before its successor exists
 * (recovery treats any bad record in a non-last segment as corruption).
 *
 * On the real file system the active segment is zero-filled ahead of the
 * writer in the background (zero-fill.ts), so each fdatasync is a data flush.
 *
 * A failed write or sync is fatal (see errors.ts: LogFailedError): every
 * outstanding promise rejects, every later append is refused, and `onFailed`
 * is told once (the server stops: fail-stop). One exception: a roll that could
 * not open the next segment for want of file descriptors (EMFILE, ENFILE) has
 * created nothing; appends go on in the current segment, past its size limit,
 * and the roll is retried after rollRetryDelayMs. Running out of descriptors
 * must refuse new connections, not appends.
 */
import { join } from 'node:path';
import { assert } from '../assert.js';
import { queueMicrotaskPlain } from '../microtask.js';
import type { Logger } from '../logger.js';
import { countLoneSync, markStage, Stage } from '../stage-timing.js';
import { DataSyncWriter } from './data-sync-writer.js';
import { isDescriptorShortage, LogClosedError, toLogFailedError, type LogFailedError } from './errors.js';
import { fdatasyncOnCallingThread, nodeFileSystem, writeFully, writeFullySync, type LogFileSystem } from './file-system.js';
import { FrameOffsets } from './frame-offsets.js';
import { appendFrame, assertFramesIntact, type AppendRecord, type Lsn } from './record.js';
import type { SegmentState } from './segment.js';
import type { SyncLanes } from './sync-lane.js';
import { ZeroFill, type ZeroFillSizes } from './zero-fill.js';

export interface ActiveSegment {
  readonly fd: number;
  /** Updated as writes complete: bytes, lastLsn, timestamps. */
  readonly state: SegmentState;
  /** The file's size when it became active: zeros from state.bytes up to here. */
  readonly fileBytes: number;
}

export interface GroupCommitOptions {
  /** The data directory: segment files are named by SegmentState.file inside it. */
  readonly dir: string;
  readonly nextLsn: Lsn;
  readonly active: ActiveSegment;
  readonly segmentBytesMax: number;
  /** Creates the segment starting at `firstLsn` and closes `previous`; called only when all written data is durable. */
  readonly roll: (firstLsn: Lsn, previous: ActiveSegment) => Promise<ActiveSegment>;
  readonly fileSystem: LogFileSystem;
  readonly pipeline: boolean;
  readonly logger: Logger;
  /**
   * Told after every fdatasync: how long it took and how many records it made durable (metrics). Told in the
   * next check phase of the event loop (setImmediate), at close, or once 64 wait (appenders that never let
   * the loop turn): not between the sync and the acknowledgements its appends are waited on for, which it would hold up.
   */
  readonly onSync: ((seconds: number, records: number) => void) | undefined;
  /** Keep the active segment zero-filled ahead of the writer (zero-fill.ts); undefined: don't. */
  readonly zeroFill: ZeroFillSizes | undefined;
  /** Told once, when the log fails for good. */
  readonly onFailed: ((error: LogFailedError) => void) | undefined;
  /** Where lone batches sync (sync-lane.ts). */
  readonly syncLanes: SyncLanes;
}

interface Waiter {
  readonly lastLsn: Lsn;
  readonly result: unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
}

const batchBytesInitial = 64 * 1024;
// A batch buffer that grew past this (a burst of big records) is dropped after its write instead of kept.
const batchBytesRetainedMax = 4 * 1024 * 1024;
// On the real file system a batch up to this size is written synchronously: copying a few KiB into
// the page cache takes tens of microseconds, about what submitting the write to the thread pool costs
// the event loop anyway, and it saves the round trip back (a lone appender waits for write, then
// fdatasync, before its ack). Measured on a sequential publish: receive → confirm p50 0.388 → 0.345 ms
// (server side, four interleaved runs). Bigger batches (throughput, where the write overlaps the
// previous fdatasync) and any injected file system (tests with write faults) stay asynchronous, so a
// slow write under memory pressure stalls the thread pool, not the event loop.
const syncWriteBytesMax = 16 * 1024;
// Resolved waiters are compacted away once this many have accumulated at the head of the queue.
const waiterCompactionThreshold = 1024;
// Records appended with `lazy` (nobody answers a client on their durability: consumer acks,
// deliveries) are written at once, like any record, so a killed process never loses them; their
// fdatasync waits for the next one somebody needs, or this long. In a publish → deliver → ack
// loop that halves the fdatasyncs: the ack rides on the next publish's.
export const lazySyncDelayMs = 10;
// A roll refused for want of file descriptors is tried again after this long (appends go on meanwhile).
export const rollRetryDelayMs = 1_000;

/** At most this many fdatasyncs wait to be told to onSync while the event loop does not turn. */
const syncReportsHeldMax = 64;

export class GroupCommit {
  private nextLsnValue: Lsn;
  private writtenLsnValue: Lsn;
  private durableLsnValue: Lsn;
  private failure: LogFailedError | undefined;
  private closed = false;
  private pending = new Batch(batchBytesInitial);
  /** The batch whose write is in flight, if any: its records are read from its buffer until the write completes. */
  private inWrite: Batch | undefined = undefined;
  private spare: Batch | undefined = new Batch(batchBytesInitial);
  private readonly waiters: Waiter[] = [];
  private waiterHead = 0;
  private writing = false;
  private syncing = false;
  /** The newest LSN somebody waits on (not lazy): a sync starts only while it is not durable. */
  private urgentLsn: Lsn;
  private lazySyncTimer: NodeJS.Timeout | undefined;
  /** Set while a roll refused for want of descriptors waits to be retried. */
  private rollRetryTimer: NodeJS.Timeout | undefined;
  private pumpScheduled = false;
  /** fdatasyncs not yet told to onSync: (seconds, records) pairs. */
  private syncReports: number[] = [];
  private syncReportScheduled = false;
  /**
   * The last report's Immediate, kept after it ran: an Immediate's shape is a V8 map that lives only as long as
   * some Immediate does, and a full GC between two syncs with none alive dropped it and the optimised code of this
   * path (noteSync, Node's timers) with it, to be compiled again among the next round trips.
   */
  private syncReportImmediate: NodeJS.Immediate | undefined = undefined;
  private idleCallbacks: (() => void)[] = [];
  private active: ActiveSegment;
  private readonly zeroFill: ZeroFill | undefined;
  /** The active segment's O_DSYNC descriptor, for lone batches on the loop lane. */
  private readonly dataSync = new DataSyncWriter();

  constructor(private readonly options: GroupCommitOptions) {
    this.nextLsnValue = options.nextLsn;
    this.writtenLsnValue = options.nextLsn - 1;
    this.durableLsnValue = options.nextLsn - 1;
    this.urgentLsn = options.nextLsn - 1;
    this.active = options.active;
    if (options.zeroFill !== undefined) {
      this.zeroFill = new ZeroFill(options.zeroFill, options.fileSystem, options.logger, () => {
        this.pump();
        this.notifyIfIdle();
      });
      this.startZeroFill(this.active);
    }
  }

  get nextLsn(): Lsn {
    return this.nextLsnValue;
  }
  get writtenLsn(): Lsn {
    return this.writtenLsnValue;
  }
  get durableLsn(): Lsn {
    return this.durableLsnValue;
  }
  get failed(): LogFailedError | undefined {
    return this.failure;
  }
  get activeSegment(): ActiveSegment {
    return this.active;
  }

  appendOne(record: AppendRecord): Promise<Lsn> {
    const refusal = this.refusal();
    if (refusal !== undefined) return Promise.reject(refusal);
    const lsn = this.nextLsnValue;
    try {
      this.encode(record, lsn);
    } catch (error) {
      return Promise.reject(error as Error);
    }
    this.nextLsnValue = lsn + 1;
    this.urgentLsn = lsn;
    return this.enqueue<Lsn>(lsn, lsn);
  }

  /** `lazy`: nobody waits on these to answer a client; their fdatasync may wait (see lazySyncDelayMs). */
  append(records: readonly AppendRecord[], lazy = false): Promise<Lsn[]> {
    const refusal = this.refusal();
    if (refusal !== undefined) return Promise.reject(refusal);
    if (records.length === 0) return Promise.resolve([]);
    const firstLsn = this.nextLsnValue;
    const mark = this.pending.mark();
    const lsns = new Array<Lsn>(records.length);
    try {
      for (let i = 0; i < records.length; i++) {
        this.encode(records[i]!, firstLsn + i);
        lsns[i] = firstLsn + i;
      }
    } catch (error) {
      // All or nothing: a bad record takes no LSN and leaves no frame behind.
      this.pending.rollback(mark);
      return Promise.reject(error as Error);
    }
    this.nextLsnValue = firstLsn + records.length;
    if (!lazy) this.urgentLsn = firstLsn + records.length - 1;
    return this.enqueue<Lsn[]>(firstLsn + records.length - 1, lsns);
  }

  /** Resolves when every record up to `lsn` is durable. */
  waitDurable(lsn: Lsn): Promise<void> {
    if (lsn <= this.durableLsnValue) return Promise.resolve();
    if (this.failure !== undefined) return Promise.reject(this.failure);
    assert(lsn < this.nextLsnValue, 'cannot wait for an LSN that has not been appended');
    const promise = this.enqueue<void>(lsn, undefined);
    // Already written and only waiting for a lazy sync: sync now.
    this.syncUpTo(lsn);
    return promise;
  }

  /**
   * The frame of an appended record that is not written yet: in the batch being written, or in the
   * pending one. Valid until the next append or the next turn of the event loop (the buffer is reused).
   */
  unwrittenFrame(lsn: Lsn): { buffer: Buffer; offset: number; length: number } | undefined {
    for (const batch of [this.inWrite, this.pending]) {
      if (batch === undefined || batch.length === 0 || lsn < batch.firstLsn || lsn > batch.lastLsn) continue;
      const index = lsn - batch.firstLsn;
      return { buffer: batch.buffer, offset: batch.frames.offsetOf(index), length: batch.frames.lengthOf(index) };
    }
    return undefined;
  }

  /** Refuses new appends, waits for the ones in flight, then for the disk calls to finish. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.rollRetryTimer);
    if (this.failure === undefined) await this.waitDurable(this.nextLsnValue - 1).catch(() => undefined);
    if (!this.idle()) await new Promise<void>((resolve) => this.idleCallbacks.push(resolve));
    this.dataSync.close();
    this.reportSyncs();
  }

  private refusal(): Error | undefined {
    if (this.failure !== undefined) return this.failure;
    if (this.closed) return new LogClosedError();
    return undefined;
  }

  private encode(record: AppendRecord, lsn: Lsn): void {
    const batch = this.pending;
    const length = appendFrame(batch, lsn, record);
    batch.length += length;
    batch.noteRecord(lsn, record.timestamp, length);
    markStage(Stage.appended);
  }

  private enqueue<T>(lastLsn: Lsn, result: T): Promise<T> {
    const promise = new Promise<T>((resolve, reject) => {
      this.waiters.push({ lastLsn, result, resolve: resolve as (value: unknown) => void, reject });
    });
    if (!this.pumpScheduled && !this.writing) {
      this.pumpScheduled = true;
      queueMicrotaskPlain(this.pumpTask);
    }
    return promise;
  }

  private readonly pumpTask = (): void => {
    this.pumpScheduled = false;
    this.pump();
  };

  /** Starts the next write if the disk lane is free and there is something to write. */
  private pump(): void {
    if (this.writing || this.failure !== undefined || this.pending.length === 0) return;
    if (this.syncing && !this.options.pipeline) return;
    if (this.needsRoll()) return this.rollWhenDurable();
    // The fill's completion pumps again.
    if (this.zeroFill?.blocks(this.active.state.bytes + this.pending.length) === true) return;
    const batch = this.pending;
    assert(batch.firstLsn === this.writtenLsnValue + 1, 'a batch does not start right after the last written LSN');
    assertFramesIntact(batch.buffer, batch.length, batch.firstLsn);
    this.pending = this.spare ?? new Batch(batchBytesInitial);
    this.spare = undefined;
    this.writing = true;
    this.inWrite = batch;
    const segment = this.active;
    if (this.options.fileSystem === nodeFileSystem && batch.length <= syncWriteBytesMax) {
      if (this.writeLoneBatchDurably(batch, segment)) return;
      this.afterWrite(writeFullySync(this.options.fileSystem, segment.fd, batch.buffer, batch.length, segment.state.bytes), batch, segment);
      return;
    }
    writeFully(this.options.fileSystem, segment.fd, batch.buffer, batch.length, segment.state.bytes, (error) => this.afterWrite(error, batch, segment));
  }

  private afterWrite(error: unknown, batch: Batch, segment: ActiveSegment): void {
    markStage(Stage.written);
    this.writing = false;
    this.inWrite = undefined;
    if (error !== null) return this.fail(error, 'segment write');
    this.noteWritten(batch, segment);
    this.startSync();
    this.pump();
    this.notifyIfIdle();
  }

  private noteWritten(batch: Batch, segment: ActiveSegment): void {
    // Before writtenLsn moves: a read by LSN of a written record finds it in the segment's index.
    batch.noteWrittenTo(segment.state);
    this.writtenLsnValue = batch.lastLsn;
    this.zeroFill?.topUp(segment.state.bytes);
    if (batch.buffer.length <= batchBytesRetainedMax) {
      batch.reset();
      this.spare = batch;
    }
  }

  /**
   * A lone batch on the loop lane (isLoneUnwrittenBatch) is written through the segment's O_DSYNC descriptor:
   * durable when the write returns, one call instead of write then fdatasync. False: not taken, nothing done.
   * Its write and sync being one call, it marks "sync submitted" and "sync done" but no "written" (stage-timing.ts).
   */
  private writeLoneBatchDurably(batch: Batch, segment: ActiveSegment): boolean {
    if (!this.isLoneUnwrittenBatch() || this.options.syncLanes.next() !== 'loop') return false;
    if (!this.dataSync.availableFor(join(this.options.dir, segment.state.file))) return false;
    countLoneSync('loop');
    this.syncing = true;
    // noteWritten resets the batch for reuse: its last LSN is taken now.
    const target = batch.lastLsn;
    const started = performance.now();
    markStage(Stage.syncSubmitted);
    const error = this.dataSync.writeDurably(batch.buffer, batch.length, segment.state.bytes);
    this.options.syncLanes.noteLoopSync(performance.now() - started);
    this.writing = false;
    this.inWrite = undefined;
    if (error !== null) {
      this.syncing = false;
      this.fail(error, 'segment write');
      return true;
    }
    this.noteWritten(batch, segment);
    this.afterSync(null, target, started);
    return true;
  }

  /**
   * The batch being written is all there is to make durable: one appender waits, for a record in it (not only
   * lazy ones), everything written before it is durable, no sync and no zero fill is in flight. Then a sync of
   * its range alone (O_DSYNC) makes durable all that an fdatasync of the file would.
   */
  private isLoneUnwrittenBatch(): boolean {
    return this.waiters.length - this.waiterHead === 1 && !this.syncing && this.durableLsnValue === this.writtenLsnValue && this.urgentLsn > this.durableLsnValue && this.zeroFill?.busy !== true;
  }

  private startSync(): void {
    if (this.syncing || this.failure !== undefined || this.durableLsnValue >= this.writtenLsnValue) return;
    if (this.urgentLsn <= this.durableLsnValue) return this.syncLater();
    clearTimeout(this.lazySyncTimer);
    this.lazySyncTimer = undefined;
    this.syncing = true;
    const target = this.writtenLsnValue;
    const started = performance.now();
    markStage(Stage.syncSubmitted);
    // A lone batch syncs right here on the event loop while the machine has a CPU to spare (sync-lane.ts).
    const lane = this.isLoneBatch() ? this.options.syncLanes.next() : undefined;
    if (lane !== undefined) countLoneSync(lane);
    if (lane === 'loop') {
      const error = fdatasyncOnCallingThread(this.active.fd);
      this.options.syncLanes.noteLoopSync(performance.now() - started);
      return this.afterSync(error, target, started);
    }
    this.options.fileSystem.fdatasync(this.active.fd, (error) => this.afterSync(error, target, started));
  }

  /**
   * One appender waits, nothing else is appended or being written, and no zero fill is in flight (its
   * 4 MiB flush must not block the loop): blocking the loop for this sync holds up only what arrives
   * during it, which then forms the next batch. Under many publishers a batch has many waiters and
   * always goes to the pool, so the next batch is written while it syncs.
   * Only on the real file system (an injected one, in tests, keeps its own fdatasync).
   */
  private isLoneBatch(): boolean {
    return this.options.fileSystem === nodeFileSystem && this.waiters.length - this.waiterHead === 1 && this.pending.length === 0 && !this.writing && this.zeroFill?.busy !== true;
  }

  private afterSync(error: unknown, target: Lsn, started: number): void {
    markStage(Stage.syncDone);
    this.syncing = false;
    if (error !== null) return this.fail(error, 'fdatasync');
    if (this.failure !== undefined) return this.notifyIfIdle();
    this.noteSync((performance.now() - started) / 1000, target - this.durableLsnValue);
    this.durableLsnValue = target;
    this.resolveDurable();
    this.startSync();
    this.pump();
    this.notifyIfIdle();
  }

  /**
   * Keeps an fdatasync's figures for onSync, told after the acknowledgements: observing two histograms cost
   * 1.5 us hot and ~7 us right after an idle wait (prom-client, loaded machine), on the path to every ack.
   */
  private noteSync(seconds: number, records: number): void {
    if (this.options.onSync === undefined) return;
    this.syncReports.push(seconds, records);
    // Appenders that never let the loop turn (a closed loop of in-process appends, each sync on the loop) are told every so often.
    if (this.syncReports.length >= 2 * syncReportsHeldMax) return this.reportSyncs();
    if (this.syncReportScheduled) return;
    this.syncReportScheduled = true;
    this.syncReportImmediate = setImmediate(this.reportSyncs);
  }

  private readonly reportSyncs = (): void => {
    this.syncReportScheduled = false;
    const reports = this.syncReports;
    if (reports.length === 0) return;
    this.syncReports = [];
    for (let i = 0; i < reports.length; i += 2) this.options.onSync?.(reports[i]!, reports[i + 1]!);
  };

  /** Only lazy records are written and not durable: sync them if nothing else does within lazySyncDelayMs. */
  private syncLater(): void {
    this.lazySyncTimer ??= setTimeout(this.lazySyncTask, lazySyncDelayMs);
  }

  private readonly lazySyncTask = (): void => {
    this.lazySyncTimer = undefined;
    this.syncUpTo(this.writtenLsnValue);
  };

  /** Somebody waits on everything up to `lsn` now: lazy records included, sync as soon as the disk lane allows. */
  private syncUpTo(lsn: Lsn): void {
    if (lsn > this.urgentLsn) this.urgentLsn = lsn;
    this.startSync();
  }

  private needsRoll(): boolean {
    if (this.rollRetryTimer !== undefined) return false;
    const state = this.active.state;
    return state.bytes >= this.options.segmentBytesMax && state.lastLsn >= state.firstLsn;
  }

  private rollWhenDurable(): void {
    // The sync (or fill) completion calls pump again, which comes back here.
    // Lazy records must not hold up the roll (and the records behind it) for lazySyncDelayMs.
    if (this.durableLsnValue < this.writtenLsnValue) return this.syncUpTo(this.writtenLsnValue);
    if (this.syncing || this.zeroFill?.busy === true) return;
    this.writing = true;
    this.options.roll(this.writtenLsnValue + 1, this.active).then(
      (segment) => {
        this.active = segment;
        this.dataSync.close();
        this.writing = false;
        this.startZeroFill(segment);
        this.pump();
        this.notifyIfIdle();
      },
      (error: unknown) => {
        this.writing = false;
        if (!isDescriptorShortage(error)) return this.fail(error, 'segment roll');
        this.postponeRoll(error);
      },
    );
  }

  /** The next segment could not be opened (EMFILE, ENFILE) and nothing was created: keep appending here, retry later. */
  private postponeRoll(error: unknown): void {
    this.options.logger.warn({ err: error, segment: this.active.state.file, bytes: this.active.state.bytes, retryMs: rollRetryDelayMs }, 'out of file descriptors: could not open the next segment; appends go on in the current one and the roll is retried');
    this.rollRetryTimer = setTimeout(() => {
      this.rollRetryTimer = undefined;
      this.pump();
    }, rollRetryDelayMs);
    // Nothing to do at the retry unless records arrive, and those keep the process alive themselves.
    this.rollRetryTimer.unref();
    this.pump();
    this.notifyIfIdle();
  }

  private resolveDurable(): void {
    const waiters = this.waiters;
    const durable = this.durableLsnValue;
    let head = this.waiterHead;
    while (head < waiters.length) {
      const waiter = waiters[head]!;
      if (waiter.lastLsn > durable) break;
      head += 1;
      waiter.resolve(waiter.result);
    }
    if (head === waiters.length) {
      waiters.length = 0;
      head = 0;
    } else if (head >= waiterCompactionThreshold) {
      waiters.splice(0, head);
      head = 0;
    }
    this.waiterHead = head;
  }

  private fail(cause: unknown, during: string): void {
    if (this.failure === undefined) {
      const failure = toLogFailedError(cause, during);
      this.failure = failure;
      this.options.logger.error({ err: cause, during, durableLsn: this.durableLsnValue, nextLsn: this.nextLsnValue }, 'the log failed and refuses further appends; restart to recover');
      clearTimeout(this.lazySyncTimer);
      this.lazySyncTimer = undefined;
      const outstanding = this.waiters.slice(this.waiterHead);
      this.waiters.length = 0;
      this.waiterHead = 0;
      this.pending.reset();
      for (const waiter of outstanding) waiter.reject(failure);
      this.options.onFailed?.(failure);
    }
    this.notifyIfIdle();
  }

  private startZeroFill(segment: ActiveSegment): void {
    this.zeroFill?.attach(segment.fd, segment.fileBytes);
    this.zeroFill?.topUp(segment.state.bytes);
  }

  private idle(): boolean {
    return !this.writing && !this.syncing && this.zeroFill?.busy !== true;
  }

  private notifyIfIdle(): void {
    if (!this.idle() || this.idleCallbacks.length === 0) return;
    const callbacks = this.idleCallbacks;
    this.idleCallbacks = [];
    for (const callback of callbacks) callback();
  }
}

/** Encoded frames waiting for (or in) one write. */
class Batch {
  buffer: Buffer;
  length = 0;
  firstLsn = 0;
  lastLsn = 0;
  firstTimestamp = 0;
  lastTimestamp = 0;
  maxTimestamp = -Infinity;
  /** Each frame's offset from the start of the batch; shifted into the segment's index once written. */
  readonly frames = new FrameOffsets(0);

  constructor(capacity: number) {
    this.buffer = Buffer.allocUnsafe(capacity);
  }

  reserve(bytes: number): void {
    if (this.length + bytes <= this.buffer.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.length + bytes, this.buffer.length * 2));
    this.buffer.copy(bigger, 0, 0, this.length);
    this.buffer = bigger;
  }

  noteRecord(lsn: Lsn, timestamp: number, frameBytes: number): void {
    this.frames.add(frameBytes);
    if (this.firstLsn === 0) {
      this.firstLsn = lsn;
      this.firstTimestamp = timestamp;
    }
    this.lastLsn = lsn;
    this.lastTimestamp = timestamp;
    if (timestamp > this.maxTimestamp) this.maxTimestamp = timestamp;
  }

  mark(): BatchMark {
    return { length: this.length, firstLsn: this.firstLsn, lastLsn: this.lastLsn, firstTimestamp: this.firstTimestamp, lastTimestamp: this.lastTimestamp, maxTimestamp: this.maxTimestamp, frameCount: this.frames.count };
  }

  rollback(mark: BatchMark): void {
    const { frameCount, ...fields } = mark;
    Object.assign(this, fields);
    this.frames.truncate(frameCount);
  }

  /** The batch was written at the segment's end (state.bytes): the segment grows by it, and so does its index. */
  noteWrittenTo(state: SegmentState): void {
    assert(state.offsets !== undefined, 'the active segment has no offset index');
    state.offsets.addShifted(this.frames, state.bytes);
    state.bytes += this.length;
    state.lastLsn = this.lastLsn;
    if (state.timestamps === undefined) {
      state.timestamps = { first: this.firstTimestamp, last: this.lastTimestamp, max: this.maxTimestamp };
    } else {
      state.timestamps.last = this.lastTimestamp;
      if (this.maxTimestamp > state.timestamps.max) state.timestamps.max = this.maxTimestamp;
    }
  }

  reset(): void {
    this.frames.clear();
    this.length = 0;
    this.firstLsn = 0;
    this.lastLsn = 0;
    this.maxTimestamp = -Infinity;
  }
}

type BatchMark = Pick<Batch, 'length' | 'firstLsn' | 'lastLsn' | 'firstTimestamp' | 'lastTimestamp' | 'maxTimestamp'> & { readonly frameCount: number };
