/**
 * SegmentedLog: the broker's only source of truth. Opens (and recovers) a data
 * directory, appends with group commit, reads forward from an LSN or a time,
 * reads one record by LSN (through each segment's offset index, see
 * frame-offsets.ts and read-record.ts), writes and loads snapshots, and
 * applies retention.
 *
 * Invariants:
 * - LSNs are consecutive from 1; the segments hold one unbroken chain of them
 *   from firstLsn to nextLsn - 1 (only a prefix is ever removed).
 * - A promise returned by append resolves only after fdatasync of its records.
 * - A snapshot never covers a record that is not durable yet.
 * - The last segment is never removed, so nextLsn survives any retention.
 * - Retention never removes a segment holding an LSN >= the caller's pin
 *   (`applyRetention({ keepFromLsn })`: the broker passes the LSN of the
 *   oldest message still queued, whose payload is read back from its segment),
 *   and never the newest valid snapshot, nor an invalid one (retention.ts).
 * - Every LSN from firstLsn to nextLsn - 1 can be read by LSN: from the
 *   pending or in-flight batch until written, from its segment after.
 */
import { join } from 'node:path';
import { assert } from '../assert.js';
import { silentLogger, type Logger } from '../logger.js';
import { LogClosedError, LogError, NoSuchRecordError, NotACairnLogError, type LogFailedError } from './errors.js';
import { fsyncDirectory, makeDirectoryDurably, nodeFileSystem, writeAllAsync, type LogFileSystem } from './file-system.js';
import { FrameOffsets } from './frame-offsets.js';
import { GroupCommit, type ActiveSegment } from './group-commit.js';
import { decodeBatchFrame, RecordFetcher } from './read-record.js';
import { checkReadFrom, readRecords, type ReadFrom } from './read.js';
import { HistoryCheck, withoutRetired, type HistoryStatus } from './history.js';
import { applyRecoveryPlan, planRecovery, scanSegment } from './recovery.js';
import type { AppendRecord, LogRecord, Lsn } from './record.js';
import { planRetention, removeOrArchive, type RetentionCandidate, type SnapshotCandidate } from './retention.js';
import { createSegment, listDataDirectory, segmentFileName, segmentHeaderBytes, toSegmentInfo, type SegmentInfo, type SegmentState } from './segment.js';
import { firstValidSnapshotAtOrAfter, loadNewestValidSnapshot, readSnapshotFile, writeSnapshotFile, type Snapshot } from './snapshot.js';
import { zeroBuffer, zeroFillSizes, type ZeroFillSizes } from './zero-fill.js';
import { SyncLaneChooser, type SyncLanes } from './sync-lane.js';

export interface LogOptions {
  dir: string;
  /** Roll to a new segment once the current one has passed this size. Default 64 MiB. */
  segmentBytesMax?: number;
  /** Retention moves segments (and retired snapshots) here instead of deleting them. */
  archiveDir?: string;
  /** Keep at least this many bytes of the newest segments (point-in-time window). Default: keep all. */
  retentionBytes?: number;
  /** Keep segments holding a record younger than this. Default: keep all. */
  retentionMs?: number;
  logger?: Logger;
  /** Wall clock for retention by age. Default Date.now. */
  clock?: () => number;
  /** Internal (tests): every file-system call the log makes, to inject failures or simulate power loss (file-system.ts). */
  fileSystem?: LogFileSystem;
  /** Internal (benchmarks): write batch k+1 while batch k syncs. Default true. */
  pipeline?: boolean;
  /** Internal (tests): where a lone batch's fdatasync runs (sync-lane.ts). Default: after the machine's load. */
  syncLanes?: SyncLanes;
  /** Told after every fdatasync: its duration and the records it made durable (for metrics). */
  onSync?: (seconds: number, records: number) => void;
  /** Keep the active segment zero-filled ahead of the writer (zero-fill.ts). Default: on, unless a fileSystem is injected. */
  preallocate?: boolean;
  /** Told once, when a write or fdatasync failed and the log refuses appends for good (see errors.ts: LogFailedError). */
  onFailed?: (error: LogFailedError) => void;
  /**
   * The operator accepts that the log ends at this LSN although the newest snapshot covers later
   * records (the newest segments are lost): start from the snapshot (recovery.ts, "log end").
   */
  acceptLostRecordsAfter?: Lsn | undefined;
}

/** What retention must keep besides what its policy keeps. */
export interface RetentionPin {
  /** Keep every segment holding an LSN >= this (the oldest record a live message needs); undefined: no pin. */
  readonly keepFromLsn?: Lsn | undefined;
}

export const segmentBytesMaxDefault = 64 * 1024 * 1024;
/** Tiny segments are for tests; below this a segment could not hold a useful record. */
export const segmentBytesMaxMin = 256;
export const segmentBytesMaxMax = 2 ** 40;

interface Settings {
  readonly dir: string;
  readonly segmentBytesMax: number;
  readonly archiveDir: string | undefined;
  readonly retentionBytes: number | undefined;
  readonly retentionMs: number | undefined;
  readonly logger: Logger;
  readonly clock: () => number;
  readonly fileSystem: LogFileSystem;
  readonly pipeline: boolean;
  readonly syncLanes: SyncLanes;
  readonly onSync: ((seconds: number, records: number) => void) | undefined;
  readonly zeroFill: ZeroFillSizes | undefined;
  readonly onFailed: ((error: LogFailedError) => void) | undefined;
}

export class SegmentedLog {
  private readonly commit: GroupCommit;
  private readonly fetcher: RecordFetcher;
  private maintenance: Promise<unknown> = Promise.resolve();
  private closing: Promise<void> | undefined;
  /** Whether each snapshot file (by LSN) passed its checks: those written or loaded here, and those retention has read. */
  private readonly snapshotValidity = new Map<Lsn, boolean>();
  /** The snapshot open() read and checked, until loadSnapshot() hands it over (start-up reads it once, not twice). */
  private openedSnapshot: Snapshot | undefined = undefined;

  private constructor(
    private readonly settings: Settings,
    private readonly segmentList: SegmentState[],
    activeFd: number,
    activeFileBytes: number,
    private newestSnapshotLsn: Lsn | undefined,
    private readonly historyCheck: HistoryCheck,
  ) {
    if (newestSnapshotLsn !== undefined) this.snapshotValidity.set(newestSnapshotLsn, true);
    const last = segmentList[segmentList.length - 1]!;
    this.fetcher = new RecordFetcher(settings.fileSystem, settings.dir);
    this.commit = new GroupCommit({
      dir: settings.dir,
      nextLsn: last.lastLsn + 1,
      active: { fd: activeFd, state: last, fileBytes: activeFileBytes },
      segmentBytesMax: settings.segmentBytesMax,
      roll: (firstLsn, previous) => this.roll(firstLsn, previous),
      fileSystem: settings.fileSystem,
      pipeline: settings.pipeline,
      syncLanes: settings.syncLanes,
      logger: settings.logger,
      onSync: settings.onSync,
      zeroFill: settings.zeroFill,
      onFailed: settings.onFailed,
    });
  }

  static async open(options: LogOptions): Promise<SegmentedLog> {
    const settings = resolveSettings(options);
    const { dir, logger, fileSystem } = settings;
    await makeDirectoryDurably(fileSystem, dir);
    const listing = listDataDirectory(fileSystem, dir);
    if (settings.archiveDir !== undefined) await makeDirectoryDurably(fileSystem, settings.archiveDir);
    // The archive directory may sit inside the data directory: it is not foreign, even before the first segment
    // (a crash can come between creating it and the first segment).
    const foreign = listing.foreign.filter((name) => settings.archiveDir === undefined || join(dir, name) !== join(settings.archiveDir));
    if (listing.segments.length === 0) {
      const others = [...listing.snapshots.map((s) => s.file), ...listing.snapshotTemporaries, ...foreign];
      if (others.length > 0) throw new NotACairnLogError(dir, others);
      const zeros = initialZeros(settings);
      const fd = await createSegment(fileSystem, dir, 1, zeros === undefined ? {} : { zeros });
      logger.info({ dir }, 'created a new log');
      const state = { file: segmentFileName(1), firstLsn: 1, lastLsn: 0, bytes: segmentHeaderBytes, timestamps: undefined, offsets: new FrameOffsets(segmentHeaderBytes) };
      return new SegmentedLog(settings, [state], fd, segmentHeaderBytes + (zeros?.length ?? 0), undefined, new HistoryCheck(fileSystem, dir, [], () => undefined));
    }
    if (foreign.length > 0) logger.warn({ dir, files: foreign }, 'the log directory holds files that are not part of the log; leaving them alone');
    await removeSnapshotTemporaries(fileSystem, dir, listing.snapshotTemporaries, logger);
    const snapshot = loadNewestValidSnapshot(fileSystem, dir, listing.snapshots, logger);
    const plan = planRecovery(fileSystem, dir, listing.segments, snapshot?.lsn, { acceptLostRecordsAfter: options.acceptLostRecordsAfter });
    const { segments, newSegmentFd } = await applyRecoveryPlan(fileSystem, dir, plan, logger, initialZeros(settings));
    if (newSegmentFd !== undefined) await fileSystem.closeAsync(newSegmentFd);
    const history = new HistoryCheck(fileSystem, dir, plan.history, (lsn) => firstValidSnapshotAtOrAfter(fileSystem, dir, listing.snapshots, lsn));
    const last = segments[segments.length - 1]!;
    const fd = await fileSystem.openAsync(join(dir, last.file), 'r+');
    // After the last frame there are only zeros now (recovery truncated anything else): zero-fill ahead of
    // the writer as a new segment would be, unless the file already has that much.
    const zeros = initialZeros(settings);
    let size = (await fileSystem.fstatAsync(fd)).size;
    if (zeros !== undefined && size < last.bytes + zeros.length) {
      await writeAllAsync(fileSystem, fd, [zeros], last.bytes, 'zero fill');
      size = last.bytes + zeros.length;
    }
    // Everything on disk now counts as durable: make it so (the crash may have come before the last fdatasync).
    await fileSystem.fsyncAsync(fd);
    logger.info({ dir, segments: segments.length, firstLsn: segments[0]!.firstLsn, nextLsn: last.lastLsn + 1, snapshotLsn: snapshot?.lsn, tornTail: plan.tornTail, historySegments: plan.history.length }, 'opened the log');
    const log = new SegmentedLog(settings, segments, fd, size, snapshot?.lsn, history);
    log.openedSnapshot = snapshot === undefined ? undefined : { lsn: snapshot.lsn, data: snapshot.data };
    return log;
  }

  /** The LSN the next appended record will get. */
  get nextLsn(): Lsn {
    return this.commit.nextLsn;
  }

  /** The oldest LSN still readable (after retention); equals nextLsn when the log holds no record. */
  get firstLsn(): Lsn {
    return this.segmentList[0]!.firstLsn;
  }

  /** The highest LSN known durable (0 if none). */
  get durableLsn(): Lsn {
    return this.commit.durableLsn;
  }

  get failed(): LogFailedError | undefined {
    return this.commit.failed;
  }

  /**
   * LSNs are assigned synchronously in call order; resolves once the records are fdatasync'ed.
   * `lazy`: nobody answers a client on these records' durability (consumer acks, deliveries): they
   * are written at once but their fdatasync may wait for the next one, up to lazySyncDelayMs.
   */
  append(records: readonly AppendRecord[], options: { lazy?: boolean } = {}): Promise<Lsn[]> {
    return this.commit.append(records, options.lazy === true);
  }

  appendOne(record: AppendRecord): Promise<Lsn> {
    return this.commit.appendOne(record);
  }

  /** Resolves when everything appended so far is durable, without waiting for the lazy-sync delay. */
  sync(): Promise<void> {
    return this.commit.waitDurable(this.commit.nextLsn - 1);
  }

  /** Records written by now, from `from` on, across segments. */
  read(from: ReadFrom = {}): IterableIterator<LogRecord> {
    checkReadFrom(from);
    const view = this.segmentList.map((s) => ({ file: s.file, firstLsn: s.firstLsn, lastLsn: s.lastLsn, bytes: s.bytes, maxTimestamp: s.timestamps?.max, offsets: s.offsets }));
    return readRecords(this.settings.fileSystem, this.settings.dir, view, from);
  }

  /**
   * The record at `lsn`, synchronously: any LSN from firstLsn to nextLsn - 1, durable or not (one not
   * written yet is decoded from its batch). One positioned read, checksum verified. Throws
   * NoSuchRecordError outside that range, CorruptRecordError (naming segment and LSN) for a damaged
   * frame, RecordReadError when the file system fails.
   */
  readRecord(lsn: Lsn): LogRecord {
    if (this.closing !== undefined) throw new LogClosedError();
    if (!Number.isSafeInteger(lsn)) throw new LogError('EINVALIDARGUMENT', `an LSN is an integer, got ${String(lsn)}`);
    const { firstLsn, nextLsn } = this;
    if (lsn < firstLsn) throw new NoSuchRecordError(lsn, firstLsn, nextLsn - 1, lsn < 1 ? 'LSNs start at 1' : 'retention has removed it');
    if (lsn >= nextLsn) throw new NoSuchRecordError(lsn, firstLsn, nextLsn - 1, 'it has not been appended yet');
    if (lsn > this.commit.writtenLsn) return this.readUnwritten(lsn);
    return this.fetcher.read(this.segmentHolding(lsn), lsn);
  }

  segments(): SegmentInfo[] {
    return this.segmentList.map(toSegmentInfo);
  }

  /** Waits until `lsn` is durable, then writes the snapshot (temp file, fsync, rename, fsync dir). */
  writeSnapshot(lsn: Lsn, data: Uint8Array): Promise<void> {
    if (this.closing !== undefined) return Promise.reject(new LogClosedError());
    if (!Number.isSafeInteger(lsn) || lsn < 1 || lsn >= this.nextLsn) {
      return Promise.reject(new LogError('EINVALIDARGUMENT', `a snapshot must cover an appended LSN (1..${this.nextLsn - 1}), got ${String(lsn)}`));
    }
    return this.exclusively(async () => {
      await this.commit.waitDurable(lsn);
      const file = await writeSnapshotFile(this.settings.fileSystem, this.settings.dir, lsn, data);
      if (this.newestSnapshotLsn === undefined || lsn > this.newestSnapshotLsn) this.newestSnapshotLsn = lsn;
      this.snapshotValidity.set(lsn, true);
      this.settings.logger.info({ snapshot: file, lsn, bytes: data.length }, 'snapshot written');
    });
  }

  /** The newest valid snapshot; a half-written or corrupt one is logged and skipped. */
  loadSnapshot(): Snapshot | undefined {
    // The first load after open() gets what open() read and checked, while no newer snapshot was written since:
    // a million queued messages make a snapshot of ~25 MB, and reading and checking it again cost ~0.1 s of start-up.
    const opened = this.openedSnapshot;
    this.openedSnapshot = undefined;
    if (opened !== undefined && opened.lsn === this.newestSnapshotLsn) return opened;
    const { fileSystem, dir, logger } = this.settings;
    const snapshot = loadNewestValidSnapshot(fileSystem, dir, listDataDirectory(fileSystem, dir).snapshots, logger);
    return snapshot === undefined ? undefined : { lsn: snapshot.lsn, data: snapshot.data };
  }

  /**
   * Removes (or archives) the segments retention allows and the snapshots it no longer needs (retention.ts):
   * call it after each snapshot. `keepFromLsn` pins the log: no segment holding that LSN or a later one goes.
   */
  applyRetention(pin: RetentionPin = {}): Promise<{ removed: string[]; archived: string[] }> {
    if (this.closing !== undefined) return Promise.reject(new LogClosedError());
    const { keepFromLsn } = pin;
    if (keepFromLsn !== undefined && !(Number.isSafeInteger(keepFromLsn) && keepFromLsn >= 1)) {
      return Promise.reject(new LogError('EINVALIDARGUMENT', `keepFromLsn must be a positive integer, got ${String(keepFromLsn)}`));
    }
    return this.exclusively(() => this.retain(keepFromLsn));
  }

  /** Refuses new appends, waits for those in flight, and closes the files. */
  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  /**
   * Checks the records of the history (the segments before the newest snapshot, which start-up does not read)
   * in the background, once; resolves with the final status. Call it once the broker serves.
   */
  checkHistory(): Promise<HistoryStatus> {
    return this.historyCheck.start();
  }

  /** The history check's status, without what retention has removed since (it no longer counts as damage). */
  get history(): HistoryStatus {
    return withoutRetired(this.historyCheck.status, this.firstLsn);
  }

  private readUnwritten(lsn: Lsn): LogRecord {
    const frame = this.commit.unwrittenFrame(lsn);
    if (frame !== undefined) return decodeBatchFrame(frame, lsn);
    const failure = this.commit.failed;
    // An appended record is in a batch until written, unless the log failed and dropped the batch.
    assert(failure !== undefined, 'an appended record is neither written nor in a batch');
    throw new NoSuchRecordError(lsn, this.firstLsn, this.commit.writtenLsn, `it was appended but never written: ${failure.message}`);
  }

  /** The segment whose LSN range holds `lsn` (firstLsn <= lsn <= writtenLsn), by binary search on first LSNs. */
  private segmentHolding(lsn: Lsn): SegmentState {
    const segments = this.segmentList;
    let low = 0;
    let high = segments.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >>> 1;
      if (segments[middle]!.firstLsn <= lsn) low = middle;
      else high = middle - 1;
    }
    const segment = segments[low]!;
    if (lsn > segment.lastLsn) {
      // Only the operator's --accept-lost-records-after leaves such a gap (recovery.ts, "log end").
      const next = segments[low + 1]!;
      throw new NoSuchRecordError(lsn, this.firstLsn, this.commit.writtenLsn, `LSN ${segment.lastLsn + 1}..${next.firstLsn - 1} were lost with the newest segments (the operator started from the snapshot)`);
    }
    return segment;
  }

  private async shutDown(): Promise<void> {
    await this.historyCheck.stop();
    await this.commit.close();
    await this.maintenance.catch(() => undefined);
    this.fetcher.close();
    await this.settings.fileSystem.closeAsync(this.commit.activeSegment.fd);
  }

  private async roll(firstLsn: Lsn, previous: ActiveSegment): Promise<ActiveSegment> {
    // A sealed segment ends with its last frame: its zero-filled space goes, durably, before the next segment exists.
    const { fileSystem } = this.settings;
    if ((await fileSystem.fstatAsync(previous.fd)).size > previous.state.bytes) {
      await fileSystem.ftruncateAsync(previous.fd, previous.state.bytes);
      await fileSystem.fsyncAsync(previous.fd);
    }
    const zeros = initialZeros(this.settings);
    const fd = await createSegment(fileSystem, this.settings.dir, firstLsn, zeros === undefined ? {} : { zeros });
    const state: SegmentState = { file: segmentFileName(firstLsn), firstLsn, lastLsn: firstLsn - 1, bytes: segmentHeaderBytes, timestamps: undefined, offsets: new FrameOffsets(segmentHeaderBytes) };
    previous.state.offsets?.trim();
    this.segmentList.push(state);
    await fileSystem.closeAsync(previous.fd);
    this.settings.logger.debug({ segment: state.file, previous: previous.state.file, previousBytes: previous.state.bytes }, 'rolled to a new segment');
    return { fd, state, fileBytes: segmentHeaderBytes + (zeros?.length ?? 0) };
  }

  /**
   * What retention would remove if no message were queued: every record below `beforeLsn`, `bytes` of
   * segments. Undefined when it would remove nothing. The broker moves the few live messages out of such
   * segments so that they can go (core/segment-release.ts).
   */
  releasable(): { beforeLsn: Lsn; bytes: number } | undefined {
    if (this.closing !== undefined) return undefined;
    const inputs = this.retentionInputs();
    if (inputs === undefined) return undefined;
    const plan = planRetention(inputs.candidates, inputs.snapshots, this.settings, this.settings.clock(), undefined);
    if (plan.segments === 0) return undefined;
    const segments = this.segmentList.slice(0, plan.segments);
    return { beforeLsn: segments[segments.length - 1]!.lastLsn + 1, bytes: segments.reduce((sum, s) => sum + s.bytes, 0) };
  }

  private retentionInputs(): { candidates: RetentionCandidate[]; snapshots: Array<SnapshotCandidate & { file: string }> } | undefined {
    const { dir, fileSystem } = this.settings;
    const snapshotLsn = this.newestSnapshotLsn;
    if (snapshotLsn === undefined) return undefined;
    if (this.settings.retentionMs !== undefined) this.learnTimestamps(snapshotLsn);
    const candidates = this.segmentList.map((s) => ({ bytes: s.bytes, firstLsn: s.firstLsn, lastLsn: s.lastLsn, maxTimestamp: s.timestamps?.max }));
    // Never a snapshot newer than the newest this log wrote or loaded: it is not one retention knows to be valid.
    const snapshots = listDataDirectory(fileSystem, dir).snapshots.filter((s) => s.lsn <= snapshotLsn).map((s) => ({ ...s, valid: this.isValidSnapshot(s) }));
    return { candidates, snapshots };
  }

  private async retain(keepFromLsn: Lsn | undefined): Promise<{ removed: string[]; archived: string[] }> {
    const { dir, archiveDir, logger, fileSystem } = this.settings;
    const snapshotLsn = this.newestSnapshotLsn;
    const inputs = this.retentionInputs();
    if (inputs === undefined) return { removed: [], archived: [] };
    const { candidates, snapshots } = inputs;
    const plan = planRetention(candidates, snapshots, this.settings, this.settings.clock(), keepFromLsn);
    // Forget the segments first (their offset indexes go with them), so no read started from now on can reach them.
    const files = this.segmentList.splice(0, plan.segments).map((s) => s.file);
    for (const file of files) this.fetcher.forget(file);
    const retired = snapshots.filter((s) => plan.snapshots.includes(s.lsn));
    for (const s of retired) this.snapshotValidity.delete(s.lsn);
    const result = await removeOrArchive(fileSystem, dir, archiveDir, [...files, ...retired.map((s) => s.file)]);
    if (files.length + retired.length > 0) logger.info({ ...result, firstLsn: this.firstLsn, snapshotLsn, keepFromLsn }, 'retention applied');
    return result;
  }

  /** Reads a snapshot file once to check it (a file never changes under its name except by writeSnapshot). */
  private isValidSnapshot(snapshot: { file: string; lsn: Lsn }): boolean {
    let valid = this.snapshotValidity.get(snapshot.lsn);
    if (valid === undefined) {
      valid = !('invalid' in readSnapshotFile(this.settings.fileSystem, this.settings.dir, snapshot.file, snapshot.lsn));
      this.snapshotValidity.set(snapshot.lsn, valid);
    }
    return valid;
  }

  /**
   * Retention by age needs each candidate segment's newest timestamp: scan the ones not seen yet. A damaged
   * one (only history can be, and the history check reports it) counts by its readable records: it cannot be
   * restored anyway, so it must not hold retention up.
   */
  private learnTimestamps(snapshotLsn: Lsn): void {
    const { fileSystem, dir } = this.settings;
    for (const segment of this.segmentList.slice(0, -1)) {
      if (segment.lastLsn > snapshotLsn) break;
      if (segment.timestamps !== undefined || segment.lastLsn < segment.firstLsn) continue;
      const scan = scanSegment(fileSystem, dir, segment.file, segment.firstLsn, segment.bytes);
      segment.timestamps = scan.timestamps;
      // The scan indexed it too; a damaged one is left to be indexed (and its damage located) by a read.
      if (segment.offsets === undefined && scan.bad === undefined) segment.offsets = scan.offsets;
    }
  }

  /** Snapshot writes and retention run one at a time. */
  private exclusively<T>(task: () => Promise<T>): Promise<T> {
    const run = this.maintenance.then(task, task);
    this.maintenance = run.catch(() => undefined);
    return run;
  }
}

function resolveSettings(options: LogOptions): Settings {
  const segmentBytesMax = options.segmentBytesMax ?? segmentBytesMaxDefault;
  if (!Number.isSafeInteger(segmentBytesMax) || segmentBytesMax < segmentBytesMaxMin || segmentBytesMax > segmentBytesMaxMax) {
    throw new LogError('EINVALIDARGUMENT', `segmentBytesMax must be an integer in ${segmentBytesMaxMin}..${segmentBytesMaxMax}, got ${String(segmentBytesMax)}`);
  }
  for (const name of ['retentionBytes', 'retentionMs'] as const) {
    const value = options[name];
    if (value !== undefined && !(Number.isSafeInteger(value) && value >= 0)) throw new LogError('EINVALIDARGUMENT', `${name} must be a non-negative integer, got ${String(value)}`);
  }
  const fileSystem = options.fileSystem ?? nodeFileSystem;
  const preallocate = options.preallocate ?? fileSystem === nodeFileSystem;
  return {
    dir: options.dir,
    segmentBytesMax,
    archiveDir: options.archiveDir,
    retentionBytes: options.retentionBytes,
    retentionMs: options.retentionMs,
    logger: options.logger ?? silentLogger(),
    clock: options.clock ?? Date.now,
    fileSystem,
    pipeline: options.pipeline ?? true,
    syncLanes: options.syncLanes ?? new SyncLaneChooser(),
    onSync: options.onSync,
    zeroFill: preallocate ? zeroFillSizes(segmentBytesMax) : undefined,
    onFailed: options.onFailed,
  };
}

/** The zeros a new segment gets with its header, when zero fill is on. */
function initialZeros(settings: Settings): Buffer | undefined {
  return settings.zeroFill === undefined ? undefined : zeroBuffer(settings.zeroFill.leadBytes).subarray(0, settings.zeroFill.leadBytes);
}

/** A `.snap.tmp` is a snapshot write that a crash interrupted; the previous snapshot still stands. */
async function removeSnapshotTemporaries(fileSystem: LogFileSystem, dir: string, files: readonly string[], logger: Logger): Promise<void> {
  for (const file of files) await fileSystem.unlinkAsync(join(dir, file));
  if (files.length > 0) {
    await fsyncDirectory(fileSystem, dir);
    logger.warn({ files }, 'removed interrupted snapshot writes');
  }
}
